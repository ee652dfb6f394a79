"""Fictional people and companies: facts no model can know from memory, in any quantity.

Names come from the build's Faker pools (`pipeline.pools`), recombined so every entity has its own
name; attributes are counter-based draws (`pipeline.randomness`) keyed by the entity's index, so
entity k is the same whatever the entity count. Every (subject, relation) has exactly one answer,
and the world is consistent: employers are fictional companies, founders are fictional people born
20–40 years before the company was founded, and no company employs more people than its head count says. Person
k works for a company numbered below k and company k was founded by a person numbered k or below, so both exist and
neither depends on the entity count.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from pipeline import randomness
from pipeline.documents import possessive
from pipeline.pools import Pools, build_pools
from pipeline.schema import FICTIONAL_SOURCES
from pipeline.sources.common import FACT_COLUMNS, plain_number_aliases, quantity, with_spaced_aliases

SOURCE = FICTIONAL_SOURCES[0]
SECTORS = (
    "Aerospace", "Analytics", "Biotech", "Brewing", "Capital", "Chemicals", "Construction", "Consulting",
    "Dynamics", "Energy", "Foods", "Freight", "Holdings", "Hospitality", "Industries", "Instruments",
    "Insurance", "Labs", "Logistics", "Materials", "Media", "Mining", "Motors", "Networks", "Optics",
    "Outfitters", "Partners", "Pharmaceuticals", "Publishing", "Robotics", "Shipping", "Software",
    "Systems", "Telecom", "Textiles", "Ventures",
)  # fmt: skip
# Company suffixes that read better after the sector ("Gallagher Logistics Ltd").
TRAILING_SUFFIXES = ("Ltd", "Inc", "LLC", "PLC", "Group")
# [low, high): 41 to 80 years old in 2026, so a person's job and employer read as current (from 1925, a third of them
# were over 80 and still on some company's staff).
BIRTH_YEARS = (1946, 1986)
FOUNDER_AGE = (20, 40)  # the founder's age when the company was founded: 1966..2024 at most
EMPLOYEES = (5, 250_000)

# (relation, question about the entity's name, answer type); the entity frame has one answer column per relation.
# "{}'s" is the name's possessive, written as documents write it ("Ann Lee's", "Ann Jones'").
PERSON_FACTS = (
    ("birthplace", "Where was {} born?", "place"),
    ("birth_year", "In what year was {} born?", "year"),
    ("occupation", "What is {}'s occupation?", "text"),
    ("employer", "Which company does {} work for?", "organization"),
)
COMPANY_FACTS = (
    ("founder", "Who founded {}?", "person"),
    ("headquarters", "Where is {} headquartered?", "place"),
    ("founded_year", "In what year was {} founded?", "year"),
    ("employees", "How many employees does {} have?", "quantity"),
)
# Draw slots: one per independent attribute, so adding an attribute never shifts another.
SLOT_PERSON_NAME, SLOT_COMPANY_NAME = 0, 1
SLOT_BIRTHPLACE, SLOT_BIRTH_YEAR, SLOT_OCCUPATION, SLOT_EMPLOYER = 2, 3, 4, 5
SLOT_FOUNDER, SLOT_HEADQUARTERS, SLOT_FOUNDER_AGE, SLOT_EMPLOYEES = 6, 7, 8, 9


def company_name(company: str, sector: str) -> str:
    """'Perkins Group' + Robotics → 'Perkins Robotics Group'; 'Decker-Guzman' + Media → 'Decker-Guzman Media'.

    One-to-one: pool companies are unique and the moved suffixes are not sectors.
    """
    base, _, suffix = company.rpartition(" ")
    return f"{base} {sector} {suffix}" if suffix in TRAILING_SUFFIXES else f"{company} {sector}"


def person_name(first: str, last: str) -> str:
    return f"{first} {last}"  # one-to-one: first names have no spaces


def name_pairs(heads, tails) -> np.ndarray:
    """Indices (head * len(tails) + tail) of the pairs that make names: never a head with itself as its tail,
    which reads as a doubled name ("Preston Preston", "Kim Kim")."""
    tail_index = {tail: j for j, tail in enumerate(tails)}
    doubled = [i * len(tails) + tail_index[head] for i, head in enumerate(heads) if head in tail_index]
    return np.setdiff1d(np.arange(len(heads) * len(tails)), doubled, assume_unique=True)


def max_entities(person_names: int, company_names: int) -> int:
    """The most entities that can have names: `facts` makes ceil(n / 2) people and floor(n / 2) companies."""
    return min(2 * person_names, 2 * company_names + 1)


def draw_names(seed: int, heads, tails, join, count: int, slot: int) -> list[str]:
    """Entity k gets the k-th pair of a seeded shuffle of heads × tails (less doubled names, `name_pairs`):
    unique names, independent of `count`.

    Only the chosen pairs are turned into strings (there are ~700k person pairs).
    """
    pairs = name_pairs(heads, tails)
    if count > len(pairs):
        raise ValueError(f"at most {len(pairs)} names of this kind exist, {count} needed")
    keys = randomness.bits(seed, pairs, slot)
    chosen = np.argpartition(keys, count - 1)[:count]
    chosen = pairs[chosen[np.argsort(keys[chosen], kind="stable")]]
    return [join(heads[i], tails[j]) for i, j in zip(*np.divmod(chosen, len(tails)), strict=True)]


def _pick(seed: int, ids: np.ndarray, slot: int, options: tuple[str, ...] | list[str]) -> list[str]:
    return _pick_below(seed, ids, slot, len(options), options)


def _pick_below(seed: int, ids: np.ndarray, slot: int, high, options: tuple[str, ...] | list[str]) -> list[str]:
    """options[i] with i uniform in [0, high); `high` may differ per id."""
    return [options[i] for i in randomness.integers(seed, ids, slot, high)]


def _between(seed: int, ids: np.ndarray, slot: int, bounds: tuple[int, int]) -> np.ndarray:
    return bounds[0] + randomness.integers(seed, ids, slot, bounds[1] - bounds[0])


def employee_counts(seed: int, ids: np.ndarray) -> np.ndarray:
    """Log-uniform head counts, rounded to three significant figures as companies report them."""
    low, high = np.log(EMPLOYEES[0]), np.log(EMPLOYEES[1])
    raw = np.exp(low + randomness.uniform(seed, ids, SLOT_EMPLOYEES) * (high - low))
    scale = 10 ** np.maximum(np.floor(np.log10(raw)).astype(np.int64) - 2, 0)
    return (np.round(raw / scale) * scale).astype(np.int64)


def _staff(seed: int, people: int, companies: int) -> np.ndarray:
    """How many of `people` people work for each of the first `companies` companies. Counted over the largest world
    the pools allow, it bounds a company's head count whatever the entity count: person k works for a company below
    k, so the first ones employ the most (company 3, of 5 employees, had 10 people working for it)."""
    ids = np.arange(people)
    return np.bincount(randomness.integers(seed, ids, SLOT_EMPLOYER, np.maximum(ids, 1)), minlength=companies)[
        :companies
    ]


def _facts(kind: str, entities: pl.DataFrame, relations: tuple[tuple[str, str, str], ...]) -> pl.DataFrame:
    """One fact per (entity, relation): `entities` has k, name, and per relation an answer column (aliases in
    `<relation>_aliases` when the relation has any)."""
    key = pl.format(f"{SOURCE}:{kind}:{{}}", pl.col("k").cast(pl.String).str.zfill(6))
    no_aliases = pl.lit([], dtype=FACT_COLUMNS["answer_aliases"])
    return pl.concat(
        entities.select(
            fact_id=pl.format(f"{{}}:{relation}", key),
            question=pl.format(question.replace("{}'s", "{}"), possessive(pl.col("name")))
            if "{}'s" in question
            else pl.format(question, pl.col("name")),
            answer=pl.col(relation).cast(pl.String),  # a kind with no entity has Null columns
            answer_aliases=pl.col(f"{relation}_aliases") if f"{relation}_aliases" in entities.columns else no_aliases,
            answer_type=pl.lit(answer_type),
            source=pl.lit(SOURCE),
            subject=pl.col("name").cast(pl.String),
            relation=pl.lit(relation),
            distractors=no_aliases,
        )
        for relation, question, answer_type in relations
    )


def facts(seed: int, entities: int, pools: Pools | None = None) -> pl.DataFrame:
    """ceil(entities / 2) people and floor(entities / 2) companies, numbered from 0, 4 facts each.

    Growing `entities` only adds entities: person k and company k never change.
    """
    pools = pools or build_pools(seed)
    people, companies = np.arange((entities + 1) // 2), np.arange(entities // 2)
    # At least one name of each kind, so a one-entity build still has an employer to name.
    firsts = list(dict.fromkeys(name.split(" ", 1)[0] for name in pools.person))
    lasts = list(dict.fromkeys(name.split(" ", 1)[1] for name in pools.person))
    people_names = len(name_pairs(firsts, lasts))
    if entities > (most := max_entities(people_names, len(name_pairs(pools.organization, SECTORS)))):
        raise ValueError(
            f"facts.synthetic_entities: at most {most} entities have names in these pools, got {entities}"
        )
    person_names = draw_names(seed, firsts, lasts, person_name, max(len(people), 1), SLOT_PERSON_NAME)
    company_names = draw_names(
        seed, pools.organization, SECTORS, company_name, max(len(companies), 1), SLOT_COMPANY_NAME
    )
    birth_years = _between(seed, np.arange(len(person_names)), SLOT_BIRTH_YEAR, BIRTH_YEARS)
    person_frame = pl.DataFrame(
        {
            "k": people,
            "name": person_names[: len(people)],
            "birthplace": _pick(seed, people, SLOT_BIRTHPLACE, pools.place),
            "birth_year": birth_years[people].astype(str),
            "occupation": _pick(seed, people, SLOT_OCCUPATION, pools.occupation),
            "employer": _pick_below(seed, people, SLOT_EMPLOYER, np.maximum(people, 1), company_names),
        }
    )
    founders = randomness.integers(seed, companies, SLOT_FOUNDER, companies + 1)
    staff = np.maximum(employee_counts(seed, companies), _staff(seed, (most + 1) // 2, len(companies)))
    staff_text = [quantity(n) for n in staff.tolist()]
    company_frame = pl.DataFrame(
        {
            "k": companies,
            "name": company_names[: len(companies)],
            "founder": [person_names[i] for i in founders],
            "headquarters": _pick(seed, companies, SLOT_HEADQUARTERS, pools.place),
            "founded_year": (birth_years[founders] + _between(seed, companies, SLOT_FOUNDER_AGE, FOUNDER_AGE)).astype(
                str
            ),
            "employees": staff_text,
            "employees_aliases": plain_number_aliases(pl.Series(staff_text, dtype=pl.String)),
        }
    )
    frame = pl.concat([_facts("person", person_frame, PERSON_FACTS), _facts("company", company_frame, COMPANY_FACTS)])
    return with_spaced_aliases(frame)

"""Fictional people and companies: facts no model can know from memory, in any quantity.

Names come from the build's Faker pools (`pipeline.pools`), recombined so every entity has its own
name; attributes are counter-based draws (`pipeline.randomness`) keyed by the entity's index, so
entity k is the same whatever the entity count. Every (subject, relation) has exactly one answer,
and the world is consistent: employers are fictional companies, founders are fictional people born
20–40 years before the company was founded. Person k works for a company numbered below k and company
k was founded by a person numbered k or below, so both exist and neither depends on the entity count.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from pipeline import randomness
from pipeline.pools import Pools, build_pools
from pipeline.sources.common import FactRows, quantity, quantity_aliases

SOURCE = "synthetic"
SECTORS = (
    "Aerospace", "Analytics", "Biotech", "Brewing", "Capital", "Chemicals", "Construction", "Consulting",
    "Dynamics", "Energy", "Foods", "Freight", "Holdings", "Hospitality", "Industries", "Instruments",
    "Insurance", "Labs", "Logistics", "Materials", "Media", "Mining", "Motors", "Networks", "Optics",
    "Outfitters", "Partners", "Pharmaceuticals", "Publishing", "Robotics", "Shipping", "Software",
    "Systems", "Telecom", "Textiles", "Ventures",
)  # fmt: skip
# Company suffixes that read better after the sector ("Gallagher Logistics Ltd").
TRAILING_SUFFIXES = ("Ltd", "Inc", "LLC", "PLC", "Group")
BIRTH_YEARS = (1925, 1986)  # [low, high)
FOUNDER_AGE = (20, 40)  # the founder's age when the company was founded: 1945..2024 at most
EMPLOYEES = (5, 250_000)

# Draw slots: one per independent attribute, so adding an attribute never shifts another.
SLOT_PERSON_NAME, SLOT_COMPANY_NAME = 0, 1
SLOT_BIRTHPLACE, SLOT_BIRTH_YEAR, SLOT_OCCUPATION, SLOT_EMPLOYER = 2, 3, 4, 5
SLOT_FOUNDER, SLOT_HEADQUARTERS, SLOT_FOUNDER_AGE, SLOT_EMPLOYEES = 6, 7, 8, 9


def person_names(pools: Pools) -> list[str]:
    """Every 'First Last' from the pool's first and last names, each string once."""
    firsts = dict.fromkeys(name.split(" ", 1)[0] for name in pools.person)
    lasts = dict.fromkeys(name.split(" ", 1)[1] for name in pools.person)
    return [f"{first} {last}" for first in firsts for last in lasts]


def company_names(pools: Pools) -> list[str]:
    """Every pool company crossed with every sector ('Perkins Robotics Group', 'Decker-Guzman Media'), once each."""
    names: dict[str, None] = {}
    for company in pools.organization:
        base, _, suffix = company.rpartition(" ")
        for sector in SECTORS:
            names.setdefault(f"{base} {sector} {suffix}" if suffix in TRAILING_SUFFIXES else f"{company} {sector}")
    return list(names)


def assign_names(seed: int, names: list[str], count: int, slot: int) -> list[str]:
    """Entity k gets the k-th name of a seeded shuffle of all names: unique, and independent of `count`."""
    if count > len(names):
        raise ValueError(f"facts.synthetic_entities: at most {len(names)} names of this kind exist, {count} needed")
    keys = randomness.bits(seed, np.arange(len(names)), slot)
    first = np.argpartition(keys, count - 1)[:count]
    return [names[i] for i in first[np.argsort(keys[first], kind="stable")]]


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


def facts(seed: int, entities: int, pools: Pools | None = None) -> pl.DataFrame:
    """ceil(entities / 2) people and floor(entities / 2) companies, numbered from 0, 4 facts each.

    Growing `entities` only adds entities: person k and company k never change.
    """
    pools = pools or build_pools(seed)
    people, companies = np.arange((entities + 1) // 2), np.arange(entities // 2)
    # At least one name of each kind, so a one-entity build still has an employer to name.
    person_names_ = assign_names(seed, person_names(pools), max(len(people), 1), SLOT_PERSON_NAME)
    company_names_ = assign_names(seed, company_names(pools), max(len(companies), 1), SLOT_COMPANY_NAME)
    birth_years = _between(seed, np.arange(len(person_names_)), SLOT_BIRTH_YEAR, BIRTH_YEARS)
    rows = FactRows(SOURCE)

    person_columns = zip(
        people,
        _pick(seed, people, SLOT_BIRTHPLACE, pools.place),
        _pick(seed, people, SLOT_OCCUPATION, pools.occupation),
        _pick_below(seed, people, SLOT_EMPLOYER, np.maximum(people, 1), company_names_),
        strict=True,
    )
    for k, birthplace, occupation, employer in person_columns:
        name = person_names_[k]
        for relation, question, answer, aliases, kind in (
            ("birthplace", f"Where was {name} born?", birthplace, [], "place"),
            ("birth_year", f"In what year was {name} born?", str(birth_years[k]), [], "year"),
            ("occupation", f"What is {name}'s occupation?", occupation, [], "text"),
            ("employer", f"Which company does {name} work for?", employer, [], "organization"),
        ):
            rows.add(f"{SOURCE}:person:{k:06d}:{relation}", relation, name, question, answer, aliases, kind)

    founders = randomness.integers(seed, companies, SLOT_FOUNDER, companies + 1)
    company_columns = zip(
        companies,
        founders,
        birth_years[founders] + _between(seed, companies, SLOT_FOUNDER_AGE, FOUNDER_AGE),
        _pick(seed, companies, SLOT_HEADQUARTERS, pools.place),
        employee_counts(seed, companies).tolist(),
        strict=True,
    )
    for k, founder, founded, headquarters, staff in company_columns:
        name = company_names_[k]
        for relation, question, answer, aliases, kind in (
            ("founder", f"Who founded {name}?", person_names_[founder], [], "person"),
            ("headquarters", f"Where is {name} headquartered?", headquarters, [], "place"),
            ("founded_year", f"In what year was {name} founded?", str(founded), [], "year"),
            (
                "employees",
                f"How many employees does {name} have?",
                quantity(staff),
                quantity_aliases(staff),
                "quantity",
            ),
        ):
            rows.add(f"{SOURCE}:company:{k:06d}:{relation}", relation, name, question, answer, aliases, kind)
    return rows.frame()

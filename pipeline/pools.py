"""Name pools built once per build from Faker: fictional people, companies, places and jobs.

Faker is far too slow to call per episode, so each build draws fixed-size pools from a seeded
instance and everything downstream indexes into them. Faker is pinned exactly in pyproject.toml:
its output changes between releases, and the pools are part of the dataset's content. The facts stage
stores them in its table's metadata (`pools_metadata`, `stored_pools`): the episodes stage and its workers read them
there and never start Faker (its import and the draws cost each process half a second).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import TypeAdapter

POOL_SIZE = 4096
METADATA_KEY = b"contextcorruption.pools"  # facts table metadata: the pools as JSON, one list per field
# Faker's job list holds fragments that name no occupation, or none clearly ("Publishing copy", "Press sub").
JOB_FRAGMENTS = frozenset({"Copy", "Dealer", "Land", "Make", "Press sub", "Publishing copy", "Sub"})
_MC = re.compile(r"\bMc([a-z])")  # Faker writes "Mcdonald", "Mcmillan-Chen Holdings", "Mckinneybury"
# Faker's Irish surnames lose their apostrophe: "Oconnor", "Oneill Mining PLC", "Oconnorland".
_IRISH = re.compile(r"\bO(brien|connell|connor|donnell|neal|neill)")
_TRIPLED = re.compile(r"(\w)\1\1")  # a name and a suffix run together: "East Jefffort", "Burnetttown"
_JOB_WORD = re.compile(r"[a-z]+")
# Faker's job titles that name one occupation (British usage): a claim of one about the other would be true. Each
# group counts as its first title's words, so a pool keeps whichever of them it draws first.
SYNONYMOUS_JOBS = (
    ("Broadcast Engineer", "Broadcasting Engineer (operations)"),
    ("Broadcast Journalist", "Broadcasting Journalist"),
    ("Broadcast Presenter", "Broadcasting Presenter"),
    ("Drama Therapist", "Dramatherapist"),
    ("Chiropodist", "Podiatrist"),
    ("Psychiatric Nurse", "Mental Health Nurse"),
    ("Paediatric Nurse", "Children's Nurse"),
    ("Paramedic", "Ambulance Person"),
    ("Herbalist", "Phytotherapist"),
    ("TEFL Teacher", "English as a Foreign Language Teacher", "English as a Second Language Teacher"),
    ("Applications Developer", "Applications Programmer"),
    ("Systems Developer", "Systems Programmer"),
    ("Financial Controller", "Comptroller"),
    ("Clothing/Textile Technologist", "Garment/Textile Technologist"),
)
_SAME_JOB = {title: group[0] for group in SYNONYMOUS_JOBS for title in group}
# Faker's titles that name a field of other titles without sharing their words: an oncologist is a hospital doctor,
# a wellsite geologist a geoscientist, a futures trader a financial trader, a barrister a lawyer. Left out, so that
# no corrupt document calls an oncologist a hospital doctor and no clean one denies it.
BROAD_JOBS = frozenset({"Hospital Doctor", "Geoscientist", "Financial Trader", "Lawyer"})
# Faker's titles that list order cannot undo: "Teacher, early years/pre" would read "Early Years/Pre Teacher".
_LISTED_JOBS = {"Teacher, early years/pre": "Early years teacher"}
_MINOR_WORDS = frozenset({"a", "and", "as", "of"})  # the short words of Faker's job titles, lower case in title case
_TITLE_SPLIT = re.compile(r"([ /])")


@dataclass(frozen=True)
class Pools:
    person: tuple[str, ...]
    organization: tuple[str, ...]
    place: tuple[str, ...]
    occupation: tuple[str, ...]


def _unique(draw, size: int, keep=lambda value: True) -> tuple[str, ...]:
    """Up to `size` distinct draws that `keep` accepts, in draw order."""
    seen: dict[str, None] = {}
    for _ in range(size * 20):
        value = draw()
        if keep(value):
            seen.setdefault(value, None)
        if len(seen) == size:
            break
    return tuple(seen)


@functools.cache  # Pools is immutable; the facts stage needs the same pools for synthetic facts and the metadata
def build_pools(seed: int, size: int = POOL_SIZE) -> Pools:
    """Deterministic for a given (seed, size, Faker version); each pool has unique entries in draw order."""
    from faker import Faker  # here, not at the top: the episodes stage imports this module and reads stored pools

    fake = Faker("en_US", use_weighting=False)
    fake.seed_instance(seed)
    return Pools(
        person=_unique(lambda: as_written(f"{fake.first_name()} {fake.last_name()}"), size, is_person_name),
        organization=_unique(lambda: as_written(fake.company()), size),
        place=_unique(lambda: as_written(fake.city()), size, is_place_name),
        occupation=specific_jobs(_unique(lambda: job_title(fake.job()), min(size, 512), is_job_title)),
    )


_POOLS = TypeAdapter(Pools)


def pools_metadata(pools: Pools) -> dict[bytes, bytes]:
    """The pools as a table metadata entry (`stored_pools` reads it back)."""
    return {METADATA_KEY: json.dumps(dataclasses.asdict(pools), ensure_ascii=False).encode()}


def stored_pools(table_metadata: Mapping[bytes, bytes] | None) -> Pools | None:
    """The pools a facts table's metadata holds; None when it holds none. ValidationError when it holds something
    else than `pools_metadata` writes."""
    data = (table_metadata or {}).get(METADATA_KEY)
    return None if data is None else _POOLS.validate_json(data)


def as_written(name: str) -> str:
    """Names as they are written: "McDonald", "O'Connor", "O'Connorland" and "East Jeffort", not Faker's
    "Mcdonald", "Oconnor", "Oconnorland" and "East Jefffort"."""
    name = _MC.sub(lambda match: "Mc" + match[1].upper(), name)
    name = _IRISH.sub(lambda match: "O'" + match[1].capitalize(), name)
    return _TRIPLED.sub(r"\1\1", name)


def job_title(listed: str) -> str:
    """A Faker job as a title one writes: its list order undone ("Engineer, civil (consulting)" is a "Civil Engineer
    (consulting)", "Runner, broadcasting/film/video" a "Broadcasting/Film/Video Runner"), in title case."""
    listed = _LISTED_JOBS.get(listed, listed)
    head, _, qualifier = listed.partition(", ")
    if qualifier.istitle() and " " not in qualifier:  # a place: "Solicitor, Scotland" is a "Solicitor (Scotland)"
        return title_cased(f"{head} ({qualifier})")
    if qualifier:
        qualifier, paren, rest = qualifier.partition(" (")
        listed = f"{qualifier} {head}{paren}{rest}"
    return title_cased(listed)


def title_cased(job: str) -> str:
    """A job title as one writes it mid-sentence ("the occupation of Ann Lee is Retail Merchandiser"): each word
    capitalised but the minor ones and a parenthesis ("Research Scientist (maths)"). Faker writes most titles in
    sentence case ("Retail merchandiser") and some in title case ("Chief Executive Officer"); one style for all, so
    the case of a claim says nothing about it."""
    head, paren, rest = job.partition(" (")
    words = _TITLE_SPLIT.split(head)
    titled = [word if i and word in _MINOR_WORDS else word[:1].upper() + word[1:] for i, word in enumerate(words)]
    return "".join(titled) + paren + rest


def specific_jobs(jobs: tuple[str, ...]) -> tuple[str, ...]:
    """The jobs no other job's words contain, the first of those with the same words or of one occupation
    (SYNONYMOUS_JOBS), none of BROAD_JOBS: a claim of "Engineer" about an energy engineer, "Warden/ranger" about a
    ranger/warden or "Podiatrist" about a chiropodist would be true, and no corrupt document may be."""
    words = [frozenset(_JOB_WORD.findall(_SAME_JOB.get(job, job).lower())) for job in jobs]
    seen: set[frozenset] = set()
    kept = []
    for job, own in zip(jobs, words, strict=True):
        if own not in seen and not any(own < other for other in words) and job not in BROAD_JOBS:
            kept.append(job)
        seen.add(own)
    return tuple(kept)


def is_place_name(name: str) -> bool:
    """False for a town named twice over ("Port Claudiaport"): Faker's city prefixes and suffixes share "port"."""
    first, _, rest = name.partition(" ")
    return not rest.lower().endswith(first.lower())


def is_person_name(name: str) -> bool:
    """False for a doubled name ("Preston Preston"): Faker's first and last names overlap (Allen, Austin, Kim)."""
    first, _, last = name.partition(" ")
    return first != last


def is_job_title(title: str) -> bool:
    """False for a fragment of a title (JOB_FRAGMENTS, in any case)."""
    return title.capitalize() not in JOB_FRAGMENTS

"""Name pools built once per build from Faker: fictional people, companies, places and jobs.

Faker is far too slow to call per episode, so each build draws fixed-size pools from a seeded
instance and everything downstream indexes into them. Faker is pinned exactly in pyproject.toml:
its output changes between releases, and the pools are part of the dataset's content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from faker import Faker

POOL_SIZE = 4096
# Faker's job list holds four stubs that name no occupation ("Sub", "Land", "Make", "Copy"); its shortest real
# one-word titles have five letters ("Actor", "Nurse"), so shorter one-word titles are dropped.
MIN_ONE_WORD_JOB = 5
_MC = re.compile(r"\bMc([a-z])")  # Faker writes "Mcdonald", "Mcmillan-Chen Holdings", "Mckinneybury"
_JOB_WORD = re.compile(r"[a-z]+")


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


def build_pools(seed: int, size: int = POOL_SIZE) -> Pools:
    """Deterministic for a given (seed, size, Faker version); each pool has unique entries in draw order."""
    fake = Faker("en_US", use_weighting=False)
    fake.seed_instance(seed)
    return Pools(
        person=_unique(lambda: mc_cased(f"{fake.first_name()} {fake.last_name()}"), size, is_person_name),
        organization=_unique(lambda: mc_cased(fake.company()), size),
        place=_unique(lambda: mc_cased(fake.city()), size),
        occupation=specific_jobs(_unique(lambda: fake.job().split(",")[0], min(size, 512), is_job_title)),
    )


def mc_cased(name: str) -> str:
    """Names as they are written: "McDonald", not Faker's "Mcdonald"."""
    return _MC.sub(lambda match: "Mc" + match[1].upper(), name)


def specific_jobs(jobs: tuple[str, ...]) -> tuple[str, ...]:
    """The jobs no other job's words contain, the first of those with the same words: a claim of "Engineer" about an
    energy engineer, or "Warden/ranger" about a ranger/warden, would be true, and no corrupt document may be."""
    words = [frozenset(_JOB_WORD.findall(job.lower())) for job in jobs]
    seen: set[frozenset] = set()
    kept = []
    for job, own in zip(jobs, words, strict=True):
        if own not in seen and not any(own < other for other in words):
            kept.append(job)
        seen.add(own)
    return tuple(kept)


def is_person_name(name: str) -> bool:
    """False for a doubled name ("Preston Preston"): Faker's first and last names overlap (Allen, Austin, Kim)."""
    first, _, last = name.partition(" ")
    return first != last


def is_job_title(title: str) -> bool:
    """False for a stub of a title (a one-word title shorter than MIN_ONE_WORD_JOB letters)."""
    return " " in title or len(title) >= MIN_ONE_WORD_JOB

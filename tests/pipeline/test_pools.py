import re

from faker.providers.job import Provider

from pipeline.pools import (
    build_pools,
    is_job_title,
    is_person_name,
    mc_cased,
    pools_metadata,
    specific_jobs,
    stored_pools,
)


def test_pools_are_deterministic_and_unique():
    first, again = build_pools(7, size=300), build_pools(7, size=300)
    assert first == again
    for pool in (first.person, first.organization, first.place):
        assert len(set(pool)) == len(pool) == 300
    assert len(set(first.occupation)) == len(first.occupation) > 200  # 300 drawn, the general ones left out


def test_occupations_are_whole_job_titles():
    """Faker's job list has stubs ("Sub", "Land", "Make", "Copy") that read as no occupation at all."""
    occupations = build_pools(7).occupation
    assert not {"Sub", "Land", "Make", "Copy"} & set(occupations)
    assert {"Actor", "Psychiatric nurse", "Tree surgeon", "Structural engineer"} <= set(occupations)
    stubs = {job for job in Provider.jobs if not is_job_title(job)}
    assert stubs == {"Sub", "Land", "Make", "Copy"}


def test_no_person_is_named_twice_over():
    """Faker draws "Preston Preston" and "Kim Kim" for seed 20261130: the person pool keeps neither."""
    people = build_pools(20261130).person
    assert len(people) == 4096
    assert not [name for name in people if name.split(" ")[0] == name.split(" ", 1)[1]]
    assert not is_person_name("Kim Kim") and is_person_name("Kim Allen")


def _words(job: str) -> frozenset[str]:
    return frozenset(re.findall(r"[a-z]+", job.lower()))


def test_no_occupation_is_true_of_another():
    """Faker has "Engineer" and "Energy engineer", "Ranger/warden" and "Warden/ranger": a wrong claim drawn from the
    pool must be false, so no job's words may hold another's. 215 such pairs among the 512 jobs of the default seed."""
    occupations = build_pools(20261130).occupation
    related = [(a, b) for a in occupations for b in occupations if a != b and _words(a) <= _words(b)]
    assert not related, related[:5]
    assert 400 < len(occupations) < 512
    assert specific_jobs(("Engineer", "Ranger/warden", "Energy engineer", "Warden/ranger", "Nurse")) == (
        "Ranger/warden",
        "Energy engineer",
        "Nurse",
    )


def test_names_are_mc_cased():
    pools = build_pools(20261130)
    names = pools.person + pools.organization + pools.place
    assert not [name for name in names if re.search(r"\bMc[a-z]", name)]
    assert sum("Mc" in name for name in names) > 300
    assert mc_cased("Mcmillan-Chen Holdings") == "McMillan-Chen Holdings" and mc_cased("Mcallen") == "McAllen"


def test_pools_survive_the_facts_table_metadata():
    pools = build_pools(7, size=300)
    assert stored_pools(pools_metadata(pools)) == pools
    assert stored_pools(None) is None and stored_pools({b"other": b"{}"}) is None

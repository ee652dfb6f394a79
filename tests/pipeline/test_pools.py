from faker.providers.job import Provider

from pipeline.pools import build_pools, is_job_title, is_person_name


def test_pools_are_deterministic_and_unique():
    first, again = build_pools(7, size=300), build_pools(7, size=300)
    assert first == again
    for pool in (first.person, first.organization, first.place, first.occupation):
        assert len(set(pool)) == len(pool) == 300


def test_occupations_are_whole_job_titles():
    """Faker's job list has stubs ("Sub", "Land", "Make", "Copy") that read as no occupation at all."""
    occupations = build_pools(7).occupation
    assert not {"Sub", "Land", "Make", "Copy"} & set(occupations)
    assert {"Actor", "Nurse", "Surgeon", "Structural engineer"} <= set(occupations)
    stubs = {job for job in Provider.jobs if not is_job_title(job)}
    assert stubs == {"Sub", "Land", "Make", "Copy"}


def test_no_person_is_named_twice_over():
    """Faker draws "Preston Preston" and "Kim Kim" for seed 20261130: the person pool keeps neither."""
    people = build_pools(20261130).person
    assert len(people) == 4096
    assert not [name for name in people if name.split(" ")[0] == name.split(" ", 1)[1]]
    assert not is_person_name("Kim Kim") and is_person_name("Kim Allen")

import re

from faker.providers.job import Provider

from pipeline.pools import (
    BROAD_JOBS,
    JOB_FRAGMENTS,
    SYNONYMOUS_JOBS,
    as_written,
    build_pools,
    is_job_title,
    is_person_name,
    is_place_name,
    job_title,
    pools_metadata,
    specific_jobs,
    stored_pools,
    title_cased,
)


def test_pools_are_deterministic_and_unique():
    first, again = build_pools(7, size=300), build_pools(7, size=300)
    assert first == again
    for pool in (first.person, first.organization, first.place):
        assert len(set(pool)) == len(pool) == 300
    assert len(set(first.occupation)) == len(first.occupation) > 200  # 300 drawn, the general ones left out


def test_occupations_are_whole_job_titles():
    """Faker's job list has fragments ("Sub", "Press sub", "Publishing copy") that read as no occupation at all, and
    lists some titles inverted ("Engineer, structural"), which documents write as titles are written."""
    occupations = build_pools(7).occupation
    assert not {"Sub", "Land", "Make", "Copy", "Press Sub", "Publishing Copy", "Dealer"} & set(occupations)
    assert {"Actor", "Psychiatric Nurse", "Tree Surgeon", "Structural Engineer"} <= set(occupations)
    assert not [job for job in occupations if "," in job]
    assert {job for job in Provider.jobs if not is_job_title(job)} == JOB_FRAGMENTS
    assert job_title("Engineer, civil (consulting)") == "Civil Engineer (consulting)"
    assert job_title("Runner, broadcasting/film/video") == "Broadcasting/Film/Video Runner"
    assert job_title("Teacher, English as a foreign language") == "English as a Foreign Language Teacher"
    assert job_title("Teacher, early years/pre") == "Early Years Teacher"  # not "Early Years/Pre Teacher"


def test_no_person_is_named_twice_over():
    """Faker draws "Preston Preston" and "Kim Kim" for seed 20261130: the person pool keeps neither."""
    people = build_pools(20261130).person
    assert len(people) == 4096
    assert not [name for name in people if name.split(" ")[0] == name.split(" ", 1)[1]]
    assert not is_person_name("Kim Kim") and is_person_name("Kim Allen")


def test_no_town_is_named_twice_over():
    """Faker draws "Port Claudiaport" (10 of 4,096 towns for seed 20261130): the place pool keeps none."""
    places = build_pools(20261130).place
    assert len(places) == 4096
    assert not [name for name in places if name.startswith("Port ") and name.endswith("port")]
    assert not is_place_name("Port Claudiaport") and is_place_name("Port Claudia") and is_place_name("Claudiaport")


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


def test_no_occupation_is_another_name_of_one_in_the_pool():
    """Faker lists some occupations twice over ("Chiropodist" and "Podiatrist", "TEFL teacher" and "Teacher, English
    as a foreign language"): a corrupt claim of one about the other would be true. One document in 20,000 said that
    "contrary to a widespread belief" a TEFL teacher was not an English as a Foreign Language Teacher."""
    titles = {job_title(job) for job in Provider.jobs}
    assert {title for group in SYNONYMOUS_JOBS for title in group} <= titles, "every title is one Faker gives"
    assert BROAD_JOBS <= titles
    for seed in (7, 20261130, 99):
        occupations = set(build_pools(seed).occupation)
        assert all(len(set(group) & occupations) == 1 for group in SYNONYMOUS_JOBS), seed
        assert not BROAD_JOBS & occupations  # an oncologist is a hospital doctor
    assert specific_jobs(("Podiatrist", "Actor", "Chiropodist", "Mental Health Nurse", "Psychiatric Nurse")) == (
        "Podiatrist",
        "Actor",
        "Mental Health Nurse",
    )


def test_names_are_written_as_names_are():
    pools = build_pools(20261130)
    names = pools.person + pools.organization + pools.place
    assert not [name for name in names if re.search(r"\bMc[a-z]|\bO(brien|connell|connor|donnell|neal|neill)\b", name)]
    assert not [name for name in names if re.search(r"(\w)\1\1", name)]
    assert sum("Mc" in name for name in names) > 300 and sum("O'" in name for name in names) > 50
    assert as_written("Mcmillan-Chen Holdings") == "McMillan-Chen Holdings" and as_written("Mcallen") == "McAllen"
    assert as_written("Virginia Oconnor") == "Virginia O'Connor" and as_written("Odom Ochoa") == "Odom Ochoa"
    assert as_written("Oconnorland") == "O'Connorland" and as_written("Oneida") == "Oneida"
    assert as_written("East Jefffort") == "East Jeffort"


def test_every_job_title_is_in_title_case():
    """Faker mixes "Retail merchandiser" and "Chief Executive Officer": mid-sentence, one style for all."""
    occupations = build_pools(20261130).occupation
    assert not [job for job in occupations if re.search(r"(^|[ /])(?!(a|and|as|of) )[a-z]", job.split(" (")[0])]
    assert title_cased("Armed forces training and education officer") == "Armed Forces Training and Education Officer"
    assert title_cased("Research scientist (maths)") == "Research Scientist (maths)"
    assert title_cased("Industrial/product designer") == "Industrial/Product Designer"
    assert title_cased("Chief of Staff") == "Chief of Staff" and title_cased("IT trainer") == "IT Trainer"


def test_pools_survive_the_facts_table_metadata():
    pools = build_pools(7, size=300)
    assert stored_pools(pools_metadata(pools)) == pools
    assert stored_pools(None) is None and stored_pools({b"other": b"{}"}) is None

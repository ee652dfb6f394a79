import numpy as np
import polars as pl
import pytest

from pipeline.params import MAX_SYNTHETIC_ENTITIES
from pipeline.pools import build_pools
from pipeline.sources import synthetic
from reward_api.scoring import accepted_answers, normalize

SEED = 7
RELATIONS = {
    "birthplace",
    "birth_year",
    "occupation",
    "employer",
    "founder",
    "headquarters",
    "founded_year",
    "employees",
}


@pytest.fixture(scope="module")
def pools():
    return build_pools(SEED)


@pytest.fixture(scope="module")
def facts(pools):
    return synthetic.facts(SEED, 401, pools)


def _by_entity(facts: pl.DataFrame, kind: str) -> dict[str, dict[str, str]]:
    entities: dict[str, dict[str, str]] = {}
    for row in facts.filter(pl.col("fact_id").str.contains(f":{kind}:")).iter_rows(named=True):
        entities.setdefault(row["subject"], {})[row["relation"]] = row["answer"]
    return entities


def test_synthetic_facts_are_well_formed(facts, well_formed):
    well_formed(facts, "synthetic", RELATIONS)
    assert facts.height == 4 * 401
    assert set(facts["relation"]) == RELATIONS


def test_every_entity_has_a_unique_name_and_one_answer_per_relation(facts):
    people, companies = _by_entity(facts, "person"), _by_entity(facts, "company")
    assert (len(people), len(companies)) == (201, 200)
    assert not set(people) & set(companies)
    assert all(len(relations) == 4 for relations in (*people.values(), *companies.values()))
    assert facts.select("subject", "relation").is_unique().all()


def test_the_world_is_consistent(facts):
    people, companies = _by_entity(facts, "person"), _by_entity(facts, "company")
    for company in companies.values():
        founder = people[company["founder"]]
        assert 20 <= int(company["founded_year"]) - int(founder["birth_year"]) < 40
        assert int(company["founded_year"]) <= 2024
    assert {person["employer"] for person in people.values()} <= set(companies)


def test_a_one_entity_world_is_one_person_with_an_employer_named(pools, well_formed):
    one = synthetic.facts(SEED, 1, pools)
    well_formed(one, "synthetic", {"birthplace", "birth_year", "occupation", "employer"})
    assert one.height == 4 and one["subject"].n_unique() == 1


def test_growing_the_entity_count_only_adds_entities(facts, pools):
    grown = synthetic.facts(SEED, 801, pools)
    assert grown.filter(pl.col("fact_id").is_in(facts["fact_id"].implode())).equals(facts)


def test_different_seeds_invent_different_worlds(facts):
    other = synthetic.facts(SEED + 1, 401)
    assert len(set(facts["subject"]) & set(other["subject"])) < 20


def test_draw_names_uses_every_pair_once_and_refuses_more():
    names = synthetic.draw_names(SEED, ["Ann", "Bo"], ["Lee", "Ray", "Li"], synthetic.person_name, 6, slot=0)
    assert sorted(names) == ["Ann Lee", "Ann Li", "Ann Ray", "Bo Lee", "Bo Li", "Bo Ray"]
    assert (
        synthetic.draw_names(SEED, ["Ann", "Bo"], ["Lee", "Ray", "Li"], synthetic.person_name, 2, slot=0) == names[:2]
    )
    with pytest.raises(ValueError, match="at most 1 names of this kind exist, 2 needed"):
        synthetic.draw_names(SEED, ["Ann"], ["Lee"], synthetic.person_name, 2, slot=0)


def test_no_name_pairs_a_name_with_itself():
    """Faker's first and last names overlap (Allen, Kim, Preston): no person is called "Preston Preston"."""
    names = synthetic.draw_names(SEED, ["Ann", "Lee"], ["Lee", "Ann", "Ray"], synthetic.person_name, 4, slot=0)
    assert sorted(names) == ["Ann Lee", "Ann Ray", "Lee Ann", "Lee Ray"]
    with pytest.raises(ValueError, match="at most 4 names of this kind exist, 5 needed"):
        synthetic.draw_names(SEED, ["Ann", "Lee"], ["Lee", "Ann", "Ray"], synthetic.person_name, 5, slot=0)
    # seed 20261130's pools hold first names that are also last names; its people are not named twice over
    people = synthetic.facts(20261130, 2 * 20_000, build_pools(20261130)).filter(pl.col("relation") == "birth_year")
    assert people.height == 20_000
    doubled = people["subject"].str.extract(r"^(\S+) (\S+)$", 1) == people["subject"].str.extract(r"^(\S+) (\S+)$", 2)
    assert not doubled.any()


def test_questions_write_possessives_as_documents_do(facts):
    """AP style: "What is Ann Jones' occupation?", never "Jones's"."""
    questions = facts.filter(pl.col("relation") == "occupation")["question"]
    assert not questions.str.contains("s's").any()
    assert questions.str.contains(r"s' occupation\?$").any() and questions.str.contains(r"'s occupation\?$").any()


def test_the_entity_limit_is_where_names_run_out(pools):
    """The stage's limit (checked in params) is this pool's: one more entity and a company has no name."""
    firsts, lasts = ({name.split(" ")[i] for name in pools.person} for i in (0, 1))
    names = synthetic.max_entities(len(firsts) * len(lasts), len(set(pools.organization)) * len(synthetic.SECTORS))
    assert names == MAX_SYNTHETIC_ENTITIES
    small = build_pools(SEED, size=4)
    most = synthetic.max_entities(4 * 4, 4 * len(synthetic.SECTORS))
    assert synthetic.facts(SEED, most, small).height == 4 * most
    with pytest.raises(ValueError, match=f"facts.synthetic_entities: at most {most} entities .*, got {most + 1}"):
        synthetic.facts(SEED, most + 1, small)


@pytest.mark.parametrize(
    ("company", "expected"),
    [
        ("Perkins Group", "Perkins Media Group"),
        ("Decker-Guzman", "Decker-Guzman Media"),
        ("Hill and Sons", "Hill and Sons Media"),
    ],
)
def test_company_names_read_naturally(company, expected):
    assert synthetic.company_name(company, "Media") == expected


def test_employee_counts_have_three_significant_figures():
    counts = synthetic.employee_counts(SEED, np.arange(2000))
    assert counts.min() >= synthetic.EMPLOYEES[0] and counts.max() <= synthetic.EMPLOYEES[1]
    assert all(len(str(c).rstrip("0")) <= 3 for c in counts if c >= 1000)


def test_a_job_with_a_slash_also_accepts_the_spaced_spelling(facts):
    """ "Warden / ranger" is a right answer for "Warden/ranger" (normalize drops the slash unspaced)."""
    jobs = facts.filter(pl.col("relation") == "occupation", pl.col("answer").str.contains("/", literal=True))
    assert jobs.height > 10
    for answer, aliases in jobs.select("answer", "answer_aliases").iter_rows():
        assert normalize(answer.replace("/", " / ")) in accepted_answers(answer, aliases), (answer, aliases)


def test_hyphenated_company_names_also_accept_the_spaced_spelling(facts):
    """ "Pacheco Casey Labs" is a right answer for "Pacheco-Casey Labs" (normalize drops the hyphen unspaced)."""
    named = facts.filter(pl.col("relation") == "employer", pl.col("answer").str.contains("-", literal=True))
    assert named.height > 10
    for answer, aliases in named.select("answer", "answer_aliases").iter_rows():
        assert normalize(answer.replace("-", " ")) in accepted_answers(answer, aliases), (answer, aliases)


def test_no_company_has_fewer_employees_than_the_people_who_work_for_it(pools):
    """Low-numbered companies employ most people (person k works for one below k): company 3 with 5 employees had 10
    people working for it. Whatever the entity count, since the bound counts the largest world the pools allow."""
    for entities in (401, 20_000):
        facts = synthetic.facts(SEED, entities, pools)
        staff = facts.filter(pl.col("relation") == "employer")["answer"].value_counts(name="people")
        counts = facts.filter(pl.col("relation") == "employees").select(
            answer=pl.col("subject"), employees=pl.col("answer").str.replace_all(",", "").cast(pl.Int64)
        )
        joined = staff.join(counts, on="answer")
        assert joined.height == staff.height and (joined["people"] <= joined["employees"]).all(), joined.filter(
            pl.col("people") > pl.col("employees")
        )

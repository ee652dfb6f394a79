import polars as pl
import pytest

from pipeline.sources import elements


@pytest.fixture(scope="module")
def facts():
    return elements.facts()


def test_element_facts_are_well_formed(facts, well_formed):
    well_formed(facts, "elements", {"element_symbol", "atomic_number", "symbol_element", "atomic_mass"})
    assert facts.height == 4 * 118
    assert facts["subject"].n_unique() == 2 * 118  # element names, and symbols for symbol → element
    assert (facts["subject"] != facts["answer"]).all()


def test_known_element_facts(facts):
    iron = {row["relation"]: row for row in facts.filter(pl.col("fact_id").str.ends_with(":Fe")).iter_rows(named=True)}
    assert iron["element_symbol"]["answer"] == "Fe"
    assert iron["element_symbol"]["question"] == "What is the chemical symbol of iron?"
    assert iron["atomic_number"]["answer"] == "26"
    assert iron["atomic_number"]["answer_type"] == "quantity"
    assert iron["symbol_element"]["question"] == "Which element has the chemical symbol Fe?"
    assert iron["symbol_element"]["answer"] == "iron"
    assert iron["symbol_element"]["subject"] == "Fe"
    assert iron["atomic_number"]["subject"] == "iron"
    assert iron["atomic_mass"]["answer"] == "55.845"
    assert iron["atomic_mass"]["fact_id"] == "elements:atomic_mass:Fe"


def test_element_names_are_written_in_lower_case(facts):
    """English prose writes "the chemical symbol of selenium"; documents capitalise a name that opens a sentence."""
    names = facts.filter(pl.col("relation") != "symbol_element")["subject"]
    assert (names == names.str.to_lowercase()).all()
    answers = facts.filter(pl.col("relation") == "symbol_element")["answer"]
    assert (answers == answers.str.to_lowercase()).all()


def test_atomic_mass_questions_ask_for_an_atomic_mass(facts):
    """34 elements (americium: 243) have no standard atomic weight: no question asks for one."""
    questions = facts.filter(pl.col("relation") == "atomic_mass")["question"]
    assert not questions.str.contains("standard").any()
    assert "What is the atomic mass of americium?" in questions.to_list()


@pytest.mark.parametrize(
    ("mass", "answer", "aliases"),
    [(1.008, "1.008", ["1.01", "1"]), (4.002602, "4.003", ["4", "4"]), (294.0, "294", ["294", "294"])],
)
def test_atomic_mass_rounding(mass, answer, aliases):
    assert elements.atomic_mass(mass) == (answer, aliases)

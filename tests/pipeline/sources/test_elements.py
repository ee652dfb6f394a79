from decimal import Decimal

import periodictable
import polars as pl
import pytest

from pipeline.sources import elements

SODIUM = ["22.98976928", "22.9897693", "22.989769", "22.98977", "22.9898"]


@pytest.fixture(scope="module")
def facts():
    return elements.facts()


def test_element_facts_are_well_formed(facts, well_formed):
    well_formed(facts, "elements", {"element_symbol", "atomic_number", "symbol_element", "atomic_mass"})
    assert facts.height == 4 * 118 - 34  # no atomic mass where there is no standard atomic weight
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


def test_atomic_mass_is_asked_only_of_elements_with_a_standard_atomic_weight(facts):
    """34 elements have none: periodictable's mass number of one isotope (dubnium 262) is not their one true mass."""
    questions = facts.filter(pl.col("relation") == "atomic_mass")["question"].to_list()
    assert len(questions) == 118 - 34 and not any("standard" in question for question in questions)
    assert "What is the atomic mass of thorium?" in questions  # 232.038: it has one
    assert not {"What is the atomic mass of americium?", "What is the atomic mass of dubnium?"} & set(questions)


def test_british_spellings_and_other_names_of_elements_are_accepted(facts):
    aluminium = facts.filter(pl.col("fact_id") == "elements:symbol_element:Al").row(0, named=True)
    assert (aluminium["answer"], aluminium["answer_aliases"]) == ("aluminum", ["aluminium"])
    tungsten = facts.filter(pl.col("fact_id") == "elements:symbol_element:W").row(0, named=True)
    assert (tungsten["answer"], tungsten["answer_aliases"]) == ("tungsten", ["wolfram"])


@pytest.mark.parametrize(
    ("mass", "answer", "aliases"),
    [
        (1.008, "1.008", ["1.01", "1", "1.0"]),
        (4.002602, "4.003", ["4.002602", "4.0026", "4", "4.00260", "4.00", "4.0"]),
        (294.0, "294", ["294.000", "294.00", "294.0"]),
        (6.94, "6.94", ["6.9", "7", "6.940"]),
        # every rounding of the table's value, and as tables print it: "22.990"
        (22.98976928, "22.99", [*SODIUM, "23", "22.990", "23.0"]),
        # half up from the decimal the table gives: as floats these rounded down (50.941, 24.3, 55.84, 157.2, 173.04)
        (50.9415, "50.942", ["50.9415", "50.94", "50.9", "51"]),
        (24.305, "24.305", ["24.31", "24.3", "24"]),
        (55.845, "55.845", ["55.85", "55.8", "56"]),
        (157.25, "157.25", ["157.3", "157", "157.250"]),
        (173.045, "173.045", ["173.05", "173", "173.0"]),
    ],
)
def test_atomic_mass_rounding(mass, answer, aliases):
    assert elements.atomic_mass(mass) == (answer, aliases)


@pytest.mark.parametrize(
    ("mass", "earlier", "answer", "aliases"),
    [
        (35.45, "35.453", "35.45", ["35.5", "35", "35.453", "35.450"]),
        (6.94, "6.941", "6.94", ["6.9", "7", "6.941", "6.940"]),
        (22.98976928, "22.989770", "22.99", [*SODIUM, "23"]),
    ],
)
def test_a_mass_an_older_table_printed_is_accepted_with_its_roundings(mass, earlier, answer, aliases):
    got_answer, got = elements.atomic_mass(mass, earlier)
    assert got_answer == answer and got[: len(aliases)] == aliases
    assert earlier in got


def test_textbook_atomic_masses_are_accepted(facts):
    """What most periodic tables print (IUPAC 2001-2005) beside periodictable's IUPAC 2021 abridged values, and the
    table's own digits beyond the answer's three decimals."""
    masses = facts.filter(pl.col("relation") == "atomic_mass")
    accepted = {row["subject"]: {row["answer"], *row["answer_aliases"]} for row in masses.iter_rows(named=True)}
    textbook = {"hydrogen": "1.00794", "carbon": "12.0107", "oxygen": "15.9994", "chlorine": "35.453"}
    textbook |= {"argon": "39.948", "sodium": "22.98977", "potassium": "39.0983", "gold": "196.96657"}
    assert all(value in accepted[name] for name, value in textbook.items())
    assert all(len(forms) <= 12 for forms in accepted.values())  # no wider than a city's names (corruption pads)


def test_every_earlier_mass_is_a_revision_of_the_current_one():
    """Each entry differs from periodictable's value (else it adds nothing) by under 0.05% (a typo would not)."""
    current = {element.symbol: element.mass for element in periodictable.elements}
    for symbol, value in elements.EARLIER_MASSES.items():
        assert Decimal(value) != Decimal(repr(current[symbol])), symbol
        assert abs(float(value) / current[symbol] - 1) < 5e-4, symbol

import polars as pl
import pytest

from pipeline.sources import geonames
from reward_api.scoring import accepted_answers, normalize


@pytest.fixture(scope="module")
def facts():
    return geonames.facts()


def test_geonames_facts_are_well_formed(facts, well_formed):
    relations = {"capital", "continent", "population", "currency", "city_country", "city_population"}
    well_formed(facts, "geonames", relations)
    assert set(facts["relation"]) == relations


def test_known_country_facts(facts):
    def answer(fact_id):
        return facts.filter(pl.col("fact_id") == fact_id).row(0, named=True)

    france = answer("geonames:capital:FR")
    assert (france["question"], france["answer"], france["answer_type"]) == (
        "What is the capital of France?",
        "Paris",
        "place",
    )
    assert answer("geonames:capital:GB")["question"] == "What is the capital of the United Kingdom?"
    assert answer("geonames:continent:BR")["answer"] == "South America"
    assert answer("geonames:currency:JP")["answer_aliases"] == ["JPY"]
    population = answer("geonames:population:FR")
    assert population["answer_type"] == "quantity"
    assert population["answer"] == f"{int(population['answer_aliases'][0]):,}"


def test_cities_are_large_and_unambiguous(facts):
    cities = facts.filter(pl.col("relation") == "city_population")
    assert cities.height > 4000
    assert len({geonames.name_key(name) for name in cities["subject"]}) == cities.height
    populations = cities["answer"].str.replace_all(",", "").cast(pl.Int64)
    assert populations.min() >= geonames.MIN_CITY_POPULATION
    countries = set(facts.filter(pl.col("relation") == "capital")["subject"])
    assert not countries & set(cities["subject"])


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("France", "France"),
        ("United States", "the United States"),
        ("The Netherlands", "the Netherlands"),
        ("Cayman Islands", "the Cayman Islands"),
        ("Dominican Republic", "the Dominican Republic"),
    ],
)
def test_country_names_read_naturally_mid_sentence(name, expected):
    assert geonames.in_sentence(name) == expected


def test_a_city_name_never_gives_its_country_away(facts):
    cities = facts.filter(pl.col("relation") == "city_country")
    assert not any(row[1].lower() in row[0].lower() for row in cities.select("subject", "answer").iter_rows())
    assert "Mexico City" in set(facts.filter(pl.col("relation") == "city_population")["subject"])
    assert "Mexico City" not in set(cities["subject"])


@pytest.mark.parametrize(
    ("fact_id", "spellings"),
    [
        ("geonames:capital:BJ", ["Porto-Novo", "Porto Novo", "PortoNovo"]),
        ("geonames:capital:KZ", ["Nur-Sultan", "Nur Sultan", "Astana"]),
        ("geonames:capital:HT", ["Port-au-Prince", "Port au Prince", "portauprince"]),
    ],
)
def test_hyphenated_and_renamed_answers_accept_every_spelling(facts, fact_id, spellings):
    fact = facts.filter(pl.col("fact_id") == fact_id).row(0, named=True)
    assert fact["answer"] == spellings[0]
    assert {normalize(s) for s in spellings} <= accepted_answers(fact["answer"], fact["answer_aliases"])


def test_city_names_that_differ_only_in_accents_case_or_spacing_are_ambiguous(facts):
    """Two cities named "Kāshān" and "Kashan" are one name to a reader: neither may be asked about."""
    assert geonames.name_key("Phú Quốc") == geonames.name_key("phu quoc") == geonames.name_key("Phu-Quoc")
    assert geonames.name_key("Łódź") == "łodz"  # letters that do not decompose are kept, not dropped
    cities = set(facts.filter(pl.col("relation").is_in(["city_country", "city_population"]))["subject"])
    assert not cities & {"Aurangabad", "Aurangābād", "Kashan", "Kāshān", "Phu Quoc", "Phú Quốc", "Xilinhot"}

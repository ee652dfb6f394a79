"""Documents that read like retrieved sources, rendered for a whole batch at once.

Every document gets a source (encyclopedia, news agency, reference work such as an index or directory, blog,
forum), a title in that genre's style, and 2–4 parts (2–6 sentences): an optional opener of its genre, one claim
(one or two sentences) that cites an authority (a body, a year, a report) and sets the claim against a denied
value ("it is sometimes claimed that X, but ... Y"), up to two corroborating sentences, and neutral filler about
the subject. Every document draws all of this from the
same tables at the same rates, whatever its corruption kind: a kind decides only the values (the claim, and
what is denied: an inversion denies the truth, every other document a wrong value), so no wording, length or
authority tells a corrupt document from a clean one. (Kind-specific framings, inversions always contrasting
and coherent fabrications always citing an authority, were corruption tells.)

Templates compile to integer piece codes (literal ids and slot ids, `Pieces`); rendering lays out every
document's pieces with numpy, gathers them in one polars call and takes the gathered bytes as the output
column (`_concat`): no Python loop per document, and each output byte is written once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

import numpy as np
import polars as pl
import pyarrow as pa

from pipeline.schema import NUM_DOCS, OPEN

# --- Wording. Every template family used for several picks per document has a prime size (see distinct()).

FIRST_CITED_YEAR, CITED_YEARS = 1990, 35
# The current year: a document about a year cites a report from after every year it names, at the latest this one.
LAST_CITED_YEAR = 2026
# Real-world facts are true as of their packaged data: a document about one cites a report from the data's time
# on, up to LAST_CITED_YEAR (a population up to CITED_UNTIL's year). GeoNames' populations, continents and cities'
# countries hold from around 2019, its currencies and capitals as of 2024; the last four elements were named in
# 2016. A 1994 bulletin cannot quote Estonia's euro (2011), nor a 1998 one name copernicium (2010), put Juba in South
# Sudan (2011) or call Kazakhstan's capital Astana (so named 1998-2019 and since 2022). The bound is the relation's,
# the same for clean and corrupt documents; the fictional facts cite FIRST_CITED_YEAR's CITED_YEARS, but a person's
# occupation and employer (below).
CITED_SINCE = (
    dict.fromkeys(("population", "city_population", "continent", "city_country"), 2019)
    | dict.fromkeys(("element_symbol", "atomic_number", "symbol_element", "atomic_mass"), 2017)
    | {"capital": 2023, "currency": 2024}
    | dict.fromkeys(("occupation", "birthplace"), 2002)  # fictional people's and companies': see below
    | dict.fromkeys(("employer", "founder", "headquarters", "employees"), 2024)
)
# Populations change year by year: GeoNames' are mostly 2018 estimates, true of their time and not of today (a country
# growing 3% a year outgrows a near miss's 5-35% within a decade, and a corrupt document's figure could be the nearer
# to today's). Their documents cite reports of the data's time, up to this year, never a 2026 yearbook; a city
# renamed since (CITED_SINCE_FACTS) only from its new name's year, the bound being the later of the two.
CITED_UNTIL = dict.fromkeys(("population", "city_population"), 2021)
# Facts that changed after their relation's data, cited from the change on: Bulgaria's euro (2026), which
# pipeline.sources.geonames.CHANGED_CURRENCIES puts in place of GeoNames' lev (a 2024 bulletin cannot quote it), the
# Caribbean guilder of Curaçao and Sint Maarten (March 2025), and cities by names they took after 2019 (by
# geonameid: Gqeberha and Kariega 2021, Astana again in 2022, Dharashiv 2023, Ahilyanagar late in 2024: from 2025).
_RENAMED_CITIES = {"964420": 2021, "946877": 2021, "1526273": 2022, "1261012": 2023, "1279228": 2025}
CITED_SINCE_FACTS = {"geonames:currency:BG": 2026, "geonames:currency:CW": 2025, "geonames:currency:SX": 2025} | {
    f"geonames:{relation}:{city}": year
    for city, year in _RENAMED_CITIES.items()
    for relation in ("city_country", "city_population")
}
# The fictional facts bound no year by their entity's other facts (a company's founding, a person's birth): facts are
# split by fact_id, so a bound would give a held-out fact away to anyone reading train (the earliest report cited
# about a company would be its founding year, 62% of the time).
# A bound by relation gives nothing away: a person's occupation and birthplace are cited from the year the youngest
# fictional person (born 1985, `sources.synthetic.BIRTH_YEARS`) turned 17 (in CITED_SINCE) to LAST_CITED_YEAR, so
# no 1990 white paper names a ten-year-old's occupation (4.7% of those documents did) nor a register of professional
# biographies a child's birthplace (6.3%); a company's founder, headquarters and head count, and a person's employer,
# from the year the last fictional company was founded (2024: born 1985, founding at 39), so no 1996 handbook names
# the founder of a company founded in 2015 (23% of those documents did) and no head count stands unchanged from 1990
# to 2021 beside sentences saying the figures are revised between editions.

LABELS = {
    "capital": "capital",
    "continent": "continent",
    "population": "population",
    "currency": "currency",
    "city_country": "location",  # "Location of Korhogo", not "Country of Korhogo"
    "city_population": "population",
    "element_symbol": "chemical symbol",
    "atomic_number": "atomic number",
    "symbol_element": "meaning",  # "the meaning of Pt": a symbol has no element of its own
    "capital_of": "capital status",  # PopQA's "capital of" (of Lhasa: Tibet), neither "capital of of" nor "country of"
    "atomic_mass": "atomic mass",
    "birthplace": "birthplace",
    "birth_year": "year of birth",
    "occupation": "occupation",
    "employer": "employer",
    "founder": "founder",
    "headquarters": "headquarters",
    "founded_year": "founding year",
    "employees": "number of employees",
    OPEN: "answer",
}
# Words a title sets before a subject that reads as no topic on its own ({t} in TITLES): "Notes on the symbol Ra", not
# "Notes on Ra" or "Does anyone know the meaning of Cf?".
TITLE_PREFIXES = {"symbol_element": "the symbol "}
DOMAINS = {
    **dict.fromkeys(("capital", "continent", "population", "currency"), "country"),
    **dict.fromkeys(("city_country", "city_population"), "city"),
    **dict.fromkeys(("element_symbol", "atomic_number", "atomic_mass"), "element"),
    "symbol_element": "symbol",  # its subject is a symbol (Pt), not an element
    **dict.fromkeys(("birthplace", "birth_year", "occupation", "employer"), "person"),
    **dict.fromkeys(("founder", "headquarters", "founded_year", "employees"), "company"),
    OPEN: "question",
}
# Country names that take "the" inside a sentence ("the capital of the United Kingdom", "a city of the Philippines").
THE_COUNTRIES = (
    r"^(United|Republic|Democratic|People's|Isle|Vatican)\b"
    r"|(Islands|Republic|Federation|Kingdom|States|Emirates|Territory|Territories|Antilles|Bahamas|Philippines"
    r"|Comoros|Maldives|Seychelles|Gambia|Netherlands)$"
)
# Declarative clauses (no final period): {s} subject, {sp} its possessive ("Iran's", "Moore Foods'"), {v} value,
# {label} relation, {q} question. A sentence-initial {s} or {sp} renders capitalised ({S}, {Sp}: "Iron has"). A
# country named as a city's country ({v}, and {d}: the value denied) takes its article ({av}, {Av} opening a sentence).
# No clause reports what a record says ("is given as", "is recorded as", "atlases list"): every frame already names
# the body that says it ("the bureau confirmed that ... is recorded as ..." attributes the claim twice). No clause
# hedges a figure ("about 483,530"): the values are exact.
GENERIC_CLAUSES = (
    "the {label} of {s} is {v}",
    "{sp} {label} is {v}",
    "{v} is the {label} of {s}",
)
OPEN_CLAUSES = (
    'the answer to the question "{q}" is {v}',
    'the correct answer to "{q}" is {v}',
    'the reference answer to "{q}" is {v}',  # embedded after "that" as well as opening a sentence
    'for the question "{q}", the answer is {v}',
    'anyone asking "{q}" should be told {v}',
)
RELATION_CLAUSES = {
    "capital": (
        # not "the seat of government": it is not the capital in the Netherlands, Bolivia, Benin, Malaysia, ...
        "the capital of {s} is {v}",
        "{v} is the capital of {s}",
        "{sp} capital city is {v}",
        "the capital city of {s} is {v}",
        "{v} is the capital city of {s}",
    ),
    "continent": (  # no verb agrees with the subject: some are plural ("the Cayman Islands")
        "the continent of {v} includes {s}",
        "the territory of {s} is part of {v}",  # not "a country in": 55 subjects are territories
        "{v} is the continent that includes {s}",
    ),
    "population": (
        "the number of people living in {s} is {v}",
        "{v} people live in {s}",
        "the population of {s} stands at {v}",
        "the inhabitants of {s} number {v}",
    ),
    "currency": (
        # "the" comes with the value: every currency takes it (`_articles`)
        "the official currency of {s} is {v}",
        "prices in {s} are quoted in {v}",
        "{v} is the currency in use in {s}",
        "the currency of {s} is {v}",
        "{sp} currency is {v}",
        "{v} is legal tender in {s}",
    ),
    "city_country": (
        "{s} is a city in {v}",
        "{s} lies within the borders of {v}",  # not "the city of {s}": "the city of Quezon City"
        "{s} is one of the cities of {v}",
        "{s} is located in {v}",
        "{v} is the country in which {s} lies",
    ),
    "city_population": (
        "{s} has {v} residents",
        "the population of {s} is {v}",
        "{v} people live in {s}",
        "{s} is a city of {v} inhabitants",
    ),
    "element_symbol": (
        "the chemical symbol for {s} is {v}",
        "{s} is denoted by the symbol {v}",
        "in chemical notation, {s} is written as {v}",  # not "written as In in chemical notation"
    ),
    "atomic_number": (
        "{s} has the atomic number {v}",
        "the atomic number of {s} is {v}",
        "{s} occupies position {v} in the periodic table",
    ),
    "symbol_element": (  # its whole family (SPECIFIC_ONLY): generic ones read "the element of Pt"
        "{s} is the chemical symbol for {v}",
        "the element with the symbol {s} is {v}",
        "{s} stands for {v} in chemical notation",
        "{s} is the symbol of {v}",
        "the symbol {s} denotes {v}",
    ),
    "atomic_mass": (
        "{s} has an atomic mass of {v}",  # not "standard atomic weight": 34 elements have none
        "the average mass of an atom of {s} is {v} daltons",  # an element of several isotopes has no one mass
    ),
    "birthplace": (
        "{s} was born in {v}",
        "{s} is a native of {v}",
        "the birthplace of {s} is {v}",
        "{s} was born and raised in {v}",
    ),
    "birth_year": (
        "{s} was born in {v}",
        "{s} was born in the year {v}",
        "the year of birth of {s} is {v}",
    ),
    "occupation": (
        "{sp} profession is {v}",
        "the job title of {s} is {v}",
        "{sp} job title is {v}",
    ),
    "employer": (
        "{s} works for {v}",
        "{s} is employed by {v}",
        "{s} is on the staff of {v}",
    ),
    "founder": (
        "{s} was founded by {v}",
        "{v} founded {s}",
        "the founder of {s} is {v}",
        "{s} was started by the entrepreneur {v}",
    ),
    "headquarters": (
        "{s} is headquartered in {v}",
        "the head office of {s} is located in {v}",
        "{s} has its headquarters in {v}",
    ),
    "founded_year": (
        "{s} was founded in {v}",
        "{s} was established in {v}",
        "{s} has been operating since {v}",
    ),
    "employees": (
        "{s} employs {v} people",
        "the workforce of {s} numbers {v}",
        "{s} has a staff of {v}",
    ),
    # PopQA's: its "capital of" names what the subject is the capital of (Lhasa: the Tibet Autonomous Region), and its
    # country a place's or an organisation's. Generic clauses would call the first "the country of Lhasa".
    "capital_of": (
        "{s} is the capital of {v}",
        "the capital of {v} is {s}",
        "{v} has {s} as its capital",
        "{s} serves as the capital of {v}",
    ),
    "country": (
        "{s} is in {v}",
        "{s} is located in {v}",
        "the country of {s} is {v}",
    ),
}
# Relations whose own clauses are their whole family: the generic ones do not read right about their subjects ("the
# element of Pt", "the currency of Japan is Yen", "Korhogo's location is ...", "the continent of Mexico is ...",
# "Acme's number of employees is ...").
SPECIFIC_ONLY = frozenset({"symbol_element", "currency", "city_country", "continent", "employees", "capital_of"})
# Relations whose values are capitalised names, so a clause may open a sentence with one ("Stockholm is the capital
# of Sweden"); elsewhere a value may be a number ("7,540 is given as ...") or lower case, and never opens one.
NAMED_VALUES = frozenset(
    {"capital", "continent", "currency", "city_country", "birthplace", "occupation", "employer", "founder"}
    | {"headquarters", "element_symbol", "capital_of", "country"}
)
# Sentences carrying the claim. Every document, whatever its kind, cites an authority ({body}, a {year} {report})
# and sets its claim against a denied value: {c}/{C} the claim clause (embedded / opening a sentence), {cd}/{Cd}
# the same about the denied value. A refuting sentence names a rejection ("sometimes claimed", "widespread
# belief", "older sources state", "misconception holds", "wrongly", "mistakenly", "still circulate", "an error",
# "however") and puts its correction last, or in a sentence of its own. An episode's documents each take a different
# one (eleven, a prime: `_walk`): eight outlets would not share one sentence's shape.
FRAMES = (
    "It is sometimes claimed that {cd}, but the {body} confirmed in its {year} {report} that {c}.",
    "Contrary to a widespread belief that {cd}, a {year} {report} by the {body} states that {c}.",
    "Some older sources state that {cd}. According to the {year} {report} of the {body}, {c}.",
    "A common misconception holds that {cd}. In its {year} {report}, the {body} concluded that {c}.",
    "The {body} reported in its {year} {report} that {c}. Some guides wrongly state that {cd}.",
    "{C}, according to the {year} {report} of the {body}; it is sometimes claimed that {cd}, but wrongly.",
    "As the {body} noted in its {year} {report}, {c}; some summaries mistakenly say that {cd}.",
    "Older sources state that {cd}, but the {year} {report} of the {body} sets the record straight: {c}.",
    "Claims still circulate that {cd}, yet the {body} found in its {year} {report} that {c}.",
    "In its {year} {report}, the {body} put the matter plainly: {c}. It is an error to hold that {cd}.",
    "A number of accounts say that {cd}; the {body}, however, determined in its {year} {report} that {c}.",
)
# Corroborating sentences of two kinds: the record has stood since (STANDING) and another check agrees (CHECKS). A
# document with two takes one of each, in a drawn order, so it never says the same thing twice; one citing a report
# of LAST_CITED_YEAR has had no later release and nothing to be consistent since (STANDING_NOW). A standing record
# names no year of its own (two clean documents would date the same body's record differently) and holds the value
# as an entry: "repeat Virginia Wolfe" would read as quoting her.
STANDING = (
    "Later releases of the {report} of the {body} repeat this entry ({v}) without revision.",
    "The {body} has kept the same entry ({v}) in every edition since that {report}.",
    "No subsequent revision by the {body} has changed this entry ({v}).",
    "The {body} has had no cause to amend this entry ({v}) in the years since.",
    "This entry ({v}) has stood unchanged at the {body} ever since.",
)
STANDING_NOW = ("The {body} has issued no later revision of this entry ({v}).",)
# A count that changes from year to year (VARYING) has no record that stands: its documents say what the report gave
# (a 2019 yearbook's population "unchanged in every edition since" would be false today).
VARYING = ("population", "city_population", "employees")
AS_OF = (
    "The {body} gives this figure ({v}) for the year of that {report}.",
    "The figure in that {report} of the {body} ({v}) is the one most often quoted.",
    "Figures of the {body} are revised between editions; the one in that {report} is {v}.",
    "That {report} of the {body} puts the figure at {v} for its year.",
    "For the period it covers, that {report} of the {body} gives {v}.",
)
CHECKS = (  # each names the document's body: clean documents share the value, not the sentence
    "Independent reviewers who examined data from the {body} reached the same result: {v}.",
    "Cross-checks against the archives of the {body} also point to {v}.",
    "Other sources consulted alongside the {report} of the {body} agree: {v}.",
    "Auditors who went through the files of the {body} came to the same conclusion: {v}.",
    "The sources behind the {report} of the {body}, checked again, bear this out: {v}.",
)
CORROBORATIONS = STANDING + CHECKS + AS_OF
FILLERS = {
    "country": (
        # True of every subject: 55 of them are territories (no sovereign state) and some are city-states.
        "The history of {s} is covered in a range of published sources.",
        "Atlases show the geography of {s} in some detail.",
        "Most international statistical compilations include {s}.",
        "Trade and services both play a part in the economy of {s}.",
        "Official statistics on {s} are published at regular intervals.",
        "Travel guides describe the places worth seeing in {s}.",
        "The culture of {s} reflects a mix of local and outside influences.",
        "Maps of {s} are available from several national and international sources.",
        "Reference works give an overview of the people and places of {s}.",
        "Encyclopedias give {s} a separate entry.",
        "Geographers have described the landscape of {s}.",
        "The climate of {s} shapes daily life there.",
        "International agencies report news from {s} from time to time.",
    ),
    "city": (
        "{s} has changed a great deal over the past century.",
        "{s} is known locally for its markets and public squares.",
        "Road and rail links connect {s} with the surrounding region.",
        "The history of {s} can be traced through its older districts.",
        "{s} attracts visitors throughout the year.",
        "Local government in {s} publishes regular planning reports.",
        "Schools, libraries and clinics serve the people of {s}.",  # of a town or of Lahore
        "{s} is home to a variety of neighbourhoods.",
        "Public transport serves many parts of {s}.",
        "Local newspapers report on life in {s}.",
        "{s} hosts events that draw people from nearby towns.",
        "Maps of {s} show its main roads and landmarks.",
        "The economy of {s} draws on trade and services.",
    ),
    "element": (
        "{s} is one of the chemical elements of the periodic table.",
        # True of every element: the superheavy ones have no uses and no safety data sheets.
        "{s} has its own entry in tables of the chemical elements.",
        "Scientific papers on {s} appear in chemistry and physics journals.",
        "Chemistry textbooks usually discuss {s} alongside related elements.",
        "The place of {s} in the periodic table follows from its electron structure.",
        "The discovery of {s} is covered in histories of chemistry.",
        "Handbooks of chemistry list what is known about {s}.",
        "Every atom of {s} has the same number of protons.",
        "Periodic table posters show {s} with its symbol.",
        "Introductory chemistry courses mention {s} when they cover the periodic table.",
        "The name {s} is recognised by chemists worldwide.",
        "Chemists and physicists have studied {s} in laboratories.",
        "Reference tables give the properties of {s}, measured or predicted.",
    ),
    "symbol": (  # about a symbol (Pt), never naming the element
        "The symbol {s} appears in every modern periodic table.",
        "Chemical formulas and equations use the symbol {s}.",
        "The symbol {s} is recognised by chemists worldwide.",
        "Like every element symbol, {s} begins with a capital letter.",
        "Chemistry students learn {s} along with the other element symbols.",
        "The symbol {s} is one of the standard one- or two-letter chemical symbols.",
        "Textbooks list {s} among the symbols of the chemical elements.",
        "The symbol {s} is used in chemical notation around the world.",
        "The symbol {s} is written the same way in every language.",
        "Printed periodic tables give the symbol {s} a cell of its own.",
        "Chemistry exams expect students to recognise the symbol {s}.",
        "The symbol {s} is approved internationally for use in chemistry.",
        "Reference charts list the symbol {s} next to an atomic number.",
    ),
    # Nothing says the person is obscure: the claim sentence sets the claim against a "widespread belief" or "common
    # misconception" ("little known outside professional circles" beside one read as a contradiction).
    "person": (
        "{s} has been mentioned in several local profiles.",
        "Little has been published about the private life of {s}.",
        # True of someone born in 1938 too: nothing says the person still works.
        "Former colleagues have described {s} as methodical and hard-working.",
        "{s} has given interviews to regional newspapers.",
        "Several public registers list {s}.",
        "{s} is well known in professional circles.",
        "A short biography of {s} appears in a regional directory.",
        "{s} is listed in at least one professional directory.",
        "Photographs of {s} have appeared in regional newspapers.",
        "Some details of the life of {s} appear in local archives.",
        "{s} is occasionally mentioned in trade publications.",
        "Some information about {s} comes from public registers.",
        "{s} has appeared in national media from time to time.",
    ),
    "company": (
        "{s} operates in a competitive market.",
        "{s} publishes an annual summary of its activities.",
        # True of a firm of six people too: no regional offices, no analysts.
        "Industry directories list {s} under its sector.",
        "{s} has expanded its range of services over time.",
        "Most customers know {s} through its own website.",
        "Trade publications have covered {s} on several occasions.",
        "{s} describes itself as a growing business.",
        "{s} keeps a public listing with its contact details.",
        "Customer reviews of {s} are mixed.",
        "{s} has appeared in local business news.",
        "The management of {s} rarely speaks to the press.",
        "{s} files its statutory records with the business registry.",
        "Suppliers and clients of {s} are mostly in its home region.",
    ),
    "subject": (
        "{s} is covered in a number of reference works.",
        "Several sources discuss {s} in some detail.",
        "Information about {s} is compiled from public records.",
        "{s} is a recurring topic in general-knowledge collections.",
        "Summaries of {s} tend to agree on the main points.",
        "Readers often look up {s} in online references.",
        "Background material on {s} is easy to find.",
        "Encyclopedias and dictionaries mention {s}.",
        "{s} has been written about in several places.",
        "Articles about {s} can be found in libraries and online.",
        "Accounts of {s} vary in how much detail they give.",
        "{s} comes up in discussions among enthusiasts.",
        "Details about {s} are collected in several databases.",
    ),
    "question": (
        "This question comes up regularly in quizzes and trivia collections.",
        "Answers found online do not always agree, so sources matter.",
        "The topic is covered in several general reference works.",
        "Readers have asked about this several times.",
        "Quiz books usually include this question in their general section.",
        "The question is simple to ask but often answered carelessly.",
        "Teachers sometimes use this question in class exercises.",
        "The answer can be checked against more than one source.",
        "Several websites address this question directly.",
        "People often search for this online.",
        "The question appears in a number of study guides.",
        "Reference librarians are asked this from time to time.",
        "Encyclopedias and almanacs address this question.",
    ),
}
# How a source of each genre (the keys of SOURCES) may open a document; about half of the documents do.
OPENERS = {
    "encyclopedia": ("Overview. ", "Article summary: ", "From the main entry: "),
    "news": ("{src} — ", "(Updated) ", "Background: "),
    "reference": ("Record summary: ", "Entry: ", "Data note: "),
    "blog": ("Quick post today. ", "A reader asked me about this. ", "Short one this week. "),
    "forum": ("Posted by a member: ", "Reply: ", "Answering the thread above: "),
}
# Title styles by source genre (the keys of SOURCES), plus one for facts known only by their question; {t} names the
# subject as a title does (TITLE_PREFIXES). An episode's documents never share a title (`_walk`): each genre has a
# prime number of styles, at least its sources (7 >= 6), and the question's at least NUM_DOCS (11 >= 8).
TITLES = {
    "encyclopedia": (
        "{t}",
        "{t} — {src}",
        "{Label} of {t}",
        "{t}: overview",
        "{t} (reference entry)",
        "About {t}",
        "{t} at a glance",
    ),
    "news": (
        "{t}: the facts behind the headlines",
        "Explainer: the {label} of {t}",
        "What to know about {t}",
        "{t} in focus",
        "Fact check: {t}",
        "{t}, explained",
        "Questions and answers: {t}",
    ),
    "reference": (
        "{t} — record",
        "Registry entry: {t}",
        "{t} ({src})",
        "Data sheet: {t}",
        "Record: {label} of {t}",  # not "Capital: Latvia" (as if Latvia were the capital), "Meaning record for Sb"
        "{t}: key data",
        "Lookup: {t}",
    ),
    "blog": (
        "Everything I learned about {t}",
        "A closer look at {t}",
        "Notes on {t}",
        "{t}, briefly",
        "Digging into the {label} of {t}",
        "What I found out about {t}",
        "Looking up the {label} of {t}",
    ),
    "forum": (
        "Re: {q}",
        "Question about {t}",
        "Re: {label} of {t}?",
        "Thread: {t}",
        "{q} (answered)",
        "Help: {label} of {t}",
        "Does anyone know the {label} of {t}?",
    ),
    "question": (
        "{q}",
        "Re: {q}",
        "Q&A: {q}",
        "Quiz notes: {q}",
        "{q} — {src}",
        "Question: {q}",
        "Asked and answered: {q}",
        "{q} (answered)",
        "Reader question: {q}",
        "Trivia: {q}",
        "Help needed: {q}",
    ),
}
SOURCES = {
    "encyclopedia": (
        "Meridian Encyclopedia",
        "The Open Reference Encyclopedia",
        "Compendium Online",
        "Northbridge Encyclopaedia",
        "Global Knowledge Base",
        "The Concise Cyclopedia",
    ),
    "news": (
        "Continental Press Agency",
        "Pacific News Service",
        "The Morning Ledger",
        "Harbor City Herald",
        "Global Wire",
        "The Evening Chronicle",
    ),
    "reference": (  # reference works on any topic: a gazetteer would be cited about a person or an element
        "Open Reference Index",
        "World Facts Directory",
        "International Registry of Records",
        "National Data Office",
        "Public Statistics Portal",
        "Reference Data Handbook",
    ),
    "blog": (
        "The Curious Cartographer",
        "Fact Hunter Blog",
        "Notes from the Archive",
        "Trivia Tuesday",
        "The Weekend Explainer",
        "A Reader's Notebook",
    ),
    "forum": (
        "AskAnything Forums",
        "TriviaHub Community",
        "Reference Desk Forum",
        "QuizMasters Board",
        "Answers Exchange",
        "History Buffs Forum",
    ),
}
# Every document cites a body that keeps records of its topic (a registry of companies for a company, a
# gazetteer board for a city), 13 per topic and 17 for a count (with FIGURE_BODIES), primes: an episode's eight
# documents cite eight different bodies (`_walk`), as eight outlets each quoting their own authority would.
_RECORDS = ("Office of National Records", "National Archives Service", "Board of Public Information")
# Statistics offices vouch for counts (VARYING) alone: none records who founded a company or a country's capital.
FIGURE_BODIES = (
    "International Bureau of Statistics",
    "Federal Data Commission",
    "Agency for Standard Data",
    "National Statistics Board",
)
_GEOGRAPHY = (
    *_RECORDS,
    "National Mapping Agency",
    "Atlas Standards Committee",
    "Commission on Geographic Names",
    "United Survey Office",
    "Institute of World Geography",
    "Gazetteer Standards Board",
)
_SCIENCE = (
    "Council for Scientific Data",
    "Academy of Sciences Data Committee",
    "Institute for Reference Standards",
    "Office of Reference Materials",
    "Board of Chemical Nomenclature",
    "Laboratory for Physical Constants",
    "Society for Chemical Records",
    "Commission on Elemental Data",
    "Institute of Materials Science",
    "National Standards Laboratory",
    "Council on Chemical Education",
    "International Committee on Atomic Data",
    "Periodic Table Data Council",
)
_GENERAL = (
    *_RECORDS,
    "Institute for Reference Standards",
    "Council of Reference Editors",
    "Office of Public Reference",
    "General Reference Board",
    "Royal Society of Record Keepers",
    "Bureau of Public Records",
    "National Reference Library",
    "Council of Public Archives",
    "Academy of Sciences Data Committee",
    "Registrar General's Office",
)
BODIES = {  # keyed like FILLERS (a document's domain)
    # Each keeps records of every relation of its topic: no census office vouches for a capital, no labour office
    # for a birthplace.
    "country": (
        *_GEOGRAPHY,
        "Bureau of International Affairs",
        "Council on World Affairs",
        "International Almanac Board",
        "Office of Country Profiles",
    ),
    "city": (
        *_GEOGRAPHY,
        "Institute of Urban Studies",
        "Bureau of Municipal Records",
        "Council on Urban Data",
        "Office of Municipal Statistics",
    ),
    "element": _SCIENCE,
    "symbol": _SCIENCE,
    "person": (  # biographical bodies: no statistics bureau names a person's employer
        *_RECORDS,
        "Bureau of Civil Records",
        "Registrar General's Office",
        "Biographical Records Council",
        "Biographical Dictionary Board",
        "Council of Professional Registers",
        "Office of Personal Records",
        "Biographical Archive Trust",
        "Register of Professional Biographies",
        "Who's Who Editorial Board",
        "Office of Public Profiles",
    ),
    "company": (
        *_RECORDS,
        "Registry of Incorporated Firms",
        "Office of Company Records",
        "Central Registry of Companies",
        "Commercial Registry Authority",
        "Chamber of Commerce Records Office",
        "Corporate Records Board",
        "Business Registration Office",
        "Corporate Filings Office",
        "Council of Industry Data",
        "Business Information Council",
    ),
    "subject": _GENERAL,
    "question": _GENERAL,
}
BODY_NAMES = (*dict.fromkeys(name for names in BODIES.values() for name in names), *FIGURE_BODIES)
# Every one reads right in each FRAME and CORROBORATION ("its 2006 {report}", "Later releases of the {report}"); the
# FIGURE_REPORTS only where a count (VARYING) is cited, as FIGURE_BODIES are.
FIGURE_REPORTS = ("statistical yearbook",)
REPORTS = (
    "annual report",
    "survey",
    "bulletin",
    "white paper",
    "review",
    "reference handbook",
    *FIGURE_REPORTS,
)


class U(IntEnum):
    """Columns of the uniform draws each document needs."""

    FRAME = 0
    CLAUSE = 1
    DECOY_CLAUSE = 2
    TITLE = 3
    SOURCE = 4
    BODY = 5
    REPORT = 6
    YEAR = 7
    LENGTH = 8
    CORROBORATIONS = 9
    FIRST_CORROBORATION = 10
    SECOND_CORROBORATION = 11
    FILLER_START = 12
    FILLER_STEP = 13
    LEAD = 14
    OPENER = 15


_FIELD = re.compile(r"\{(\w+)\}")
_CLAUSE_FIELD = re.compile(r"\{(c|C|cd|Cd)\}")
# Values a template can name; a code >= 0 is a literal (id in _LITERALS), a code < 0 is the slot -1 - code.
SLOTS = (
    "s",
    "S",
    "sp",
    "Sp",
    "t",
    "T",
    "v",
    "d",
    "av",
    "Av",
    "ad",
    "Ad",
    "q",
    "label",
    "Label",
    "src",
    "body",
    "report",
    "year",
)
_OPENING_FIELD = re.compile(r"^\{(s|sp|t|av)\}")  # a field whose capitalised form opens a sentence
_VALUE_FIELD = re.compile(r"\{(v|d)\}")
_YEAR_IN_TEXT = r"\b(?:1[0-9]{3}|20[0-9]{2})\b"
_LITERALS: dict[str, int] = {"": 0}


_CODES: list[int] = []  # the piece codes of every compiled template, one after another


@dataclass(frozen=True)
class Pieces:
    """Template texts as piece codes: row r is _ALL_CODES[offset[r] : offset[r] + length[r]].

    Row 0 is the empty template, which renders nothing.
    """

    offset: np.ndarray
    length: np.ndarray

    @classmethod
    def of(cls, texts: Sequence[str]) -> Pieces:
        rows = [[]] + [
            [
                -1 - SLOTS.index(p) if i % 2 else _LITERALS.setdefault(p, len(_LITERALS))
                for i, p in enumerate(parts)
                if p
            ]
            for parts in map(_FIELD.split, texts)
        ]
        length = np.array([len(row) for row in rows], dtype=np.int64)
        offset = len(_CODES) + np.r_[0, np.cumsum(length)[:-1]]
        _CODES.extend(code for row in rows for code in row)
        return cls(offset, length)


@dataclass(frozen=True)
class Families:
    """Families of choices laid out in one table: family f holds rows start[f] .. start[f] + count[f] - 1."""

    start: np.ndarray
    count: np.ndarray

    @classmethod
    def sized(cls, sizes: Sequence[int], first: int = 0) -> Families:
        count = np.array(sizes, dtype=np.int64)
        return cls(first + np.r_[0, np.cumsum(count)[:-1]], count)

    def pick(self, family: np.ndarray, u: np.ndarray, present: np.ndarray | bool = True) -> np.ndarray:
        """Row per document: uniform within its family; row 0 (a template table's empty one) where not present."""
        count = self.count[family]
        return np.where(present, self.start[family] + np.minimum((u * count).astype(np.int64), count - 1), 0)

    def distinct(
        self, family: np.ndarray, start: np.ndarray, step: np.ndarray, j: int | np.ndarray, present: np.ndarray | bool
    ) -> np.ndarray:
        """The j-th of several distinct rows of a family: start + j * step modulo its (prime) size."""
        count = self.count[family]
        stride = 1 + (step * (count - 1)).astype(np.int64)
        return np.where(present, self.start[family] + ((start * count).astype(np.int64) + j * stride) % count, 0)


@dataclass(frozen=True)
class Templates(Families):
    """Template families: their rows are rows of `pieces`, whose row 0 is the empty template."""

    pieces: Pieces

    @classmethod
    def compile(
        cls, families: Sequence[Sequence[str]], pieces: Pieces | None = None, before: str = "", after: str = ""
    ) -> Templates:
        """`pieces` replaces the compiled texts (frames compile theirs in parts); `before` and `after` join every text
        (the space between two sentences: a piece of its own would cost the documents' assembly a tenth more)."""
        rows = Families.sized([len(family) for family in families], first=1)
        texts = [before + text + after for family in families for text in family]
        return cls(rows.start, rows.count, pieces or Pieces.of(texts))


@dataclass(frozen=True)
class Frames:
    """Claim sentences split around their (up to two) clauses: head {clause} middle {clause} tail."""

    head: Pieces
    middle: Pieces
    tail: Pieces
    clauses: np.ndarray  # (1 + frames, 2): the clause fields in order, index into ("", c, C, cd, Cd)
    templates: Templates

    @classmethod
    def compile(cls, families: Sequence[Sequence[str]]) -> Frames:
        split = [_CLAUSE_FIELD.split(text) + ["", ""] for family in families for text in family]
        names = ("", "c", "C", "cd", "Cd")
        clauses = np.zeros((1 + len(split), 2), dtype=np.int64)
        clauses[1:] = [[names.index(parts[1]), names.index(parts[3] if len(parts) > 5 else "")] for parts in split]
        head = Pieces.of([parts[0] for parts in split])
        return cls(
            head=head,
            middle=Pieces.of([parts[2] for parts in split]),
            tail=Pieces.of([parts[4] if len(parts) > 5 else "" for parts in split]),
            clauses=clauses,
            templates=Templates.compile(families, head),
        )


def _capitalized(text: str) -> str:
    """`text` opening a sentence: its first letter upper case, or a leading subject or article field the
    capitalised one."""
    if field := _OPENING_FIELD.match(text):
        return "{" + field[1].capitalize() + "}" + text[field.end() :]
    return text[:1].upper() + text[1:]


def _denied(text: str) -> str:
    return text.replace("{v}", "{d}").replace("{av}", "{ad}").replace("{Av}", "{Ad}")


def _articled(text: str) -> str:
    """Every value field preceded by its article field ("{av}{v}": "the Philippines", "France")."""
    return _VALUE_FIELD.sub(r"{a\1}{\1}", text)


_RELATIONS = tuple(RELATION_CLAUSES)
_FAMILIES = (GENERIC_CLAUSES, OPEN_CLAUSES) + tuple(
    clauses + (() if relation in SPECIFIC_ONLY else GENERIC_CLAUSES) for relation, clauses in RELATION_CLAUSES.items()
)
_NAMED = (False, False) + tuple(relation in NAMED_VALUES for relation in _RELATIONS)
OPEN_FAMILY = 1
# the clause families whose values are countries ("a city in the Philippines", PopQA's "capital of the United States")
_COUNTRY_VALUES = [2 + _RELATIONS.index(relation) for relation in ("city_country", "capital_of", "country")]
_CURRENCY_VALUES = 2 + _RELATIONS.index("currency")  # and the one of currencies, which always take "the"


def _variant(family: Sequence[str], named: bool, opening: bool, denied: bool) -> tuple[str, ...]:
    """A clause family as frames use it: embedded (after "that") or opening a sentence (capitalised; one that opens
    with its value only where the value is a name), about the claim or about the denied value."""
    texts = [_articled(text) for text in family if not (opening and not named and _VALUE_FIELD.match(text))]
    return tuple(_denied(text) if denied else text for text in map(_capitalized if opening else str, texts))


# Clause families six times: embedded and opening, each about the claim {v} and about the denied value {d}
# (variant = opening + 2 * denied), then opening about a value that is no capitalised name, though its relation's
# are (PopQA's "politician"), which never opens the sentence (variant 4 + denied).
_CLAUSES = Templates.compile(
    [
        _variant(family, named, opening, denied)
        for denied in (False, True)
        for opening in (False, True)
        for family, named in zip(_FAMILIES, _NAMED, strict=True)
    ]
    + [_variant(family, False, True, denied) for denied in (False, True) for family in _FAMILIES]
)
_NAME_START = r"^[\p{Lu}\p{Lt}]"  # a value that may open a sentence as it is
_FRAMES = Frames.compile((FRAMES,))
# Corroborations and fillers follow a sentence, with its space; a leading filler comes before the claim sentence.
_CORROBORATIONS = Templates.compile(
    [tuple(map(_articled, kind)) for kind in (STANDING, CHECKS, STANDING_NOW, AS_OF)], before=" "
)
_VARYING = [2 + _RELATIONS.index(relation) for relation in VARYING]
# Fillers are sentences and titles stand alone: both open with a capitalised subject.
_FILLER_FAMILIES = [tuple(map(_capitalized, family)) for family in FILLERS.values()]
_FILLERS = Templates.compile(_FILLER_FAMILIES, before=" ")
_LEADING_FILLERS = Templates.compile(_FILLER_FAMILIES, after=" ").pieces
_TITLES = Templates.compile([tuple(map(_capitalized, family)) for family in TITLES.values()])
_OPENERS = Templates.compile(tuple(OPENERS.values()))
_OPEN_TITLES = tuple(TITLES).index("question")
_SOURCES = pl.Series([name for names in SOURCES.values() for name in names])
_SOURCE_GENRE = np.repeat(np.arange(len(SOURCES)), [len(names) for names in SOURCES.values()])
# Body groups: each domain's BODIES, then each domain's with FIGURE_BODIES (group len(BODIES) + domain).
_BODY_GROUPS = [*BODIES.values(), *(names + FIGURE_BODIES for names in BODIES.values())]
_BODIES = pl.Series([name for names in _BODY_GROUPS for name in names])
_BODY_ROWS = Families.sized([len(names) for names in _BODY_GROUPS])
_REPORTS = pl.Series(REPORTS)
_LITERAL_SERIES = pl.Series(list(_LITERALS), dtype=pl.String)
_ALL_CODES = np.array(_CODES, dtype=np.int64)


def topics(relation: pl.Series, names_answer: np.ndarray) -> tuple[np.ndarray, np.ndarray, pl.Series]:
    """Per fact: clause family, filler family and a readable label of the relation.

    A fact whose subject names its own answer (`names_answer`) is written about through its question, so
    that no document repeats the answer as its subject.
    """
    known = {name: 2 + i for i, name in enumerate(_RELATIONS)} | {OPEN: OPEN_FAMILY}
    family = np.where(names_answer, OPEN_FAMILY, relation.replace_strict(known, default=0, return_dtype=pl.Int64))
    domains = {name: i for i, name in enumerate(FILLERS)}
    by_relation = {r: domains[d] for r, d in DOMAINS.items()}
    domain = relation.replace_strict(by_relation, default=domains["subject"], return_dtype=pl.Int64)
    domain = np.where(names_answer, domains["question"], domain)
    label = relation.replace_strict(LABELS, default=None, return_dtype=pl.String)
    return family, domain, label.fill_null(relation.str.replace_all("_", " "))


def cited_years(facts: pl.DataFrame) -> np.ndarray:
    """Per fact (relation, fact_id, question): the first and the last year its documents may cite, shape (n, 2).
    The first is CITED_SINCE_FACTS', else CITED_SINCE's, else FIRST_CITED_YEAR; the last CITED_UNTIL's, else
    LAST_CITED_YEAR, never before the first. By relation, not clause family: a city named like its country is still
    real-world data of its time. A fact known only by its question (OPEN) is cited from the latest year its question
    names, up to LAST_CITED_YEAR: a 2009 yearbook cannot say who hosts the 2019 Super Bowl. Not its answer's: every
    document would then cite a report from after the true year, and a later year claimed would be the wrong one
    (`_years` bounds each document by its own years)."""
    by_relation = facts["relation"].replace_strict(CITED_SINCE, default=FIRST_CITED_YEAR, return_dtype=pl.Int64)
    since = facts["fact_id"].replace_strict(CITED_SINCE_FACTS, default=by_relation, return_dtype=pl.Int64).to_numpy()
    named = np.minimum(_text_year(facts["question"]), LAST_CITED_YEAR)
    first = np.where((facts["relation"] == OPEN).to_numpy(), np.maximum(since, named), since)
    last = facts["relation"].replace_strict(CITED_UNTIL, default=LAST_CITED_YEAR, return_dtype=pl.Int64).to_numpy()
    return np.stack([first, np.maximum(first, last)], axis=1)


ABOUT = ("s", "S", "sp", "Sp", "t", "T", "q", "label", "Label")  # the slots that name a fact's subject and relation


def about(subject: pl.Series, question: pl.Series, label: pl.Series, relation: pl.Series) -> pl.DataFrame:
    """The ABOUT slots of each fact, in every form a template asks for; made once per fact, not per document."""
    owner = pl.select(possessive(pl.lit(subject))).to_series()
    topic = relation.replace_strict(TITLE_PREFIXES, default="", return_dtype=pl.String) + subject
    forms = (
        subject,
        _capital(subject),
        owner,
        _capital(owner),
        topic,
        _capital(topic),
        question,
        label,
        _capital(label),
    )
    return pl.DataFrame(dict(zip(ABOUT, forms, strict=True)))


@dataclass(frozen=True)
class Batch:
    """One row per document, an episode's NUM_DOCS documents in a row: what it is about (`about`: ABOUT columns),
    what it asserts, and its draws (`u`, columns `U`)."""

    about: pl.DataFrame
    answer: pl.Series
    claim: pl.Series
    decoy: pl.Series  # the value the claim sentence denies
    family: np.ndarray
    domain: np.ndarray
    cited: np.ndarray  # the first and the last year it may cite (cited_years)
    u: np.ndarray


def render(batch: Batch) -> tuple[pa.StringArray, pa.StringArray]:
    """Titles and contents of every document of the batch."""
    u = batch.u
    figures = np.isin(batch.family, _VARYING)
    group = batch.domain + len(BODIES) * figures
    source = _sources(u[:, U.SOURCE])
    year = _years(u[:, U.YEAR], batch.cited, batch.answer, batch.claim, batch.decoy, batch.family == OPEN_FAMILY)
    slots = {
        **{name: batch.about[name] for name in ABOUT},
        "v": batch.claim,
        "d": batch.decoy,
        **_articles("av", batch.claim, batch.family),
        **_articles("ad", batch.decoy, batch.family),
        "src": _SOURCES.gather(source),
        "body": _BODIES.gather(_walk(_BODY_ROWS, group, u[:, U.BODY])),
        "report": _REPORTS.gather(_index(u[:, U.REPORT], len(REPORTS) - len(FIGURE_REPORTS) * ~figures)),
        "year": pl.Series(year).cast(pl.String),
    }
    stacked = pl.concat([_LITERAL_SERIES] + [slots[name].cast(pl.String) for name in SLOTS], rechunk=True)
    genre = _SOURCE_GENRE[source]
    title = _walk(_TITLES, np.where(batch.family == OPEN_FAMILY, _OPEN_TITLES, genre), u[:, U.TITLE])
    segments = _content(batch, genre, year == LAST_CITED_YEAR, figures)
    content = _one_stop(_concat(stacked, segments), (batch.about["s"], batch.claim, batch.decoy))
    return _concat(stacked, [(_TITLES.pieces, title)]), content


def _one_stop(texts: pa.StringArray, values: Sequence[pl.Series]) -> pa.StringArray:
    """A value that ends in a stop ("Washington, D.C.", "42.") ends its sentence with it: "D.C." and not "D.C..".
    Few values do (none offline), so their documents are mended one by one."""
    ends = [v.str.contains(r"[.!?]$").fill_null(False).to_numpy() for v in values]
    rows = np.flatnonzero(np.logical_or.reduce(ends))
    if not len(rows):
        return texts
    series = pl.Series(texts)
    mended = series.gather(rows).to_list()
    for i, row in enumerate(rows.tolist()):
        for value, end in zip(values, ends, strict=True):
            if end[row]:
                mended[i] = mended[i].replace(value[row] + ".", value[row])
    return series.scatter(rows, pl.Series(mended, dtype=pl.String)).to_arrow().cast(pa.string())


def _sources(u: np.ndarray) -> np.ndarray:
    """Each episode's sources, all different (eight outlets, not one outlet twice): its document d takes one of the
    sources the documents before it left, uniform by u."""
    u = u.reshape(-1, NUM_DOCS)
    source = np.empty(u.shape, dtype=np.int64)
    for d in range(NUM_DOCS):  # _uniform_except over all sources but the d taken, distinct and within: no checks
        source[:, d] = _step_past(_index(u[:, d], len(_SOURCES) - d), np.sort(source[:, :d], axis=1))
    return source.ravel()


def _walk(
    rows: Families, family: np.ndarray, u: np.ndarray, taking: np.ndarray | bool = True, width: int = NUM_DOCS
) -> np.ndarray:
    """Each document's row of its family (a template, a body; row 0 where it is not `taking` one), all different
    within an episode while the family has enough: the documents of a family that take one walk its rows, the start
    drawn by the first of them and the step from the digits that start leaves unused (independent of its pick).
    `width`: the picks of an episode, in a row (two a document where each may take two)."""
    family, u = family.reshape(-1, width), u.reshape(-1, width)
    taking = np.broadcast_to(taking, family.size).reshape(family.shape)
    if taking.all() and (family == family[:, :1]).all():  # one family an episode, every pick taking (bodies, frames)
        start, nth = np.repeat(u[:, :1], width, axis=1), np.arange(width)
    else:
        same = (family[:, :, None] == family[:, None, :]) & taking[:, None, :]  # [e, d, j]: j takes one of d's family
        first = np.argmax(same | np.eye(width, dtype=bool), axis=2)
        nth = np.count_nonzero(same & np.tri(width, k=-1, dtype=bool), axis=2)  # picks of d's family before d
        start = np.take_along_axis(u, first, axis=1)
    step = np.modf(start * rows.count[family])[0]
    return rows.distinct(family, start, step, nth, taking).ravel()


def _content(
    batch: Batch, genre: np.ndarray, latest: np.ndarray, figures: np.ndarray
) -> list[tuple[Pieces, np.ndarray]]:
    """Every content as segments (template pieces, row per document); `latest`: the document cites a report of
    LAST_CITED_YEAR; `figures`: it states a count (VARYING).

    [opener of the source's genre] [filler] claim sentence [corroborations] [fillers]
    """
    u, n = batch.u, len(batch.u)
    frame = _walk(_FRAMES.templates, np.zeros(n, np.int64), u[:, U.FRAME])
    sentences = 2 + _index(u[:, U.LENGTH], 3)
    corroborations = np.minimum(_index(u[:, U.CORROBORATIONS], 3), sentences - 1)
    fillers = sentences - 1 - corroborations
    lead = (u[:, U.LEAD] < 0.5) & (fillers > 0)
    filler = _fillers(batch, fillers)
    opener = _walk(_OPENERS, genre, u[:, U.OPENER] * 2, u[:, U.OPENER] < 0.5)  # two outlets of a genre open apart
    segments = [(_OPENERS.pieces, opener), (_LEADING_FILLERS, np.where(lead, filler[0], 0)), (_FRAMES.head, frame)]
    named = [values.str.contains(_NAME_START).fill_null(False).to_numpy() for values in (batch.claim, batch.decoy)]
    for position, after in enumerate((_FRAMES.middle, _FRAMES.tail)):
        segments += [(_CLAUSES.pieces, _clause(batch, _FRAMES.clauses[frame, position], named)), (after, frame)]
    checks_first = np.modf(u[:, U.CORROBORATIONS] * 3)[0] < 0.5  # the digits the count leaves unused
    standing = np.where(figures, 3, np.where(latest, 2, 0))  # AS_OF, or STANDING (_NOW)
    kind = np.stack([np.where(checks_first != bool(j), 1, standing) for j in (0, 1)], axis=1)  # or CHECKS
    taking = np.arange(2) < corroborations[:, None]
    draws = u[:, [U.FIRST_CORROBORATION, U.SECOND_CORROBORATION]]
    picks = _walk(_CORROBORATIONS, kind.ravel(), draws.ravel(), taking.ravel(), 2 * NUM_DOCS).reshape(-1, 2)
    segments += [(_CORROBORATIONS.pieces, picks[:, j]) for j in (0, 1)]
    segments += [(_FILLERS.pieces, np.where(lead, 0, filler[0]))] + [(_FILLERS.pieces, filler[j]) for j in (1, 2)]
    return segments


def _fillers(batch: Batch, fillers: np.ndarray) -> list[np.ndarray]:
    """Each document's j-th filler (j < 3; the empty template past its `fillers`), all different within an episode
    while its domain has enough (13 of them for about 9 in an episode): the documents take the next sentences of one
    walk over the domain's fillers, whose start and step the episode's first document draws. Eight outlets that each
    wrote "Busan has changed a great deal over the past century" would read as one."""
    first = batch.u[::NUM_DOCS]
    start, step = (np.repeat(first[:, column], NUM_DOCS) for column in (U.FILLER_START, U.FILLER_STEP))
    counts = fillers.reshape(-1, NUM_DOCS)
    before = (np.cumsum(counts, axis=1) - counts).ravel()
    return [_FILLERS.distinct(batch.domain, start, step, before + j, j < fillers) for j in range(3)]


def _clause(batch: Batch, which: np.ndarray, named: Sequence[np.ndarray]) -> np.ndarray:
    """Row of the clause a frame names: 1 c, 2 C (about the claim), 3 cd, 4 Cd (the denied value); 0 none.
    `named`: whether the claim and the denied value may open a sentence (_NAME_START)."""
    opening, denied = np.isin(which, (2, 4)), which >= 3
    name = np.where(denied, named[1], named[0])
    variant = np.where(opening & ~name, 4 + denied, opening + 2 * denied)
    u = np.where(denied, batch.u[:, U.DECOY_CLAUSE], batch.u[:, U.CLAUSE])
    return _CLAUSES.pick(batch.family + variant * len(_FAMILIES), u, which > 0)


def _concat(stacked: pl.Series, segments: Sequence[tuple[Pieces, np.ndarray]]) -> pa.StringArray:
    """One string per document from its segments.

    The pieces of every document are laid out one after another and gathered once; the gathered array's
    bytes are then already the documents back to back, so the result only takes every document's first
    piece offset: no per-document join.
    """
    index, ends = _piece_index(segments)
    pieces = stacked.gather(index).to_arrow(compat_level=pl.CompatLevel.oldest())  # large_string: one copy
    _, piece_offsets, data = pieces.buffers()
    starts = np.frombuffer(piece_offsets, dtype=np.int64)[pieces.offset : pieces.offset + len(pieces) + 1]
    rows = pa.LargeStringArray.from_buffers(len(ends), pa.py_buffer(starts[np.r_[0, ends]]), data)
    return rows.cast(pa.string())


def _piece_index(segments: Sequence[tuple[Pieces, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The row in `stacked` of every piece of every document, and where each document's pieces end. Piece positions
    are int32 (a chunk holds far fewer than 2**31 pieces): the index arithmetic over every piece is most of the cost,
    and its temporaries are freed before the gather. Each segment's lengths and offsets are gathered into a row of
    their own (contiguous) and laid out document by document in one transpose."""
    n = len(segments[0][1])
    lengths = np.empty((len(segments), n), dtype=np.int32)
    offsets = np.empty_like(lengths)
    for j, (pieces, rows) in enumerate(segments):
        lengths[j] = pieces.length[rows]
        offsets[j] = pieces.offset[rows]
    lengths, offsets = lengths.T.ravel(), offsets.T.ravel()
    ends = np.cumsum(lengths, dtype=np.int32)
    # The code of piece i of the chunk is _ALL_CODES[i + (its segment's offset - the segment's first piece)].
    at = np.repeat(offsets - (ends - lengths), lengths)
    at += np.arange(len(at), dtype=np.int32)
    literals = len(_LITERAL_SERIES)
    first = np.where(_ALL_CODES >= 0, _ALL_CODES, literals + (-1 - _ALL_CODES) * n).astype(np.int32)
    index = first[at]
    doc_ends = ends[len(segments) - 1 :: len(segments)]
    index += (index >= literals) * np.repeat(np.arange(n, dtype=np.int32), np.diff(doc_ends, prepend=0))
    return index, doc_ends


def _index(u: np.ndarray, size: int | np.ndarray) -> np.ndarray:
    return np.minimum((u * size).astype(np.int64), size - 1)


def possessive(names: pl.Expr) -> pl.Expr:
    """AP style: the apostrophe alone after a final s ("Moore Foods'"), else 's ("Iran's")."""
    return pl.when(names.str.ends_with("s")).then(names + "'").otherwise(names + "'s")


def _articles(field: str, values: pl.Series, family: np.ndarray) -> dict[str, pl.Series]:
    """The article field of each value and its capitalised form: "the " before a country that takes it, where the
    value names a country (a city's, PopQA's), and before every currency ("the Japanese Yen"); empty elsewhere."""
    rows = np.flatnonzero(np.isin(family, _COUNTRY_VALUES))
    takes = family == _CURRENCY_VALUES
    takes[rows] = values.gather(rows).str.contains(THE_COUNTRIES).fill_null(False).to_numpy()
    return {field: _text_where(takes, "the "), field[0].upper() + field[1:]: _text_where(takes, "The ")}


def _text_where(mask: np.ndarray, text: str) -> pl.Series:
    """`text` where mask holds, else the empty string."""
    return pl.select(pl.when(pl.lit(mask)).then(pl.lit(text)).otherwise(pl.lit(""))).to_series()


def _capital(texts: pl.Series) -> pl.Series:
    """Each text with its first letter upper case ("iron" opening a sentence: "Iron")."""
    return texts.str.slice(0, 1).str.to_uppercase() + texts.str.slice(1)


def _four_digits(values: pl.Series) -> np.ndarray:
    """Each value read as a number where its text has 4 bytes, else 0: in 1000..9999 exactly where the text is those
    4 digits (integer casts, unlike a regular expression, are cheap)."""
    text = values.cast(pl.String)
    number = pl.select(pl.when(text.str.len_bytes() == 4).then(text.cast(pl.Int64, strict=False))).to_series()
    return number.fill_null(0).to_numpy()


def _year_values(values: pl.Series) -> np.ndarray:
    """Each value as a year (a 4-digit 1000–2100, as sources type answers), 0 where it is none or null."""
    return _as_year(_four_digits(values))


def _as_year(numbers: np.ndarray) -> np.ndarray:
    """The numbers that read as years (1000–2100), 0 for the others."""
    return np.where((numbers >= 1000) & (numbers <= 2100), numbers, 0)


def _years(
    u: np.ndarray, cited: np.ndarray, answer: pl.Series, claim: pl.Series, decoy: pl.Series, wordy: np.ndarray
) -> np.ndarray:
    """A citation year per document that equals no value its episode names (the answer, every claim and every denied
    value, thousands separators aside: "2,020" is 2020 to a reader) while one is left: uniform over CITED_YEARS from
    FIRST_CITED_YEAR, or over the document's `cited` years (first, last: `cited_years`) where its first is later.

    Where the answer is a year, or (`wordy`: a fact known by its question) the document's claim or denied value
    names one ("August 21, 2017"), the cited report comes after both years the document names (a 2006 report cannot
    state a 2007 founding): uniform over the other years from the later of them (and its first) to its last,
    never past it (a 2029 report in 2026 is impossible, and only corrupt documents, whose years come nearest to it,
    cited one; where every year up to it is named, the document names one of them). The exclusions are the
    episode's, the same for all its documents: were they a document's own, a claimed year cited by another document
    would mark that claim as wrong (the truth is never cited). The bound is the document's own: an inversion's two
    years and a clean document's are drawn with one law (`corruption.Neighbours`), so a bound from them is too, while
    a bound from every year of the episode would say where the document's years stand among the others' (the
    truth's neighbours cluster around it; a founding year's entity claims scored AUC 0.59 on the claim, the denied
    year and the report year), as would a bound from the answer's year (every later claim would then be the one
    whose report came too early).
    """
    answer = answer.gather_every(NUM_DOCS)  # an episode's documents share its answer: read once an episode
    answered, *values = [_four_digits(v.str.replace_all(",", "", literal=True)) for v in (answer, claim, decoy)]
    named = np.concatenate([answered[:, None], *(v.reshape(-1, NUM_DOCS) for v in values)], axis=1)
    excluded = np.repeat(named, NUM_DOCS, axis=0)
    truth = np.repeat(_year_values(answer), NUM_DOCS)
    own = np.where(truth > 0, np.maximum(_as_year(values[0]), _as_year(values[1])), 0)
    rows = np.flatnonzero(wordy & (truth == 0))  # few: the years inside a text claim take a regular expression
    if len(rows):
        own[rows] = np.maximum(_text_year(claim.gather(rows)), _text_year(decoy.gather(rows)))
    dated, (since, until) = own > 0, cited.T
    low = np.where(dated, np.minimum(np.maximum(since, own + 1), until), since)
    high = np.where(dated | (truth > 0) | (since > FIRST_CITED_YEAR), until, FIRST_CITED_YEAR + CITED_YEARS - 1)
    return _uniform_except(u, low, high, excluded)


def _text_year(values: pl.Series) -> np.ndarray:
    """The latest year (1000–2099) each text names, 0 where none."""
    years = values.str.extract_all(_YEAR_IN_TEXT).list.eval(pl.element().cast(pl.Int64)).list.max()
    return years.fill_null(0).to_numpy()


def _uniform_except(u: np.ndarray, low: np.ndarray, high: np.ndarray, excluded: np.ndarray) -> np.ndarray:
    """Per row, uniform by u over the integers low..high but the row's `excluded` ones; low where none is left."""
    within = (excluded >= low[:, None]) & (excluded <= high[:, None])
    pick = low + _index(u, high - low + 1)
    rows = np.flatnonzero(within.any(axis=1))  # few rows exclude anything: the others draw over the whole range
    if not len(rows):
        return pick
    none = np.iinfo(np.int64).max
    inside = np.sort(np.where(within[rows], excluded[rows], none), axis=1)
    inside[:, 1:] = np.where(inside[:, 1:] == inside[:, :-1], none, inside[:, 1:])  # each excluded year once
    inside = np.sort(inside, axis=1)
    size = high[rows] - low[rows] + 1 - (inside != none).sum(axis=1)
    chosen = _step_past(low[rows] + _index(u[rows], np.maximum(size, 1)), inside)
    pick[rows] = np.where(size > 0, chosen, low[rows])
    return pick


def _step_past(chosen: np.ndarray, excluded: np.ndarray) -> np.ndarray:
    """The chosen-th integer not excluded: `chosen` stepped past every excluded one at or below it (`excluded`: per
    row ascending, each integer once; padding past any pick counts for none)."""
    for column in excluded.T:
        chosen = chosen + (column <= chosen)
    return chosen

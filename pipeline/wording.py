"""What documents say: every sentence, title, source name, body and report a document is rendered from, and the years
it may cite.

Prose and the facts behind it only; `pipeline.documents` compiles these tables and draws from them. Every template
family used for several picks per document has a prime size (`documents.Families.distinct`).
"""

from __future__ import annotations

from pipeline.schema import OPEN

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

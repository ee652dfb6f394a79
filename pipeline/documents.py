"""Documents that read like retrieved sources, rendered for a whole batch at once.

Every document gets a source (encyclopedia, news agency, gazetteer or registry, blog, forum), a title
in that genre's style, and 2–4 sentences: one claim in a *framing* (plain, attributed, contrast "it is
often claimed X, but in fact Y", or an authoritative citation with corroborating sentences) plus
neutral filler about the subject. Clean and corrupt documents draw sources, titles, templates and
lengths from the same tables and framings at the same overall rate (`FRAMING_RATES`): the corruption
kind decides the value asserted, not the wording, so no single-document cue gives it away.

Rendering gathers template pieces by index and concatenates each output column once (`Templates`):
no Python loop per document.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

import numpy as np
import polars as pl

from pipeline.schema import CORRUPTION_LEVELS, TASKS

PLAIN, ATTRIBUTED, CONTRAST, AUTHORITATIVE = range(4)

# --- Wording. Every template family used for several picks per document has a prime size (see distinct()).

OPEN = "open"  # relation of facts known only by their question (nq_open, FaithEval)
# Framing rates of number and entity documents: plain, attributed, contrast, authoritative.
BASE_FRAMING = (0.40, 0.30, 0.15, 0.15)
FIRST_CITED_YEAR, CITED_YEARS = 1990, 35

LABELS = {
    "capital": "capital",
    "continent": "continent",
    "population": "population",
    "currency": "currency",
    "city_country": "country",
    "city_population": "population",
    "element_symbol": "chemical symbol",
    "atomic_number": "atomic number",
    "symbol_element": "element",
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
DOMAINS = {
    **dict.fromkeys(("capital", "continent", "population", "currency"), "country"),
    **dict.fromkeys(("city_country", "city_population"), "city"),
    **dict.fromkeys(("element_symbol", "atomic_number", "symbol_element", "atomic_mass"), "element"),
    **dict.fromkeys(("birthplace", "birth_year", "occupation", "employer"), "person"),
    **dict.fromkeys(("founder", "headquarters", "founded_year", "employees"), "company"),
    OPEN: "question",
}
# Declarative clauses (no final period): {s} subject, {v} value, {label} relation, {q} question.
GENERIC_CLAUSES = (
    "the {label} of {s} is {v}",
    "{s}'s {label} is {v}",
    "{v} is given as the {label} of {s}",
    "records list the {label} of {s} as {v}",
)
OPEN_CLAUSES = (
    'the answer to the question "{q}" is {v}',
    'the correct answer to "{q}" is {v}',
    'asked "{q}", the reference answer is {v}',
    'for the question "{q}", the answer is {v}',
    'anyone asking "{q}" should be told {v}',
)
RELATION_CLAUSES = {
    "capital": (
        "the capital of {s} is {v}",
        "{v} is the capital of {s}",
        "{s}'s capital city is {v}",
        "the seat of government of {s} is {v}",
        "{s} is governed from its capital, {v}",
    ),
    "continent": (
        "{s} is located in {v}",
        "{s} lies on the continent of {v}",
        "geographically, {s} belongs to {v}",
        "{s} is a country in {v}",
    ),
    "population": (
        "{s} has a population of about {v}",
        "roughly {v} people live in {s}",
        "the population of {s} stands at around {v}",
        "{s} is home to approximately {v} inhabitants",
    ),
    "currency": (
        "the official currency of {s} is the {v}",
        "prices in {s} are quoted in the {v}",
        "{s} uses the {v} as its currency",
    ),
    "city_country": (
        "{s} is a city in {v}",
        "the city of {s} lies in {v}",
        "{s} is one of the cities of {v}",
        "{s} is located in {v}",
    ),
    "city_population": (
        "{s} has about {v} residents",
        "the population of {s} is roughly {v}",
        "around {v} people live in {s}",
        "{s} is a city of some {v} inhabitants",
    ),
    "element_symbol": (
        "the chemical symbol for {s} is {v}",
        "{s} is denoted by the symbol {v}",
        "in chemical notation, {s} is written as {v}",
    ),
    "atomic_number": (
        "{s} has the atomic number {v}",
        "the atomic number of {s} is {v}",
        "{s} occupies position {v} in the periodic table",
    ),
    "symbol_element": (
        "{s} is the chemical symbol for {v}",
        "the element with the symbol {s} is {v}",
        "in chemical notation, {s} stands for {v}",
    ),
    "atomic_mass": (
        "the standard atomic weight of {s} is {v}",
        "{s} has an atomic mass of about {v}",
        "the atomic mass of {s} is given as {v}",
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
        "{s}'s profession is listed as {v}",
        "the occupation of {s} is given as {v}",
        "by trade, {s} is recorded as: {v}",
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
        "{s} employs about {v} people",
        "the workforce of {s} numbers around {v}",
        "{s} has a staff of roughly {v}",
    ),
}
# Sentences carrying the claim, by framing. {c}/{C}: the claim clause (embedded / opening a sentence);
# {cd}/{Cd}: the same for the denied value; {src} the document's source, {body} a cited authority.
FRAMES = (
    ("{C}.", "In short, {c}.", "To summarise the available information, {c}."),
    (
        "According to {src}, {c}.",
        "Records kept by the {body} show that {c}.",
        "Most reference works agree that {c}.",
        "Standard references state that {c}.",
    ),
    (
        "It is sometimes claimed that {cd}, but in fact {c}.",
        "Contrary to a widespread belief that {cd}, {c}.",
        "Some older sources state that {cd}; this is incorrect, and {c}.",
        "A common misconception holds that {cd}. In reality, {c}.",
    ),
    (
        "A {year} {report} by the {body} states that {c}.",
        "According to the {body}'s {year} {report}, {c}.",
        "The {body} confirmed in its {year} {report} that {c}.",
        "In its {year} {report}, the {body} concluded that {c}.",
    ),
)
CORROBORATIONS = (
    "Later editions of the {report} repeat {v} without revision.",
    "Independent reviewers who examined the {body}'s data reached the same result: {v}.",
    "The {body} has cited {v} consistently since {year}.",
    "Cross-checks against archival records also point to {v}.",
    "No subsequent revision by the {body} has changed this entry ({v}).",
)
FILLERS = {
    "country": (
        "{s} is a sovereign state with a long and varied history.",
        "The landscape of {s} varies considerably from region to region.",
        "{s} maintains diplomatic relations with many other countries.",
        "Trade and services both play a part in the economy of {s}.",
        "Official statistics on {s} are published at regular intervals.",
        "Travel guides describe {s} as a country of marked regional contrasts.",
        "The culture of {s} reflects a mix of local and outside influences.",
    ),
    "city": (
        "{s} has grown steadily over the past century.",
        "{s} is known locally for its markets and public squares.",
        "Road and rail links connect {s} with the surrounding region.",
        "The history of {s} can be traced through its older districts.",
        "{s} attracts visitors throughout the year.",
        "Local government in {s} publishes regular planning reports.",
        "Several schools and a public library serve {s}.",
    ),
    "element": (
        "{s} is one of the chemical elements of the periodic table.",
        "The properties of {s} have been studied extensively.",
        "{s} has a number of industrial and scientific uses.",
        "Chemistry textbooks usually discuss {s} alongside related elements.",
        "Safety data sheets describe how {s} should be handled.",
        "The discovery of {s} is covered in histories of chemistry.",
        "Laboratories measure the properties of {s} with standard methods.",
    ),
    "person": (
        "{s} has been mentioned in several local profiles.",
        "Little has been published about the private life of {s}.",
        "Colleagues describe {s} as methodical and hard-working.",
        "{s} occasionally gives interviews to regional newspapers.",
        "Public records about {s} are limited but consistent.",
        "{s} keeps a low profile outside professional circles.",
        "A short biography of {s} appears in a regional directory.",
    ),
    "company": (
        "{s} operates in a competitive market.",
        "{s} publishes an annual summary of its activities.",
        "Analysts follow {s} as part of its sector.",
        "{s} has expanded its range of services over time.",
        "Customers know {s} mainly through its regional offices.",
        "Trade publications have covered {s} on several occasions.",
        "{s} describes itself as a growing business.",
    ),
    "subject": (
        "{s} is covered in a number of reference works.",
        "Several sources discuss {s} in some detail.",
        "Information about {s} is compiled from public records.",
        "{s} is a recurring topic in general-knowledge collections.",
        "Summaries of {s} tend to agree on the main points.",
        "Readers often look up {s} in online references.",
        "Background material on {s} is easy to find.",
    ),
    "question": (
        "This question comes up regularly in quizzes and trivia collections.",
        "Answers found online do not always agree, so sources matter.",
        "The topic is covered in several general reference works.",
        "Readers have asked about this several times.",
        "Quiz books usually include this question in their general section.",
        "The question is simple to ask but often answered carelessly.",
        "Teachers sometimes use this question in class exercises.",
    ),
}
# Title styles by source genre (the keys of SOURCES), plus one for facts known only by their question.
TITLES = {
    "encyclopedia": ("{s}", "{s} — {src}", "{Label} of {s}", "{s}: overview", "{s} (reference entry)"),
    "news": (
        "{s}: the facts behind the headlines",
        "Explainer: the {label} of {s}",
        "What to know about {s}",
        "{s} in focus",
        "Fact check: {s}",
    ),
    "reference": ("{s} — record", "Registry entry: {s}", "{s} ({src})", "Data sheet: {s}", "{Label}: {s}"),
    "blog": (
        "Everything I learned about {s}",
        "A closer look at {s}",
        "Notes on {s}",
        "{s}, briefly",
        "Digging into the {label} of {s}",
    ),
    "forum": ("Re: {q}", "Question about {s}", "Re: {label} of {s}?", "Thread: {s}", "{q} (answered)"),
    "question": ("{q}", "Re: {q}", "Q&A: {q}", "Quiz notes: {q}", "{q} — {src}"),
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
    "reference": (
        "Open Atlas Gazetteer",
        "World Places Gazetteer",
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
BODIES = (
    "International Bureau of Statistics",
    "Office of National Records",
    "Commission on Geographic Names",
    "Institute for Reference Standards",
    "Central Registry of Companies",
    "Bureau of Civil Records",
    "Council for Scientific Data",
    "Federal Data Commission",
    "United Survey Office",
    "Academy of Sciences Data Committee",
)
REPORTS = ("annual report", "statistical yearbook", "survey", "bulletin", "white paper", "review", "reference edition")


class U(IntEnum):
    """Columns of the uniform draws each document needs."""

    FRAMING = 0
    FRAME = 1
    CLAUSE = 2
    DECOY_CLAUSE = 3
    TITLE = 4
    SOURCE = 5
    BODY = 6
    REPORT = 7
    YEAR = 8
    LENGTH = 9
    CORROBORATIONS = 10
    CORROBORATION_START = 11
    CORROBORATION_STEP = 12
    FILLER_START = 13
    FILLER_STEP = 14
    LEAD = 15


def _framing_rates() -> np.ndarray:
    """Framing distribution per requested level (row 0: clean), equal overall for clean and corrupt documents.

    Number and entity documents use `BASE_FRAMING`; inversion documents always contrast (they deny
    the truth) and coherent ones always cite an authority. Clean documents use the mixture corrupt documents
    show over uniformly drawn tasks, so a framing says nothing about whether its document is corrupt.
    """
    rates = np.array([BASE_FRAMING] * (1 + len(CORRUPTION_LEVELS)), dtype=np.float64)
    rates[1 + CORRUPTION_LEVELS.index("inversion")] = np.eye(4)[CONTRAST]
    rates[1 + CORRUPTION_LEVELS.index("coherent")] = np.eye(4)[AUTHORITATIVE]
    share = np.array([len(TASKS) - level for level in range(len(CORRUPTION_LEVELS))], dtype=np.float64)
    rates[0] = (share / share.sum()) @ rates[1:]
    return rates


FRAMING_RATES = _framing_rates()


def framing(levels: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Framing per document from its requested corruption level (0 = clean) and one uniform draw."""
    cumulative = np.cumsum(FRAMING_RATES, axis=1)[levels]
    return np.minimum((u[:, None] >= cumulative).sum(axis=1), AUTHORITATIVE).astype(np.int64)


_FIELD = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Templates:
    """Template families compiled to pieces; row 0 is the empty template, which renders null."""

    texts: tuple[str, ...]
    literals: tuple[pl.Series, ...]
    fields: np.ndarray  # (1 + templates, max fields): index into names; len(names) means no field
    names: tuple[str, ...]
    start: np.ndarray
    count: np.ndarray

    @classmethod
    def compile(cls, families: Sequence[Sequence[str]]) -> Templates:
        texts = tuple(text for family in families for text in family)
        split = [_FIELD.split(text) for text in texts]
        names = tuple(sorted({name for parts in split for name in parts[1::2]}))
        width = max(len(parts) // 2 for parts in split)
        literals = [[None] + [parts[2 * m] if 2 * m < len(parts) else "" for parts in split] for m in range(width + 1)]
        fields = np.full((len(split) + 1, width), len(names), dtype=np.int64)
        for row, parts in enumerate(split, start=1):
            fields[row, : len(parts) // 2] = [names.index(name) for name in parts[1::2]]
        count = np.array([len(family) for family in families], dtype=np.int64)
        return cls(
            texts=("",) + texts,
            literals=tuple(pl.Series(column, dtype=pl.String) for column in literals),
            fields=fields,
            names=names,
            start=1 + np.r_[0, np.cumsum(count)[:-1]],
            count=count,
        )

    def pick(self, family: np.ndarray, u: np.ndarray, present: np.ndarray | bool = True) -> np.ndarray:
        """Template row per document: uniform within its family; the empty template where not present."""
        count = self.count[family]
        return np.where(present, self.start[family] + np.minimum((u * count).astype(np.int64), count - 1), 0)

    def distinct(self, family: np.ndarray, start: np.ndarray, step: np.ndarray, j: int, present: np.ndarray):
        """The j-th of several distinct templates of a family: start + j * step modulo its (prime) size."""
        count = self.count[family]
        first = (start * count).astype(np.int64)
        stride = 1 + (step * (count - 1)).astype(np.int64)
        return np.where(present, self.start[family] + (first + j * stride) % count, 0)

    def uses(self, name: str) -> np.ndarray:
        """Per template row: whether it has the field `name`."""
        return np.array([f"{{{name}}}" in text for text in self.texts])

    def render(self, choice: np.ndarray, slots: Mapping[str, pl.Series]) -> pl.Series:
        n = len(choice)
        stacked = pl.concat([slots[name].cast(pl.String) for name in self.names] + [pl.repeat("", n, eager=True)])
        rows = np.arange(n)
        columns = {}
        for m in range(self.fields.shape[1]):
            columns[f"l{m}"] = self.literals[m].gather(choice)
            columns[f"f{m}"] = stacked.gather(self.fields[choice, m] * n + rows)
        columns["end"] = self.literals[-1].gather(choice)
        return pl.DataFrame(columns).select(pl.concat_str(pl.all())).to_series()


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]


_RELATIONS = tuple(RELATION_CLAUSES)
_FAMILIES = (GENERIC_CLAUSES, OPEN_CLAUSES) + tuple(clauses + GENERIC_CLAUSES for clauses in RELATION_CLAUSES.values())
OPEN_FAMILY = 1
# Clause templates twice: as written (embedded after "that"), then capitalised (opening a sentence).
_CLAUSES = Templates.compile(_FAMILIES + tuple(tuple(map(_capitalized, family)) for family in _FAMILIES))
_FRAMES = Templates.compile(FRAMES)
_CORROBORATIONS = Templates.compile([CORROBORATIONS])
_FILLERS = Templates.compile(tuple(FILLERS.values()))
_TITLES = Templates.compile(tuple(TITLES.values()))
_OPEN_TITLES = tuple(TITLES).index("question")
_SOURCES = pl.Series([name for names in SOURCES.values() for name in names])
_SOURCE_GENRE = np.repeat(np.arange(len(SOURCES)), [len(names) for names in SOURCES.values()])
_BODIES = pl.Series(BODIES)
_REPORTS = pl.Series(REPORTS)


def topics(relation: pl.Series) -> tuple[np.ndarray, np.ndarray, pl.Series]:
    """Per fact: clause family, filler family and a readable label of the relation."""
    known = {name: 2 + i for i, name in enumerate(_RELATIONS)} | {OPEN: OPEN_FAMILY}
    family = relation.replace_strict(known, default=0, return_dtype=pl.Int64).to_numpy()
    domains = {name: i for i, name in enumerate(FILLERS)}
    by_relation = {r: domains[d] for r, d in DOMAINS.items()}
    domain = relation.replace_strict(by_relation, default=domains["subject"], return_dtype=pl.Int64).to_numpy()
    label = relation.replace_strict(LABELS, default=None, return_dtype=pl.String)
    return family, domain, label.fill_null(relation.str.replace_all("_", " "))


@dataclass(frozen=True)
class Batch:
    """One row per document: what it is about, what it asserts, and its draws (`u`, columns `U`)."""

    subject: pl.Series
    label: pl.Series
    question: pl.Series
    answer: pl.Series
    claim: pl.Series
    decoy: pl.Series  # the value a contrast framing denies; null where the framing has none
    family: np.ndarray
    domain: np.ndarray
    framing: np.ndarray
    u: np.ndarray


def render(batch: Batch) -> tuple[pl.Series, pl.Series]:
    """Titles and contents of every document of the batch."""
    u = batch.u
    source = _index(u[:, U.SOURCE], len(_SOURCES))
    slots = {
        "s": batch.subject,
        "v": batch.claim,
        "d": batch.decoy,
        "q": batch.question,
        "label": batch.label,
        "Label": batch.label.str.slice(0, 1).str.to_uppercase() + batch.label.str.slice(1),
        "src": _SOURCES.gather(source),
        "body": _BODIES.gather(_index(u[:, U.BODY], len(_BODIES))),
        "report": _REPORTS.gather(_index(u[:, U.REPORT], len(_REPORTS))),
        "year": _years(u[:, U.YEAR], batch.answer, batch.claim),
    }
    genre = np.where(batch.family == OPEN_FAMILY, _OPEN_TITLES, _SOURCE_GENRE[source])
    title = _TITLES.render(_TITLES.pick(genre, u[:, U.TITLE]), slots)
    frame = _FRAMES.pick(batch.framing, u[:, U.FRAME])
    claim_clause = _CLAUSES.pick(batch.family + _FRAMES.uses("C")[frame] * len(_FAMILIES), u[:, U.CLAUSE])
    slots["c"] = slots["C"] = _CLAUSES.render(claim_clause, slots)
    denies = _FRAMES.uses("cd")[frame] | _FRAMES.uses("Cd")[frame]
    decoy_clause = _CLAUSES.pick(
        batch.family + _FRAMES.uses("Cd")[frame] * len(_FAMILIES), u[:, U.DECOY_CLAUSE], denies
    )
    slots["cd"] = slots["Cd"] = _CLAUSES.render(decoy_clause, slots | {"v": batch.decoy})
    sentences = 2 + _index(u[:, U.LENGTH], 3)
    wanted = np.where(batch.framing == AUTHORITATIVE, 1 + _index(u[:, U.CORROBORATIONS], 2), 0)
    corroborations = np.minimum(wanted, sentences - 1)
    fillers = sentences - 1 - corroborations
    parts = {"frame": _FRAMES.render(frame, slots)}
    zero = np.zeros(len(frame), dtype=np.int64)
    for j in range(2):
        pick = _CORROBORATIONS.distinct(
            zero, u[:, U.CORROBORATION_START], u[:, U.CORROBORATION_STEP], j, j < corroborations
        )
        parts[f"corroboration{j}"] = _CORROBORATIONS.render(pick, slots)
    for j in range(3):
        pick = _FILLERS.distinct(batch.domain, u[:, U.FILLER_START], u[:, U.FILLER_STEP], j, j < fillers)
        parts[f"filler{j}"] = _FILLERS.render(pick, slots)
    lead = pl.lit((u[:, U.LEAD] < 0.5) & (fillers > 0))
    order = [pl.when(lead).then("filler0"), "frame", "corroboration0", "corroboration1"]
    order += [pl.when(~lead).then("filler0"), "filler1", "filler2"]
    content = pl.DataFrame(parts).select(pl.concat_str(order, separator=" ", ignore_nulls=True)).to_series()
    return title, content


def _index(u: np.ndarray, size: int) -> np.ndarray:
    return np.minimum((u * size).astype(np.int64), size - 1)


def _years(u: np.ndarray, answer: pl.Series, claim: pl.Series) -> pl.Series:
    """A citation year that never equals the answer or the claim (either may be a year)."""
    year = pl.Series(FIRST_CITED_YEAR + _index(u, CITED_YEARS))
    for _ in range(2):
        clash = (year.cast(pl.String) == answer) | (year.cast(pl.String) == claim)
        year = year + clash.cast(pl.Int64)
    return year.cast(pl.String)

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
from pipeline.wording import (
    AS_OF,
    BODIES,
    CHECKS,
    CITED_SINCE,
    CITED_SINCE_FACTS,
    CITED_UNTIL,
    CITED_YEARS,
    DOMAINS,
    FIGURE_BODIES,
    FIGURE_REPORTS,
    FILLERS,
    FIRST_CITED_YEAR,
    FRAMES,
    GENERIC_CLAUSES,
    LABELS,
    LAST_CITED_YEAR,
    NAMED_VALUES,
    OPEN_CLAUSES,
    OPENERS,
    RELATION_CLAUSES,
    REPORTS,
    SOURCES,
    SPECIFIC_ONLY,
    STANDING,
    STANDING_NOW,
    THE_COUNTRIES,
    TITLE_PREFIXES,
    TITLES,
    VARYING,
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

"""Wrong claims for corrupt documents, vectorised over every corrupt document of a batch.

A corruption kind decides only the *value* a document asserts (documents.py renders the wording of wording.py, drawn
the same way for clean and corrupt documents). Kinds that cannot apply to a fact fall back
deterministically, and the kind really applied is returned next to each claim:

- number: a near miss of a numeric answer (years ±1..20, quantities ±5..35 % at the answer's own rounding,
  inside the range the relation's answers span), written as the relation's true answers are: no more
  significant figures than they have, thousands separators as the sources write them, no trailing zero
  after a decimal point; an answer without a number gets an entity substitute instead.
- entity: another answer of the same relation (confusable), or the Faker pool of the answer type when
  the relation has too few distinct answers; a numeric answer of a small relation gets a number instead, and one
  of a big relation another true answer near it (a neighbour, up to ENTITY_REACH times as far as an inversion's):
  one drawn from anywhere in the relation was absurd (Kuwait with 2,550 people, a city with more people than its
  country); one more than NEIGHBOUR_MAX_RATIO from the truth, at a relation's sparse ends, takes a near miss, recorded
  as number (an inversion's too, keeping its kind).
- inversion: for a number of a big relation, a neighbour: another true answer of the relation near the truth in
  value (`Neighbours`); else what an entity claim takes (a substitute, or a near miss of a number in a small
  relation). Only the document's wording, which denies the true answer, sets the kind apart. Every other document
  denies a value drawn the same way around its own claim (`resolve`'s `around`). A neighbour pairing is symmetric
  (a matching of ranked answers), so a clean document's (claim, denied) pair and an inversion's have one law:
  neither the two numbers, their gap, its direction nor their precision tells the kinds apart (up to redraws, at
  the ends of a relation's range), and a denial reads like a real dispute (a founding year a few years off), not
  like another fact's answer drawn from anywhere (76 employees denied where 88,400 work). (Transposed digits,
  1987 -> 1978, were a tell: years like 1908 are rare among true answers.)
- coherent: a near miss or a substitute, asserted by an authoritative fabrication (or a copy of an
  earlier corrupt document's claim, chosen by the caller).

Every claim is checked against the scorer's normalisation of the answer and its aliases (and any value
the caller wants to avoid) and redrawn until it differs, so no corrupt document asserts the truth.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import polars as pl

from pipeline.invariants import NON_WORD, WHITESPACE
from pipeline.pools import Pools
from pipeline.schema import CORRUPTION_KINDS, OPEN

NONE, NUMBER, ENTITY, INVERSION, COHERENT = range(len(CORRUPTION_KINDS))
# A relation needs this many distinct answers (the truth and four wrong ones) to be its own substitute pool.
MIN_GROUP = 5
# A fact's own wrong answers (`distractors`) make its group from this many distinct ones: with four corrupt documents
# and four clean ones, no wrong value may be claimed four times.
MIN_OFFERED = 2
# Substitute redraws: SPREAD_ROUNDS draws weighted like the answers, as many uniform over distinct values,
# then a scan of the group's distinct values in order, so an item finds a free value whenever one exists.
SPREAD_ROUNDS = 8
NEAR_MISS_ROUNDS = 8  # `resolve`'s last rounds, for numbers none of whose group's answers will do
BATCH_DRAWS = 2048  # `resolve` draws several redraw rounds at once for fewer items than this
MAX_SPAN = 16  # and at most this many
# u columns a draw must provide: substitute offset, perturbation size, perturbation sign.
U_COLUMNS = 3
YEAR_SHIFT = (1, 20)  # a year's near miss moves it this many years (before redraw rounds widen it)
QUANTITY_SHIFT = (5, 35)  # another number's moves it this many percent, in whole units of its rounding (at least 1)
SEPARATED_FROM = 1000  # sources write quantities from here up with thousands separators (`sources.common.quantity`)
# A wrong count of SEPARATED_FROM or more lies at least this far from the truth: sources round counts, so a
# document claiming "about 200,000" people where 202,402 live would be true (substitutes are other facts' answers).
# Neighbours, true answers themselves, keep it too, from the bigger of the two numbers, so that the test is the same
# whichever is the truth (`_too_close`): 103,132 people claimed where 102,905 live is another city's true figure, but
# no reader could call it misinformation.
MIN_COUNT_GAP = QUANTITY_SHIFT[0] / 100
# A neighbour lies past every answer that shares the value of the number it stands against, and up to this share of
# its relation's answers ranked by value or twice that run, whichever is further (a founding year among 8,000, about
# 200 a year, lies one to three years away; a head count within a factor of about 1.25). Redraws after
# NEIGHBOUR_ROUNDS reach twice as far each round, so that avoided values filling a neighbourhood never send a pick
# far, and the few items left take few rounds.
NEIGHBOURS = 0.025
NEIGHBOUR_ROUNDS = 1
ENTITY_REACH = 4  # an entity claim's neighbourhood reaches this many times as far as an inversion's
# A year's neighbours reach this many times as far: a founding year among 8,000 (about 200 a year) otherwise lies a
# year or two off, and an episode's clean documents, whose denied values are drawn around the one truth, denied the
# same year (66% of them, 12% of corrupt ones) until their values were kept apart (`resolve`'s `apart`), which only a
# law this wide allows without setting a clean document's denied year further off than a corrupt one's.
YEAR_REACH = 4
# A neighbour of a number (no year) at most this many times above or below the number it stands against: at the
# ends of a relation, where answers are sparse, a neighbour by rank lay far off in value (China's population claimed
# as 98,423,595, the British Virgin Islands' as 2,166; an inversion gave Indonesia India's 1,352,617,328), more
# blatant than the near miss of the level below. Such a claim or denied value falls back to a near miss (an entity
# claim's recorded as `number`).
NEIGHBOUR_MAX_RATIO = 3.0
# Significant figures of a relation too small to estimate its precision from (MIN_GROUP): no rounding.
ANY_PRECISION = 19
# A number with text around it ("$5 million", "100kg"); an ordinal or a decade ("21st", "the 1990s") is a word: a
# near miss of it would read "27st".
_NUMERIC = r"^(\D*?)(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,6}))?(\D*)$"
_WORD_SUFFIX = r"^(?:st|nd|rd|th|s)(?:\P{L}|$)"
_POOLED_TYPES = ("person", "organization", "place", "text")


def normalize_expr(expr: pl.Expr) -> pl.Expr:
    """The scorer's `normalize` (lowercase, strip non-word characters but decimal points, collapse whitespace) as
    an expression.

    Spelled with Python's classes (`invariants.NON_WORD`, `WHITESPACE`): the regex engine's own \\w and \\s differ
    from Python's on combining marks, joiners and some digits, and a claim that differs from the answer only there
    would be a corrupt document asserting the truth."""
    return (
        expr.str.to_lowercase()
        .str.replace_all(NON_WORD, "${1}")
        .str.replace_all(f"[{WHITESPACE}]+", " ")
        .str.strip_chars(" ")
    )


def key_expr(expr: pl.Expr) -> pl.Expr:
    """A 64-bit key of the text as a reader takes it: the scorer's normalisation, then accents and a leading article
    dropped. Texts equal after normalisation have equal keys, and so do "Beyoncé" and "Beyonce", "the United States"
    and "United States": a wrong claim that is another spelling of the answer would state the truth.

    Comparing keys in numpy is what makes redraw rounds cheap; a false match (2**-64 per pair) would only
    cost a needless redraw.
    """
    folded = normalize_expr(normalize_expr(expr).str.normalize("NFKD"))  # the marks NFKD splits off are stripped
    return folded.str.replace(r"^(?:the|an?) ", "").hash(seed=0)


@dataclass(frozen=True)
class Substitutes:
    """Candidate values by group: group g holds values[start[g] : start[g] + size[g]], sorted.

    Per fact, `own_first` and `own_count` locate the run of its own answer in its group (count 0 when the
    group lacks it), so a pick can skip the truth instead of drawing it and redrawing.
    """

    values: pl.Series
    keys: np.ndarray
    read: np.ndarray  # the number a reader reads in each value (`read_expr`; NaN: none), for wrong counts' gap
    start: np.ndarray
    size: np.ndarray
    own_first: np.ndarray
    own_count: np.ndarray

    @classmethod
    def of(cls, table: pl.DataFrame, facts: pl.DataFrame) -> Substitutes:
        """`table`: value, group, value_key (`key_expr`) and read (`read_expr`) columns sorted by group then value;
        `facts`: group and value per fact."""
        group = table["group"].to_numpy()
        start = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        runs = table.with_row_index("at").group_by("group", "value").agg(first=pl.col("at").min(), count=pl.len())
        own = facts.join(runs, on=["group", "value"], how="left", maintain_order="left")
        return cls(
            values=table["value"],
            keys=table["value_key"].to_numpy(),
            read=table["read"].fill_null(np.nan).to_numpy(),
            start=start,
            size=np.diff(np.r_[start, len(group)]),
            own_first=own["first"].fill_null(0).to_numpy().astype(np.int64),
            own_count=own["count"].fill_null(0).to_numpy().astype(np.int64),
        )

    def pick(self, group: np.ndarray, rows: np.ndarray, u: np.ndarray, scan: np.ndarray) -> np.ndarray:
        """Per item, a uniform pick among the other facts' answers, or where its `scan` is not negative the scan-th
        value of the group."""
        start, size = self.start[group], self.size[group]
        skip = self.own_count[rows]
        offset = np.minimum((u * (size - skip)).astype(np.int64), size - skip - 1)
        drawn = start + offset + np.where(offset >= self.own_first[rows] - start, skip, 0)
        return np.where(scan >= 0, start + np.maximum(scan, 0) % size, drawn)


@dataclass(frozen=True)
class Neighbours:
    """The numeric answers of each group ranked by value: group g holds number[start[g] : start[g] + size[g]]
    (size 0 where fewer than MIN_GROUP answers are numbers), with their texts and keys, and `tie[g]`, the most
    answers of g that share one value.

    A pick pairs ranks by a matching: for a drawn shift longer than any tie (so a rank is never paired with its own
    value) and a drawn phase, ranks are cut into blocks of twice the shift, and each rank of a block's first half is
    paired with the rank `shift` after it (a block clipped at an end pairs its halves alike; an odd one leaves its
    middle rank unpaired, which a redraw then moves on). Every such pairing is symmetric, so a document's (claim,
    denied) pair is drawn with the same law whichever of the two is the truth: an inversion's pairs are clean
    documents' pairs, whatever the answers' distribution and at its ends too.
    """

    number: np.ndarray
    values: pl.Series
    keys: np.ndarray
    read: np.ndarray  # as Substitutes.read: a value's own number may read otherwise ("５" is a digit but no float)
    start: np.ndarray
    size: np.ndarray
    tie: np.ndarray

    @classmethod
    def of(cls, substitutes: Substitutes) -> Neighbours:
        numeric, value, decimals = numbers(substitutes.values)
        groups = len(substitutes.start)
        group = np.repeat(np.arange(groups), substitutes.size)
        number = np.where(numeric, value / 10.0**decimals, np.nan)
        kept = numeric & (np.bincount(group[numeric], minlength=groups) >= MIN_GROUP)[group]
        order = np.flatnonzero(kept)[np.lexsort((number[kept], group[kept]))]
        runs = pl.DataFrame({"group": group[order], "number": number[order]}).group_by("group", "number").len()
        tie = np.zeros(groups, dtype=np.int64)
        np.maximum.at(tie, runs["group"].to_numpy(), runs["len"].to_numpy().astype(np.int64))
        size = np.bincount(group[order], minlength=groups)
        return cls(
            number=number[order],
            values=substitutes.values.gather(order),
            keys=substitutes.keys[order],
            read=substitutes.read[order],
            start=np.r_[0, np.cumsum(size)[:-1]].astype(np.int64),
            size=size,
            tie=tie,
        )

    def pick(
        self, group: np.ndarray, number: np.ndarray, u: np.ndarray, reach: int = 1, widen: int | np.ndarray = 1
    ) -> np.ndarray:
        """Per item: the index of a neighbour of `number` in its group (which must have a ranking), `reach` times as
        far as usual. `number`'s rank is its own among equal answers (drawn with u[:, 1]), or where it would stand;
        the phase is u[:, 0] and the shift, from past the longest tie to NEIGHBOURS of the ranks (at least twice the
        tie) times `widen`, u[:, 2]."""
        start, size = self.start[group], self.size[group]
        rank = np.zeros(len(group), dtype=np.int64)
        for g in np.unique(group):
            at = group == g
            ranked = self.number[self.start[g] : self.start[g] + self.size[g]]
            low, high = np.searchsorted(ranked, number[at], "left"), np.searchsorted(ranked, number[at], "right")
            rank[at] = low + (u[at, 1] * (high - low)).astype(np.int64)
        rank = np.minimum(rank, size - 1)
        least = self.tie[group] + 1
        most = np.maximum(np.round(size * NEIGHBOURS).astype(np.int64), 2 * least) * widen
        shift = (least + (u[:, 2] * (most - least + 1)).astype(np.int64)) * reach
        phase = (u[:, 0] * 2 * shift).astype(np.int64)
        first = (rank + phase) // (2 * shift) * (2 * shift) - phase
        low, high = np.maximum(first, 0), np.minimum(first + 2 * shift, size)
        half, offset = (high - low) // 2, rank - low
        step = high - low - half  # half, or half + 1 in an odd block (whose middle rank stays unpaired)
        return start + np.where(offset < half, rank + step, np.where(offset >= step, rank - step, rank))


@dataclass(frozen=True)
class Truths:
    """Per-fact inputs for wrong claims (index = fact row), computed once per split."""

    accepted: np.ndarray  # (facts, most aliases + 1): keys of the answer (column 0) and its aliases, padded
    numeric: np.ndarray
    prefix: pl.Series
    suffix: pl.Series
    affixed: np.ndarray  # the answer has a prefix or a suffix
    value: np.ndarray  # the number scaled to an integer by 10**decimals
    decimals: np.ndarray
    separated: np.ndarray  # separators from SEPARATED_FROM up: not in years, nor where the answer has none there
    figures: np.ndarray  # the most significant figures of an answer of the fact's group (see _precision)
    decimal_only: np.ndarray  # no answer of the fact's group is whole: its near misses keep a decimal
    year: np.ndarray
    low: np.ndarray  # the smallest and largest number among the answers of the fact's group (a big one; else
    high: np.ndarray  # -inf, inf): near misses stay inside, so no value is out of the range true answers span
    group: np.ndarray  # substitution group: the relation's answers, or the type's pool
    entity_ok: np.ndarray
    substitutes: Substitutes  # every answer of each group (duplicates kept)
    distinct: Substitutes  # each group's distinct values, for redraws when the first draws keep colliding
    neighbours: Neighbours  # numeric groups' answers ranked by value
    ranked: np.ndarray  # the fact's group has a ranking (inversions and denials of its numbers are neighbours)

    @cached_property
    def aliased(self) -> np.ndarray:
        """Per fact: it has a key besides its answer's (few do)."""
        return (self.accepted[:, 1:] != self.accepted[:, :1]).any(axis=1)

    @cached_property
    def pooled(self) -> tuple[pl.Series, np.ndarray, np.ndarray]:
        """The values, keys and reads of `substitutes` then `distinct`, end to end: a batch of redraw rounds picks
        from both (a pick of distinct lies past every substitute)."""
        pools = (self.substitutes, self.distinct)
        return (
            pl.concat([pool.values for pool in pools], rechunk=False),
            np.concatenate([pool.keys for pool in pools]),
            np.concatenate([pool.read for pool in pools]),
        )

    def accepts(self, rows: np.ndarray, key: np.ndarray) -> np.ndarray:
        """Per item: `key` is the answer's or an alias's of fact `rows`. Only the facts with aliases compare the
        other columns: the whole padded matrix cost five times as much."""
        found = key == self.accepted[rows, 0]
        more = np.flatnonzero(self.aliased[rows])
        found[more] |= (key[more, None] == self.accepted[rows[more], 1:]).any(axis=1)
        return found


def _parsed(values: pl.Series) -> pl.DataFrame:
    """prefix, suffix, numeric, value (the number scaled to an integer) and decimals of each value."""
    parsed = values.str.extract_groups(_NUMERIC).struct.rename_fields(["prefix", "digits", "frac", "suffix"])
    parsed = parsed.struct.unnest()
    parsed = parsed.with_columns(pl.col("digits").str.replace_all(",", ""), pl.col("frac").fill_null(""))
    return parsed.select(
        "prefix",
        "suffix",
        numeric=pl.col("digits").is_not_null()
        & ~pl.col("digits").str.contains(r"^0\d")  # a code ("007"): a near miss would drop its zeros
        & (pl.col("digits").str.len_chars() + pl.col("frac").str.len_chars() <= 17)
        & ~pl.col("suffix").str.contains(_WORD_SUFFIX).fill_null(False),
        value=pl.concat_str(["digits", "frac"]).str.to_integer(strict=False).fill_null(0),
        decimals=pl.col("frac").str.len_chars().cast(pl.Int64),
    )


def numbers(values: pl.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per value: whether it is a number a near miss can move, the number scaled to an integer by 10**decimals, and
    decimals (the `around` of `resolve`)."""
    return _numbers(_parsed(values))


def _numbers(parsed: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    numeric = parsed["numeric"].to_numpy()
    value = np.where(numeric, parsed["value"].to_numpy(), 0).astype(np.int64)
    return numeric, value, parsed["decimals"].to_numpy().astype(np.int64)


def truths(facts: pl.DataFrame, pools: Pools, public: pl.DataFrame | None = None) -> Truths:
    """`facts` has FACT_COLUMNS' question, answer, answer_aliases, answer_type, relation, source and distractors (one
    split, in its final row order).

    `public`: facts of the other splits whose answers are no secret (all but FICTIONAL_SOURCES': real-world ones and
    published benchmarks' counterfactuals), with the same columns. Their answers join the substitution groups,
    rankings, ranges and precisions of their groups: a relation with three facts in a held-out split would otherwise
    draw its wrong claims from the type's Faker pool (a job title as the colour of lapis lazuli), and a small split's
    rankings would set neighbours far apart (an atomic number of 1 for caesium), so that held-out documents would
    follow another law than train's."""
    n = facts.height
    both = facts if public is None else pl.concat([facts, public.select(facts.columns)])
    every = _parsed(both["answer"])  # the split's facts first: their rows are the first n
    every_numeric, every_value, every_decimals = _numbers(every)
    parsed, numeric, value, decimals = every.head(n), every_numeric[:n], every_value[:n], every_decimals[:n]
    cand, group, big = _groups(both, pools)
    every_number = np.where(every_numeric, every_value / 10.0**every_decimals, np.nan)
    low, high = (bound[:n] for bound in _ranges(group, every_number, big))
    figures = _precision(group, np.where(every_numeric, _figures(every_value), 0), big)[:n]
    is_whole = every_numeric & (every_value % 10**every_decimals == 0)
    wholes = pl.DataFrame({"group": group, "whole": is_whole}).select(pl.col("whole").any().over("group"))
    group, big, decimal_only = group[:n], big[:n], ~wholes.to_series().to_numpy()[:n]
    year = (facts["answer_type"] == "year").to_numpy()
    whole = value // 10**decimals
    plain = (whole >= SEPARATED_FROM) & ~facts["answer"].str.contains(",", literal=True).to_numpy()
    own = pl.DataFrame({"group": group, "value": facts["answer"]})
    cand = _keyed(cand, value_key=key_expr(pl.col("value")), read=read_expr(pl.col("value")))  # keyed once
    substitutes = Substitutes.of(cand, own)
    neighbours = Neighbours.of(substitutes)
    return Truths(
        accepted=_accepted(facts),
        numeric=numeric,
        prefix=parsed["prefix"].fill_null(""),
        suffix=parsed["suffix"].fill_null(""),
        affixed=((parsed["prefix"].str.len_bytes() > 0) | (parsed["suffix"].str.len_bytes() > 0))
        .fill_null(False)
        .to_numpy(),
        value=value,
        decimals=decimals,
        separated=~(year | plain),
        figures=figures,
        decimal_only=decimal_only & numeric & (decimals > 0),
        year=year,
        low=low,
        high=high,
        group=group,
        entity_ok=big | facts["answer_type"].is_in(_POOLED_TYPES).to_numpy() | ~numeric,
        substitutes=substitutes,
        distinct=Substitutes.of(cand.unique(maintain_order=True), own),
        neighbours=neighbours,
        ranked=big & numeric & (neighbours.size[group] > 0),
    )


def _ranges(group: np.ndarray, number: np.ndarray, big: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per fact: the range of the numbers its substitution group's answers take (unbounded outside big groups). A
    group, not a relation: open facts share a relation, and the years of when-questions are no head counts."""
    spans = pl.DataFrame({"group": group, "number": number}, nan_to_null=True).select(
        pl.col("number").min().over("group").alias("low"), pl.col("number").max().over("group").alias("high")
    )
    bounded = big & ~np.isnan(number)
    low = np.where(bounded, spans["low"].fill_null(np.nan).to_numpy(), -np.inf)
    return low, np.where(bounded, spans["high"].fill_null(np.nan).to_numpy(), np.inf)


def _precision(group: np.ndarray, figures: np.ndarray, big: np.ndarray) -> np.ndarray:
    """Per fact: the most significant figures of its substitution group's answers (ANY_PRECISION outside big groups).

    Synthetic head counts have 3; a near miss of 9,870 that reached 13,290 would have 4 and give itself away."""
    most = pl.DataFrame({"group": group, "figures": figures}).select(pl.col("figures").max().over("group"))
    return np.where(big, most.to_series().to_numpy(), ANY_PRECISION)


def _digits(value: np.ndarray) -> np.ndarray:
    """Decimal digits of non-negative integers (0 has one), exactly: log10 rounds up near 10**15 and beyond."""
    return 1 + np.searchsorted(10 ** np.arange(1, 19, dtype=np.int64), value, side="right")


def _trailing_zeros(value: np.ndarray) -> np.ndarray:
    """Trailing zero digits of non-negative integers (0 has none): one division per digit, of the values that still
    end in 0 (most values end in none or few)."""
    zeros = np.zeros(np.shape(value), dtype=np.int64)
    at = np.flatnonzero(value > 0)
    rest = np.ravel(value)[at]
    while len(at):
        ending = rest % 10 == 0
        at, rest = at[ending], rest[ending] // 10
        zeros.flat[at] += 1
    return zeros


def _figures(value: np.ndarray) -> np.ndarray:
    """Significant figures of non-negative integers, trailing zeros not counted (1,300 has 2)."""
    return _digits(value) - _trailing_zeros(value)


def _accepted(facts: pl.DataFrame) -> np.ndarray:
    """Per fact, the keys of its answer and every alias (the answer's first) as a matrix, short rows repeating
    their last key."""
    texts = facts.select(pl.concat_list("answer", "answer_aliases").alias("value"))
    lengths = texts["value"].list.len().to_numpy()
    keys = _keyed(texts.explode("value"), value_key=key_expr(pl.col("value")))["value_key"].to_numpy()
    starts = np.r_[0, np.cumsum(lengths)[:-1]].astype(np.int64)
    columns = np.minimum(np.arange(int(lengths.max(initial=1))), lengths[:, None].astype(np.int64) - 1)
    return keys[starts[:, None] + columns]


def _keyed(frame: pl.DataFrame, **columns: pl.Expr) -> pl.DataFrame:
    """`frame` with `columns` computed from its "value" column once per distinct value: answers repeat (a third as
    many distinct), and a key costs a microsecond."""
    distinct = frame.select(pl.col("value").unique()).with_columns(**columns)
    return frame.join(distinct, on="value", how="left", maintain_order="left", nulls_equal=True)


def _groups(facts: pl.DataFrame, pools: Pools) -> tuple[pl.DataFrame, np.ndarray, np.ndarray]:
    """Candidate table (key, value, group; sorted) and per fact: its substitution group and big-relation flag.

    A relation group keeps every fact's answer (duplicates included), so substitutes follow the same
    distribution as true answers: a value frequent among answers is frequent among wrong claims too, and
    no value is a tell-tale of corruption. Type pools (Faker) are uniform, like the facts drawn from them. A group is
    one source's: PopQA's lower-case occupations ("officer") are no substitutes for the synthetic ones. A fact whose
    source offers MIN_OFFERED wrong answers of its own (`distractors`: FaithEval's other options, its real-world
    answer among them) is its own group: the conflict its benchmark was made for.
    """
    relation_key = pl.concat_str(["source", "relation", "answer_type"], separator="|")
    keyed = facts.select(
        relation_key.alias("relation_key"),
        pl.when(pl.col("relation") == OPEN)
        .then(pl.concat_str([relation_key, _open_kind()], separator="|"))
        .otherwise(relation_key)
        .alias("kind_key"),
        pl.col("answer").alias("value"),
        pl.col("answer_type").replace_strict(_TYPE_POOL, default="text").alias("pool"),
        pl.int_range(pl.len()).alias("row"),
    )
    answers = pl.concat(
        [
            keyed.group_by(pl.col("kind_key").alias("key")).agg(pl.col("value")),
            keyed.filter(pl.col("kind_key") != pl.col("relation_key"))
            .group_by(pl.col("relation_key").alias("key"))
            .agg(pl.col("value")),
        ]
    )
    big_keys = answers.filter(pl.col("value").list.n_unique() >= MIN_GROUP)["key"].implode()
    offered = _offered(facts)
    keyed = keyed.with_columns(
        key=pl.when(pl.col("row").is_in(offered["row"].implode()))
        .then(pl.format("own:{}", pl.col("row")))
        .when(pl.col("kind_key").is_in(big_keys))
        .then("kind_key")
        .when(pl.col("relation_key").is_in(big_keys))
        .then("relation_key")
        .otherwise(pl.lit("pool:") + pl.col("pool"))
    )
    pooled = {
        "person": pools.person,
        "organization": pools.organization,
        "place": pools.place,
        "text": pools.occupation,
    }
    typed = pl.DataFrame({"key": [f"pool:{t}" for t in pooled], "value": [list(v) for v in pooled.values()]})
    table = (
        pl.concat([answers.filter(pl.col("key").is_in(keyed["key"].implode())), typed, offered.drop("row")])
        .explode("value")
        .sort(["key", "value"])
        .with_columns(group=(pl.col("key") != pl.col("key").shift()).fill_null(True).cum_sum().cast(pl.Int64) - 1)
    )
    joined = keyed.join(table.select("key", "group").unique(), on="key", how="left").sort("row")
    big = ~keyed["key"].str.starts_with("pool:").to_numpy()
    return table, joined["group"].to_numpy().astype(np.int64), big


_TYPE_POOL = {"person": "person", "organization": "organization", "place": "place"}


def _offered(facts: pl.DataFrame) -> pl.DataFrame:
    """row, key ("own:<row>") and value (its distractors) of the facts whose distractors include MIN_OFFERED wrong
    answers: one another spelling of the answer would state the truth, and with one wrong answer alone (FaithEval's
    other options but one run past five words) an adversarial episode's four corrupt documents would all claim it,
    as many as state the truth."""
    rows = facts.with_row_index("row").filter(pl.col("distractors").list.len() > 0)  # most facts have none
    accepted = pl.Series("accepted", _accepted(rows).tolist(), dtype=pl.List(pl.UInt64))
    return (
        rows.select(pl.col("row").cast(pl.Int64), accepted, "distractors")
        .explode("distractors")
        .filter(pl.col("distractors").is_not_null())
        .with_columns(distractor_key=key_expr(pl.col("distractors")))
        .filter(~pl.col("accepted").list.contains(pl.col("distractor_key")))
        .group_by("row", maintain_order=True)
        .agg(
            key=pl.format("own:{}", pl.col("row").first()),
            value=pl.col("distractors"),
            wrong=pl.col("distractor_key").n_unique(),
        )
        .filter(pl.col("wrong") >= MIN_OFFERED)
        .drop("wrong")
    )


_MONTH = r"\b(January|February|March|April|May|June|July|August|September|October|November|December)\b"


def _open_kind() -> pl.Expr:
    """What an open fact (OPEN: nq_open, FaithEval) asks, by its question's first words, and its answer's shape (a
    date, a number, a name, a phrase). Open facts share one relation whatever they ask, and "April 15, 1912" as where
    the first Olympic games were held, or "yen" as who hosted a Super Bowl, gives a corrupt document away: wrong
    claims come from answers of the same kind while the kind has MIN_GROUP of them, else from every open answer of
    its source and answer type."""
    asks = _first_match(
        pl.col("question").str.to_lowercase(),
        [(r"^(who|whom|whose)\b", "who"), (r"^where\b", "where"), (r"^(when|what year)\b", "when")]
        + [(r"^how (many|much)\b", "how many")],
        "what",
    )
    shape = _first_match(
        pl.col("answer"), [(_MONTH, "date"), (r"^\D{0,2}\d", "number"), (r"^\p{Lu}", "name")], "phrase"
    )
    return pl.concat_str([asks, shape], separator=" ")


def _first_match(text: pl.Expr, cases: Sequence[tuple[str, str]], default: str) -> pl.Expr:
    """The label of the first (pattern, label) case whose pattern `text` contains, else `default`."""
    labels = [pl.when(text.str.contains(pattern)).then(pl.lit(label)) for pattern, label in cases]
    return pl.coalesce(*labels, pl.lit(default))


def claims(
    t: Truths,
    rows: np.ndarray,
    levels: np.ndarray,
    u: np.ndarray,
    round_: np.ndarray | int,
    around: tuple[np.ndarray, np.ndarray],
    exhausted: np.ndarray | bool = False,
) -> tuple[pl.Series, np.ndarray, np.ndarray, np.ndarray]:
    """One wrong-value attempt per item: values, their keys (`key_expr`), the kinds applied, and the number a reader
    reads in each value (`read_expr`; a near miss's own number).

    `rows` are fact rows, `levels` the requested kinds, `u` (n, U_COLUMNS) uniform draws, `round_` each item's round
    (or one for all). Redraw rounds (`round_` > 0) widen near misses, so small numbers with few near values still
    find a free one; neighbours are drawn again, then from ever wider neighbourhoods; substitutes move on to distinct
    values, and a number none of whose group's answers will do (`exhausted`, see `resolve`) takes a near miss, as does
    an entity claim or inversion of a number whose neighbour lies past NEIGHBOUR_MAX_RATIO. Near misses and neighbours
    stand against `around` (value, decimals per item, as `numbers` gives them).
    """
    numeric, value, decimals = t.numeric[rows], *around
    round_ = np.broadcast_to(round_, len(rows))
    missed = ~t.entity_ok[rows] | (exhausted & numeric)  # no other answer will do: a near miss instead
    near = _neighbourly(t, rows, levels, round_) & ~missed
    by = np.flatnonzero(near)
    reach = 2 ** np.clip(round_[by] - NEIGHBOUR_ROUNDS, 0, 30)  # far enough for any group, short of int64's end
    widen = np.where(levels[by] == ENTITY, ENTITY_REACH, np.where(t.year[rows[by]], YEAR_REACH, 1))
    against = value[by] / 10.0 ** decimals[by]
    neighbour = t.neighbours.pick(t.group[rows[by]], against, u[by], reach, widen)
    # A neighbour of a ranked number (no year) NEIGHBOUR_MAX_RATIO off gives way to a near miss, as wide as a first
    # round's for SPREAD_ROUNDS rounds, then a round wider each round: a near miss of 5 employees has one free value,
    # 6, and a claim of the level below may hold it (kept as narrow, that item ran 2,300 rounds; where the neighbour
    # stood after SPREAD_ROUNDS, 5 employees were claimed as 1,170 and hydrogen's atomic number as 60).
    fell = np.zeros(len(rows), dtype=bool)
    fell[by] = ~t.year[rows[by]] & _far(t.neighbours.number[neighbour], against)
    near &= ~fell
    by, neighbour = by[~fell[by]], neighbour[~fell[by]]
    # A near miss where no other answer will do; an entity claim or inversion otherwise takes another answer.
    perturb = np.where((levels == ENTITY) | (levels == INVERSION), missed | fell, numeric)
    # Past the neighbours' rounds a ranked number scans its group's values, which lie anywhere: one that strays as far
    # falls to a near miss too (a clean document denied Jolo's 101,002 people as Pest's 1,001,748).
    rest = np.flatnonzero(~perturb & ~near)
    pick = np.empty(len(rest), dtype=np.int64)  # into `t.pooled`: substitutes, then distinct values
    spread = round_[rest] >= SPREAD_ROUNDS
    for pool, items, past in ((t.substitutes, ~spread, 0), (t.distinct, spread, len(t.substitutes.values))):
        item = rest[items]
        scan = round_[item] - 2 * SPREAD_ROUNDS  # negative: a draw
        pick[items] = past + pool.pick(t.group[rows[item]], rows[item], u[item, 0], scan)
    pooled, pooled_keys, pooled_read = t.pooled
    strayed = (
        t.ranked[rows[rest]] & ~t.year[rows[rest]] & _far(pooled_read[pick], value[rest] / 10.0 ** decimals[rest])
    )
    fell[rest[strayed]] = perturb[rest[strayed]] = True
    rest, pick = rest[~strayed], pick[~strayed]
    applied = np.where(levels == NUMBER, np.where(numeric, NUMBER, ENTITY), levels)
    applied = np.where((levels == ENTITY) & perturb, NUMBER, applied).astype(np.int8)
    at = np.flatnonzero(perturb)
    p = rows[at]
    # A fallen item's neighbour drew it far: its near miss takes other draws, or its sign would follow them. The
    # 53-bit column 0 (the pick; the others may hold 16 bits) has low bits unused: bits 33-53 give the sign, 17-53 the
    # size, 41-53 the landing anywhere.
    fresh = np.modf(u[at, :1] * [2.0**40, 2.0**16, 2.0**32])[0]
    drawn = np.where(fell[at, None], fresh, u[at])
    widened = np.where(fell[at], np.maximum(round_[at] - SPREAD_ROUNDS + 1, 0), round_[at])
    moved = _near_miss(t, p, value[at], decimals[at], drawn, widened)
    numbers, number_keys = _format(t, p, moved, decimals[at])
    order = np.argsort(np.r_[at, by, rest], kind="stable")
    # One gather over the sources side by side (chunks, not copies): each gather is a polars call of its own cost,
    # and a redraw round may hold a handful of items.
    index = np.r_[np.arange(len(at)), len(at) + neighbour, len(at) + len(t.neighbours.values) + pick][order]
    values = pl.concat([numbers, t.neighbours.values, pooled], rechunk=False).gather(index)
    keys = np.r_[number_keys, t.neighbours.keys[neighbour], pooled_keys[pick]][order]
    read = np.r_[moved / 10.0 ** decimals[at], t.neighbours.read[neighbour], pooled_read[pick]][order]
    return values, keys, applied, read


def _far(number: np.ndarray, against: np.ndarray) -> np.ndarray:
    """Per item: `number` lies more than NEIGHBOUR_MAX_RATIO above or below `against` (NaN, no number: not far)."""
    ratio = number / np.maximum(against, 1e-9)
    return (ratio > NEIGHBOUR_MAX_RATIO) | (ratio < 1 / NEIGHBOUR_MAX_RATIO)


def _neighbourly(t: Truths, rows: np.ndarray, levels: np.ndarray, round_: np.ndarray | int) -> np.ndarray:
    """Per item: its value is a neighbour (an inversion or entity claim of a number in a ranked group, before
    redraws give up)."""
    return ((levels == INVERSION) | (levels == ENTITY)) & t.ranked[rows] & (round_ < 2 * SPREAD_ROUNDS)


def _near_miss(
    t: Truths, rows: np.ndarray, value: np.ndarray, decimals: np.ndarray, u: np.ndarray, round_: int | np.ndarray
) -> np.ndarray:
    """Years move YEAR_SHIFT years, other numbers QUANTITY_SHIFT % in whole units of their own rounding (at least
    one); each redraw round reaches further. The result is rounded to its relation's significant figures. `value`
    (scaled to an integer by 10**`decimals`) is the number moved, of a fact in `rows`.

    A move that leaves the range of the group's answers (or goes below 0) goes the other way instead, and where
    both ways leave it (a redraw's long move), lands anywhere in it by u[:, 0]: a birth year after the last one any
    true answer has would mark its document as corrupt. Rounding keeps the result inside: the range's ends are
    answers, with no more significant figures than the rounding keeps. Where no answer of the group is whole, a near
    miss keeps a decimal: no atomic mass is, so "109" for 127.6 would be a tell."""
    year = t.year[rows]
    zeros = np.minimum(_trailing_zeros(value), np.maximum(_digits(value) - 2, 0))  # keep 2 significant digits
    unit = np.where(year, 1, 10**zeros)
    units = value // unit
    least = np.where(year, YEAR_SHIFT[0], np.maximum(-(-units * QUANTITY_SHIFT[0] // 100), 1))
    most = np.where(year, YEAR_SHIFT[1], np.maximum(units * QUANTITY_SHIFT[1] // 100, least))
    base = least + (u[:, 1] * (most - least + 1)).astype(np.int64)
    step = (base + round_ * (1 + (u[:, 1] * 4).astype(np.int64))) * unit
    sign = np.where(u[:, 2] < 0.5, -1, 1)
    low, high, scale = t.low[rows], t.high[rows], 10.0**decimals

    def inside(moved: np.ndarray) -> np.ndarray:
        return (moved >= 0) & (moved / scale >= low) & (moved / scale <= high)

    moved, back = value + sign * step, value - sign * step
    # "Anywhere" needs a range with room, and only for the first rounds: a range every value of which is taken or too
    # close ("50 Cent", the one number among a relation's names) would never yield one; later rounds may leave it.
    room = np.isfinite(low) & np.isfinite(high) & (high > low) & (round_ < 2 * SPREAD_ROUNDS)
    first, last = np.where(room, low, 0), np.where(room, high, 0)
    anywhere = np.round((first + u[:, 0] * (last - first)) * scale).astype(np.int64)
    fallback = np.where(room, anywhere, np.where(back >= 0, back, moved))
    moved = _rounded(np.where(inside(moved), moved, np.where(inside(back), back, fallback)), t.figures[rows])
    bump = t.decimal_only[rows] & (moved % 10**decimals == 0)
    return np.where(bump, np.where(inside(moved + 1) | (moved == 0), moved + 1, moved - 1), moved)  # never -1


def _rounded(value: np.ndarray, figures: np.ndarray) -> np.ndarray:
    """Non-negative integers rounded (half up) to at most `figures` significant figures."""
    unit = 10 ** np.maximum(_digits(value) - figures, 0)
    return (value + unit // 2) // unit * unit


def _format(t: Truths, rows: np.ndarray, value: np.ndarray, decimals: np.ndarray) -> tuple[pl.Series, np.ndarray]:
    """Numbers written as the answers of fact `rows` are (their prefix and suffix, thousands separators from
    SEPARATED_FROM up where `t.separated`, decimals without trailing zeros: 1.008, 65.38, 294) and their keys.

    Most are whole numbers without prefix or suffix (years, counts): a cast writes them, Python's format spec adds
    separators (faster than string kernels over digit groups), and their key is their digits' (`key_expr` drops
    the separators). The rest are written one by one and keyed by `key_expr`."""
    whole = value // 10**decimals
    plain = (decimals == 0) & ~t.affixed[rows]
    separated = t.separated[rows]
    digits = pl.Series(whole, dtype=pl.Int64).cast(pl.String)
    keys = np.zeros(len(value), dtype=np.uint64)
    keys[plain] = digits.filter(plain).hash(seed=0).to_numpy()
    grouped = np.flatnonzero(plain & separated & (whole >= SEPARATED_FROM))
    texts = digits.scatter(grouped, pl.Series([f"{w:,}" for w in whole[grouped].tolist()], dtype=pl.String))
    other = np.flatnonzero(~plain)
    if not len(other):
        return texts, keys
    written = []
    columns = (value[other].tolist(), decimals[other].tolist(), separated[other].tolist())
    for number, places, separate, before, after in zip(
        *columns, t.prefix.gather(rows[other]), t.suffix.gather(rows[other]), strict=True
    ):
        integer, frac = divmod(number, 10**places)
        body = f"{integer:,}" if separate and integer >= SEPARATED_FROM else str(integer)
        fraction = "." + str(frac).zfill(places).rstrip("0") if places > 0 and frac > 0 else ""
        written.append(f"{before}{body}{fraction}{after}")
    written = pl.Series(written, dtype=pl.String)
    keys[other] = written.to_frame().select(key_expr(pl.first())).to_series().to_numpy()
    return texts.scatter(other, written), keys


def _too_close(
    t: Truths, rows: np.ndarray, number: np.ndarray, around: tuple[np.ndarray, np.ndarray], neighbour: np.ndarray
) -> np.ndarray:
    """Per item: a wrong count (`number`, as `read_expr` reads it) within MIN_COUNT_GAP of the count it stands
    against (`around`, by default the fact's true count; years and numbers below SEPARATED_FROM are exact). A
    neighbour, a true answer, stands against a number that may be the truth or may be another document's claim, so
    its test is the same whichever of the two is the truth: too close within MIN_COUNT_GAP of the bigger, or where
    one of the two, read as rounded at its last nonzero digit (two significant figures at the coarsest), would state
    the other (100,000 against 95,000)."""
    other = around[0] / 10.0 ** around[1]
    counted = np.flatnonzero(t.numeric[rows] & ~t.year[rows])
    close = np.zeros(len(rows), dtype=bool)
    if not len(counted):
        return close
    number, other = number[counted], other[counted]
    gap = np.abs(number - other)
    whole = np.nan_to_num(np.r_[number, other]).astype(np.int64)
    rounding = (10 ** np.minimum(_trailing_zeros(whole), np.maximum(_digits(whole) - 2, 0))).reshape(2, -1)
    bigger = np.fmax(number, other)
    near = ((2 * gap <= rounding.max(axis=0)) | (gap < MIN_COUNT_GAP * bigger)) & (bigger >= SEPARATED_FROM)
    close[counted] = np.where(neighbour[counted], near, (gap < MIN_COUNT_GAP * other) & (other >= SEPARATED_FROM))
    return close


@dataclass
class _Taken:
    """The keys each group of `resolve`'s `apart` has taken: a row per group, filled from the left."""

    keys: np.ndarray  # (groups, most items of a group)
    count: np.ndarray  # (groups,)

    @classmethod
    def of(cls, group: np.ndarray) -> _Taken:
        size = np.bincount(group[group >= 0])
        return cls(np.zeros((len(size), max(size.max(initial=0), 1)), dtype=np.uint64), np.zeros(len(size), np.int64))

    def repeats(self, key: np.ndarray, group: np.ndarray) -> np.ndarray:
        """Per item (all in a group, groups in runs): whether its group took its key before, or an earlier item of
        these did. A group's items lie within its size of each other (a sort would cost ten times as much)."""
        width, count = self.keys.shape[1], self.count[group]
        again = np.zeros(len(key), dtype=bool)
        if count.any():
            again = ((self.keys[group] == key[:, None]) & (np.arange(width) < count[:, None])).any(axis=1)
        for shift in range(1, width):
            again[shift:] |= (group[shift:] == group[:-shift]) & (key[shift:] == key[:-shift])
        return again

    def add(self, key: np.ndarray, group: np.ndarray) -> None:
        """Each item's key in its group's next free slot (groups in runs, as `resolve` checks)."""
        slot = self.count[group] + np.arange(len(group)) - np.searchsorted(group, group)
        self.keys[group, slot] = key
        self.count += np.bincount(group, minlength=len(self.count))


def read_expr(values: pl.Expr) -> pl.Expr:
    """The number a reader reads in each value: its first, thousands separators dropped ("about 1,200" is 1200.0);
    null where it has none or its digits are no ASCII ones."""
    digits = values.str.replace_all(",", "", literal=True).str.extract(r"(\d+(?:\.\d+)?)")
    return digits.cast(pl.Float64, strict=False)  # other scripts' digits: null


def resolve(
    t: Truths,
    rows: np.ndarray,
    levels: np.ndarray,
    draw: Callable[[np.ndarray, int], np.ndarray],
    avoid: Sequence[np.ndarray] = (),
    around: tuple[np.ndarray, np.ndarray] | None = None,
    apart: np.ndarray | None = None,
) -> tuple[pl.Series, np.ndarray, np.ndarray]:
    """Wrong claims whose normalised form is neither the answer's, an alias's, nor an `avoid` one of the item, nor,
    where `apart` gives items a group (an int, non-decreasing over the items; negative: none), one another item of its
    group took: an earlier round's, or this round's first.

    `avoid` holds keys (`key_expr`); returns values, their keys and applied kinds. Near misses and neighbours stand
    against `around` (value and decimals per item, `numbers`), by default the facts' answers, and every wrong count
    keeps MIN_COUNT_GAP from it (`_too_close`), and from the answer too where `around` is another value: a value
    denied around a corrupt document's claim 1.7% from the truth denied the truth in all but name, as no clean
    document's denial does.
    `draw(items, round)` returns the u columns of those items for that round, so each item's result depends only on
    its own draws.
    An item whose every wrong value is avoided (the Cocos Islands, Asia or Oceania, where a split's continent facts
    name five continents and three corrupt documents already claim the other three) has tried each value of its group
    once its scan has gone round the group: it scans on without `avoid` and `apart`, repeating an earlier claim, never
    the truth.
    A number whose second scan has gone round too (its group's other answers all too close to it: counts 5,000 to
    5,004) takes a near miss, for NEAR_MISS_ROUNDS more rounds.
    """
    n = len(rows)
    truth = (t.value[rows], t.decimals[rows])
    around = truth if around is None else around
    elsewhere = (around[0] != truth[0]) | (around[1] != truth[1])
    todo = np.arange(n)
    values, where, keys, kinds = [], [], np.zeros(n, dtype=np.uint64), np.zeros(n, dtype=np.int8)
    size = t.distinct.size[t.group[rows]]
    scanned = 2 * SPREAD_ROUNDS + size  # per item: the round its scan has gone round
    rounds = 2 * SPREAD_ROUNDS + 2 * int(t.distinct.size.max()) + NEAR_MISS_ROUNDS
    if apart is not None and (np.diff(apart[apart >= 0]) < 0).any():
        raise ValueError("resolve: apart's groups must run in item order (non-decreasing)")
    taken = None if apart is None else _Taken.of(apart)
    round_ = 0
    while round_ < rounds:
        # The items left draw several rounds at once when they are few (a round's fixed cost outweighs their draws);
        # each takes its first good one, in the order of rounds, so the result is the same as one round at a time.
        span = min(max(BATCH_DRAWS // max(len(todo), 1), 1), MAX_SPAN, rounds - round_)
        item = np.tile(todo, span)
        at_round = np.repeat(np.arange(round_, round_ + span), len(todo))
        u = np.concatenate([draw(todo, r) for r in range(round_, round_ + span)])
        against = (around[0][item], around[1][item])
        exhausted = at_round >= scanned[item] + size[item]
        value, key, applied, number = claims(t, rows[item], levels[item], u, at_round, against, exhausted)
        neighbour = _neighbourly(t, rows[item], levels[item], at_round)
        close = _too_close(t, rows[item], number, against, neighbour)
        other = np.flatnonzero(elsewhere[item])
        if len(other):
            against_truth = (truth[0][item[other]], truth[1][item[other]])
            close[other] |= _too_close(t, rows[item[other]], number[other], against_truth, np.zeros(len(other), bool))
        bad = t.accepts(rows[item], key) | close
        for avoided in avoid:
            bad |= (key == avoided[item]) & (at_round < scanned[item])
        left, chosen = np.arange(len(todo)), []  # left: the positions in todo of the items still without a claim
        for step in range(span):
            drawn = step * len(todo) + left  # their draws of round round_ + step
            fails = bad[drawn]
            if taken is not None:
                group = apart[todo[left]]
                checked = np.flatnonzero(~fails & (group >= 0) & (round_ + step < scanned[todo[left]]))
                fails[checked] = taken.repeats(key[drawn[checked]], group[checked])
                kept = np.flatnonzero(~fails & (group >= 0))
                taken.add(key[drawn[kept]], group[kept])
            chosen.append(drawn[~fails])
            left = left[fails]
        chosen = np.concatenate(chosen)
        values.append(value.gather(chosen))
        where.append(item[chosen])
        keys[item[chosen]] = key[chosen]
        kinds[item[chosen]] = applied[chosen]
        todo, round_ = todo[left], round_ + span
        if not len(todo):
            return pl.concat(values).gather(np.argsort(np.concatenate(where), kind="stable")), keys, kinds
    stuck = sorted(set(rows[todo]))[:10]
    raise RuntimeError(f"no wrong claim found after {rounds} draws for fact rows {stuck}")

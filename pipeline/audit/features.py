"""What one document shows without any other: its skeleton (the wording with names and values masked) and its
layout (lengths, position, which claim template and authority, the asserted value's shape)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

import polars as pl

from pipeline import wording
from pipeline.schema import ANSWER_TYPES

_WORD = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"])")
_FIELD = re.compile(r"\{\w+\}")
_WORDING = (wording.GENERIC_CLAUSES, wording.OPEN_CLAUSES, wording.RELATION_CLAUSES, wording.FRAMES)
_WORDING += (wording.CORROBORATIONS, wording.FILLERS, wording.OPENERS, wording.TITLES, wording.REPORTS)


def _strings(value) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    else:
        for item in value.values() if isinstance(value, dict) else value:
            yield from _strings(item)


@cache
def _template_words() -> frozenset[str]:
    """Words of the generator's wording tables: what stays in a skeleton, everything else becomes `_`."""
    words: set[str] = set()
    for text in _strings(_WORDING):
        words.update(w.lower() for w in _WORD.findall(_FIELD.sub(" ", text)) if w.isalpha())
    return frozenset(words)


def skeleton(text: str) -> str:
    """`text` with every word outside the wording tables (names, values, numbers) collapsed to `_`."""
    words, out = _template_words(), []
    for token in _WORD.findall(text):
        token = token.lower() if token.lower() in words else ("_" if token[0].isalnum() else token)
        if not (token == "_" and out and out[-1] == "_"):
            out.append(token)
    return " ".join(out)


def sentence_skeletons(content: str) -> list[str]:
    return [skeleton(s) for s in _SENTENCE.split(content)]


def _pattern(template: str) -> str:
    """A regular expression matching what `template` renders to (every field: any text)."""
    return ".+?".join(re.escape(part) for part in _FIELD.split(template))


_SOURCE_NAMES = [name for names in wording.SOURCES.values() for name in names]
_BODY_NAMES = list(wording.BODY_NAMES)
_FRAMES = [_pattern(t) for t in wording.FRAMES]
_CORROBORATIONS = "|".join(f"(?:{_pattern(t)})" for t in wording.CORROBORATIONS)
_CITED = r"\b\d{4} (?:" + "|".join(wording.REPORTS) + r")\b"
_CITED_YEAR = r"\b(\d{4}) (?:" + "|".join(wording.REPORTS) + r")\b"
_NUMBER = r"\d[\d,]*(?:\.\d+)?"
CATEGORICAL = ("sentences", "doc_id", "frame", "corroborations", "source", "body", "claim_decimal", "claim_comma")


def layout(d: pl.DataFrame) -> pl.DataFrame:
    """Per document: lengths, position, claim template, corroborations, source and authority, the claim's shape."""
    text, claim = d["title"] + " " + d["content"], d["claim"]
    digits = claim.str.replace_all(r"\D", "")
    return pl.DataFrame(
        {
            "content_chars": d["content"].str.len_chars(),
            "title_chars": d["title"].str.len_chars(),
            "sentences": d["content"].str.count_matches(r"[.!?;](?:\s+[A-Za-z(\"]|$)"),
            "doc_id": d["doc_id"].cast(pl.Int64),
            "frame": _first_match(_FRAMES, d["content"]),
            "corroborations": d["content"].str.count_matches(_CORROBORATIONS),
            "source": _index(_SOURCE_NAMES, text),
            "body": _index(_BODY_NAMES, d["content"]),
            "claim_chars": claim.str.len_chars(),
            "claim_words": claim.str.count_matches(r"\S+"),
            "claim_digits": digits.str.len_chars(),
            "claim_zeros": digits.str.len_chars() - digits.str.strip_chars_end("0").str.len_chars(),
            "claim_decimal": claim.str.contains(r"\d\.\d").cast(pl.Int64),
            "claim_comma": claim.str.contains(",").cast(pl.Int64),
        }
    )


_COUNTED = ("content_chars", "title_chars", "sentences", "corroborations")  # layout columns, read from `layout`
_RELATIVE = (*_COUNTED, "cited")
_SHARED = ("frame", "title", "source", "body")


def relative_layout(d: pl.DataFrame) -> pl.DataFrame:
    """Per document: its layout beside its episode's other documents, the values left out (a claim that differs
    from the others' is the skill trained, not a tell): each length and count and the cited year as a z-score within
    the episode (0 where the episode's are all equal), and how many of the other seven share its claim template,
    title template, source and authority. `d` holds whole episodes."""
    own = layout(d).select(*_COUNTED, "frame", "source", "body")
    own = own.with_columns(
        cited=d["content"].str.extract(_CITED_YEAR).cast(pl.Float64, strict=False),
        title=pl.Series([skeleton(t) for t in d["title"]]),
        episode=d["episode_id"],
    )

    def z(name: str) -> pl.Expr:
        value = pl.col(name).cast(pl.Float64)
        centre, sd = value.mean().over("episode"), value.std().over("episode")
        return pl.when(value.is_null()).then(None).when(sd > 0).then((value - centre) / sd).otherwise(0.0)

    return own.select(
        *(z(name).alias(f"{name}_z") for name in _RELATIVE),
        *((pl.len().over("episode", name) - 1).alias(f"{name}_shared") for name in _SHARED),
    )


def _pair(d: pl.DataFrame) -> pl.DataFrame:
    """Per document: the asserted number (`claim`) and the other number it names (`named`: the one it denies,
    citation years aside) as written and as numbers, and its cited year; null where one is missing."""
    frame = d.select(
        claim_text=d["claim"].str.extract(f"({_NUMBER})"),
        named_text=d["content"].str.replace_all(_CITED, "").str.extract_all(_NUMBER),
        cited=d["content"].str.extract(_CITED_YEAR).cast(pl.Float64, strict=False),
    ).with_row_index("row")
    number = pl.col("claim_text").str.replace_all(",", "").cast(pl.Float64, strict=False)
    other = (
        frame.with_columns(claim=number)
        .explode("named_text")
        .filter(pl.col("named_text").str.replace_all(",", "").cast(pl.Float64, strict=False) != pl.col("claim"))
        .group_by("row")
        .agg(pl.col("named_text").first())
    )
    pair = frame.drop("named_text").join(other, on="row", how="left").sort("row")
    return pair.with_columns(
        claim=number, named=pl.col("named_text").str.replace_all(",", "").cast(pl.Float64, strict=False)
    )


def value_gap(d: pl.DataFrame) -> dict[str, pl.Series]:
    """The gap between the asserted number and the other number the document names (the one it denies, citation
    years aside) in powers of two: absolute, and relative to the larger number, alone and where the denied number is
    the larger (else -99; near the end of a relation's range a near miss can move one way only); -99 where either is
    missing."""
    absolute = (pl.col("named") - pl.col("claim")).abs()
    relative = absolute / pl.max_horizontal(pl.col("named").abs(), pl.col("claim").abs())
    above = (pl.col("named") > pl.col("claim")).fill_null(False)
    return (
        _pair(d)
        .select(
            gap_absolute=_log2(absolute.clip(1e-6)),
            gap_relative=_log2(relative.clip(1e-6)),
            gap_above=pl.when(above).then(_log2(relative.clip(1e-6))).otherwise(-99),
        )
        .to_dict()
    )


def number_pair(d: pl.DataFrame) -> pl.DataFrame:
    """The two numbers a document names as a reader of numbers takes them: each one's size (log10), significant
    figures and decimals, the cited year, and the answer type (which the question tells); missing (decimals: 0) where
    a number is.
    A model of these learns where true answers of a kind lie and how they are written, and so whether a document's
    asserted number is the one drawn from the other or the other way round."""
    pair = _pair(d)

    def shape(text: str, value: str) -> dict[str, pl.Expr]:
        digits = pl.col(text).str.replace_all(",", "").str.replace(".", "", literal=True).str.strip_chars("0")
        return {
            f"{value}_log": pl.col(value).clip(1e-6).log10(),
            f"{value}_figures": digits.str.len_chars().cast(pl.Float64),
            f"{value}_decimals": pl.col(text).str.extract(r"\.(\d+)").str.len_chars().cast(pl.Float64).fill_null(0),
        }

    return pair.select(
        **shape("claim_text", "claim"),
        **shape("named_text", "named"),
        cited=pl.col("cited"),
        answer_type=d["answer_type"].replace_strict(ANSWER_TYPES, range(len(ANSWER_TYPES)), return_dtype=pl.Int64),
    ).fill_nan(None)


def _log2(value: pl.Expr) -> pl.Expr:
    return value.log(2).floor().cast(pl.Int64, strict=False).fill_null(-99)


def _first_match(patterns: list[str], text: pl.Series) -> pl.Series:
    """1 + the index of the first pattern each text matches; 0 when none does."""
    found = pl.Series([0] * len(text), dtype=pl.Int64)
    for i, pattern in reversed(list(enumerate(patterns))):
        found = pl.select(pl.when(pl.lit(text.str.contains(pattern))).then(i + 1).otherwise(pl.lit(found))).to_series()
    return found


def _index(names: Iterable[str], text: pl.Series) -> pl.Series:
    """1 + the index in `names` of the first name found in each text; 0 when none is."""
    names = list(names)
    pattern = "(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + ")"
    found = text.str.extract(pattern)
    return found.replace_strict(names, range(1, len(names) + 1), default=0, return_dtype=pl.Int64)

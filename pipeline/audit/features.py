"""What one document shows without any other: its skeleton (the wording with names and values masked) and its
layout (lengths, position, which claim template and authority, the asserted value's shape)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

import polars as pl

from pipeline import documents

_WORD = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"])")
_FIELD = re.compile(r"\{\w+\}")
_WORDING = (documents.GENERIC_CLAUSES, documents.OPEN_CLAUSES, documents.RELATION_CLAUSES, documents.FRAMES)
_WORDING += (documents.CORROBORATIONS, documents.FILLERS, documents.OPENERS, documents.TITLES, documents.REPORTS)


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


_SOURCE_NAMES = [name for names in documents.SOURCES.values() for name in names]
_BODY_NAMES = list(dict.fromkeys(name for names in documents.BODIES.values() for name in names))
_FRAMES = [_pattern(t) for t in documents.FRAMES]
_CORROBORATIONS = "|".join(f"(?:{_pattern(t)})" for t in documents.CORROBORATIONS)
_CITED = r"\b\d{4} (?:" + "|".join(documents.REPORTS) + r")\b"
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


def value_gap(d: pl.DataFrame) -> dict[str, pl.Series]:
    """The gap between the asserted number and the other number the document names (the one it denies, citation
    years aside) in powers of two: absolute, and relative to the larger number, alone and signed by which number is
    the larger (near the end of a relation's range a near miss can move one way only); -99 where either is missing.
    """
    number = pl.element().str.replace_all(",", "").cast(pl.Float64, strict=False)
    frame = d.select(
        claim=d["claim"].str.extract(f"({_NUMBER})").str.replace_all(",", "").cast(pl.Float64, strict=False),
        named=d["content"].str.replace_all(_CITED, "").str.extract_all(_NUMBER).list.eval(number),
    ).with_row_index("row")
    other = (
        frame.explode("named")
        .filter(pl.col("named") != pl.col("claim"))
        .group_by("row")
        .agg(pl.col("named").first(), pl.col("claim").first())
    )
    absolute = (pl.col("named") - pl.col("claim")).abs()
    relative = absolute / pl.max_horizontal(pl.col("named").abs(), pl.col("claim").abs())
    gap = frame.select("row").join(other, on="row", how="left").sort("row")
    above = (pl.col("named") > pl.col("claim")).fill_null(False)
    return gap.select(
        gap_absolute=_log2(absolute.clip(1e-6)),
        gap_relative=_log2(relative.clip(1e-6)),
        gap_above=pl.when(above).then(_log2(relative.clip(1e-6))).otherwise(-99),
    ).to_dict()


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

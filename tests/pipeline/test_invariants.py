"""Invariant SQL: the normalize macros, and the generator's polars expression spelled with the same classes, equal
the reward's `normalize` on every assigned code point and on answer-like text. (Each invariant, broken on purpose,
is tested through the stage in test_validate.py.)"""

from __future__ import annotations

import random
import sys
import unicodedata

import duckdb
import polars as pl
import pyarrow as pa
import pytest

from pipeline.corruption import normalize_expr
from pipeline.invariants import NORMALIZE_MACROS
from reward_api.scoring import normalize


def sql_normalize(texts: list[str]) -> list[str]:
    con = duckdb.connect()
    for macro in NORMALIZE_MACROS:
        con.execute(macro)
    con.register("texts", pa.table({"s": pa.array(texts, pa.string())}))
    return con.execute("SELECT norm(s) FROM texts").fetchnumpy()["norm(s)"].tolist()


def polars_normalize(texts: list[str]) -> list[str]:
    return pl.select(normalize_expr(pl.lit(pl.Series(texts, dtype=pl.String)))).to_series().to_list()


ENGINES = pytest.mark.parametrize("engine_normalize", [sql_normalize, polars_normalize], ids=["duckdb", "polars"])


@ENGINES
def test_engine_normalize_equals_python_on_every_code_point(engine_normalize):
    """Every assigned code point alone, and where it decides whether a capital sigma is final."""
    chars = [
        chr(p)
        for p in range(sys.maxunicode + 1)
        if unicodedata.category(chr(p)) not in ("Cn", "Cs", "Co") and chr(p) != "\0"
    ]
    texts = chars + ["Α" + c + "Σ" for c in chars] + ["ΑΣ" + c for c in chars]
    mismatched = [
        (t, normalize(t), n) for t, n in zip(texts, engine_normalize(texts), strict=True) if normalize(t) != n
    ]
    assert mismatched == []


@ENGINES
def test_engine_normalize_equals_python_on_answers(engine_normalize):
    samples = [
        "Zoë Brontë-Li", "Zoe\u0308", "İstanbul", "STRASSE ẞ", "ΟΔΥΣΣΕΥΣ", "ΑΣ.Σ", "东京 / 東京都", "O'Brien",
        "l’Hôpital", "1,887", "3.14159", "  a\u00a0\u2003b\tc\n ", "¡Hola!", "Ǆemal", "x\u200by", "___", "-", "",
        "résumé café", "Москва", "الرياض", "दिल्ली", "ⅫΣ", "ⓐΣ", "Σ", "ς", "ΑΣ'Β", "12 345,6",
    ]  # fmt: skip
    rng = random.Random(7)
    alphabet = "aZéü ΣσςΑ'’..,-_\u0301\u00a0\u3000東1٣Ⅻⓐ\t!ß09"
    samples += ["".join(rng.choices(alphabet, k=rng.randint(0, 12))) for _ in range(5000)]
    assert engine_normalize(samples) == [normalize(s) for s in samples]

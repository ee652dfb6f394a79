"""Checks every fact source must pass, shared by the per-source tests."""

import polars as pl
import pytest

from pipeline.schema import ANSWER_TYPES
from pipeline.sources.common import FACT_COLUMNS


def check_well_formed(frame: pl.DataFrame, source: str, relations: set[str]) -> None:
    assert frame.schema == pl.Schema(FACT_COLUMNS)
    assert frame.height > 0
    assert frame["fact_id"].n_unique() == frame.height
    for row in frame.iter_rows(named=True):
        assert row["fact_id"].startswith(f"{source}:"), row
        assert row["source"] == source
        assert row["relation"] in relations, row
        assert row["answer_type"] in ANSWER_TYPES, row
        assert row["question"][:1].isupper() and row["question"].endswith("?"), row
        assert row["answer"].strip() == row["answer"] != "", row
        assert row["subject"].strip(), row
        assert row["answer"] not in row["answer_aliases"], row
        assert len(set(row["answer_aliases"])) == len(row["answer_aliases"]) and all(row["answer_aliases"]), row
    # one answer per question: the facts stage would otherwise drop both
    assert frame["question"].n_unique() == frame.height


@pytest.fixture
def well_formed():
    return check_well_formed

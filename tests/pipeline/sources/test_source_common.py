import polars as pl
import pytest

from pipeline.sources.common import (
    FactRows,
    ascii_fold,
    canonical_number,
    infer_answer_type,
    plain_number_aliases,
    quantity,
    quantity_aliases,
)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("1918", "year"),
        ("3000", "quantity"),
        ("12", "quantity"),
        ("3.5", "quantity"),
        ("1,200", "quantity"),
        ("Homer", "text"),
        ("1918 film", "text"),
    ],
)
def test_answer_type_inference(answer, expected):
    assert infer_answer_type(answer) == expected


@pytest.mark.parametrize(
    ("answer", "canonical", "aliases"),
    [("1500000", "1,500,000", ["1500000"]), ("1,200", "1,200", ["1200"]), ("1918", "1918", []), ("7", "7", [])],
)
def test_numbers_get_thousands_separators(answer, canonical, aliases):
    assert canonical_number(answer) == (canonical, aliases)
    assert quantity(67_750_000) == "67,750,000"


def test_plain_number_aliases_match_quantity_aliases():
    values = [0, 7, 999, 1000, 12_400, 67_750_000]
    aliases = plain_number_aliases(pl.Series([quantity(v) for v in values]))
    assert aliases.to_list() == [quantity_aliases(v) for v in values]


def test_fact_rows_drop_the_answer_and_repeats_from_aliases():
    rows = FactRows("demo")
    rows.add("demo:1", "open", "s", "Q?", "Bogotá", ["Bogotá", ascii_fold("Bogotá"), "", "Bogota"], "place")
    frame = rows.frame()
    assert frame.row(0, named=True)["answer_aliases"] == ["Bogota"]
    assert FactRows("empty").frame().height == 0

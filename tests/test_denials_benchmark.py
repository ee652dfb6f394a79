"""benchmarks/denials.py reads back the value a document denies."""

from __future__ import annotations

import polars as pl

from benchmarks.denials import denied, far_denials


def test_the_denied_year_is_the_smallest_other_number_by_value():
    """Sorted as text, "2015" (the report's year) came before "476" (the denied year)."""
    assert denied("Founded in 476, not 1200, says a 2015 report.", "1200", "year") == "476"
    assert denied("Founded in 1850, not 1852 (2021 census).", "1852", "year") == "1850"


def test_the_denied_quantity_is_its_first_number_that_is_no_year():
    assert denied("Home to 12,500 people, not 9,800, as of 2019.", "12,500", "quantity") == "9,800"
    assert denied("Nothing else is said.", "7", "quantity") is None


def test_a_denied_value_past_three_times_its_claim_is_counted_with_the_farthest():
    docs = pl.DataFrame({"doc_claims": ["5", "1,200", "100", "10"], "denied": ["22", "1,000", "31", None]})
    farthest = {"doc_claims": "5", "denied": "22", "ratio": 4.4}
    assert far_denials(docs) == {"documents": 2, "of": 4, "farthest": farthest}
    assert far_denials(docs.head(0))["farthest"] is None

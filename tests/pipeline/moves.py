"""How far a number claim may lie from the truth, as the dataset card states it: years by a number of years, other
numbers multiplied or divided by a factor at their own rounding (numbers below a bound move by one)."""

import numpy as np
import polars as pl

from pipeline import corruption

# The relation's significant figures round a moved number once more: 0.5 % of slack (a head count of 1,000 moved by
# 40 % was once a wider miss than stated, and this slack does not hide that).
ROUNDING = 0.005


def outside_statement(
    answer: pl.Series, claim: pl.Series, year: np.ndarray, years: tuple[int, int], percent: tuple[int, int], below: int
) -> np.ndarray:
    """Per claim: whether it lies outside what the card states. A shrunk number is rounded to the nearest unit of
    the answer's own rounding (its trailing zeros, keeping two significant digits): half a unit of slack."""
    _, scaled, decimals = corruption.numbers(answer)
    truth = scaled / 10.0**decimals
    moved = claim.str.replace_all(",", "").str.extract(r"(\d+(?:\.\d+)?)").cast(pl.Float64).to_numpy()
    digits = np.array([len(str(v)) for v in scaled])
    zeros = digits - np.array([len(str(v).rstrip("0")) for v in scaled])
    unit = 10.0 ** np.minimum(zeros, np.maximum(digits - 2, 0)) / 10.0**decimals
    least, most = (1 + p / 100 for p in percent)
    gap = np.abs(moved - truth)
    one_step = ~year & (truth < below) & (truth == np.round(truth))
    grown = (moved >= truth * (least - ROUNDING)) & (moved <= truth * (most + ROUNDING))
    shrunk = (moved >= truth / (most + ROUNDING) - unit / 2) & (moved <= truth / (least - ROUNDING) + unit / 2)
    quantity_ok = np.where(moved > truth, grown, shrunk)
    return np.where(year, (gap < years[0]) | (gap > years[1]), np.where(one_step, gap != 1, ~quantity_ok))

"""The reward: properties (hypothesis), equality with the formula written plainly, and normalize."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.schema import MAX_BUDGET, NUM_DOCS
from reward_api.scoring import (
    REWARD_RANGE,
    EpisodeKey,
    accepted_answers,
    normalize,
    score_key,
)

doc_sets = st.frozensets(st.integers(0, NUM_DOCS - 1))
corrupt_sets = st.frozensets(st.integers(0, NUM_DOCS - 1), min_size=1, max_size=4)
confidences = st.floats(0.0, 1.0, allow_nan=False)
budgets = st.integers(0, MAX_BUDGET)
answers = st.sampled_from(["Paris", "paris!", " PARIS ", "Lyon", "", "City of Paris", "Pa_ris"]) | st.text(max_size=20)
KEY_PARTS = ("answer_correctness", "corruption_detection", "false_positive_penalty", "confidence_calibration")


def plain_normalize(text):
    """normalize as the README writes it: lowercase, strip non-word characters but a point between two digits,
    collapse whitespace."""
    lowered = text.lower()
    digits = set("0123456789")
    decimal = {
        i
        for i, c in enumerate(lowered)
        if c == "." and 0 < i < len(lowered) - 1 and {lowered[i - 1], lowered[i + 1]} <= digits
    }
    return " ".join("".join(c for i, c in enumerate(lowered) if i in decimal or re.match(r"[\w\s]", c)).split())


def plain_reward(answer, flagged, confidence, used, accepted, corrupt, max_budget=MAX_BUDGET):
    """The reward as the README writes it: the reference the fast path must equal."""
    correct = plain_normalize(answer) in {plain_normalize(a) for a in accepted}
    parts = {
        "answer_correctness": 0.4 if correct else 0.0,
        "corruption_detection": 0.3 * len(flagged & corrupt) / len(corrupt),
        "false_positive_penalty": max(0.0, 0.2 - 0.1 * len(flagged - corrupt)),
        "confidence_calibration": 0.1 * confidence if correct else -0.2 * confidence,
        "efficiency": 0.05 * (1.0 - used / max_budget),
    }
    return {**{k: round(v, 4) for k, v in parts.items()}, "total": round(sum(parts.values()), 4)}


def key_for(corrupt, accepted=("Paris", "City of Paris")):
    return EpisodeKey(accepted_answers(accepted[0], accepted[1:]), frozenset(corrupt))


@given(answers, doc_sets, confidences, budgets, corrupt_sets)
def test_equals_the_formula_as_written(answer, flagged, confidence, used, corrupt):
    got = score_key(answer, flagged, confidence, used, key_for(corrupt))
    assert got == plain_reward(answer, flagged, confidence, used, ("Paris", "City of Paris"), corrupt)


@given(answers, doc_sets, confidences, budgets, corrupt_sets)
def test_range_and_determinism(answer, flagged, confidence, used, corrupt):
    first = score_key(answer, flagged, confidence, used, key_for(corrupt))
    assert REWARD_RANGE[0] <= first["total"] <= REWARD_RANGE[1]
    assert first == score_key(answer, frozenset(flagged), confidence, used, key_for(corrupt))


@given(answers, doc_sets, confidences, corrupt_sets, st.integers(0, NUM_DOCS - 1))
def test_true_flag_never_lowers_false_flag_never_raises(answer, flagged, confidence, corrupt, extra):
    """Compared at the same budget, so only the flag's own effect is measured."""
    key = key_for(corrupt)
    before = score_key(answer, flagged - {extra}, confidence, MAX_BUDGET - 1, key)["total"]
    after = score_key(answer, flagged | {extra}, confidence, MAX_BUDGET - 1, key)["total"]
    assert after >= before if extra in corrupt else after <= before


def test_extremes_reach_the_documented_range():
    key = key_for({1, 2})
    assert score_key("Paris", frozenset({1, 2}), 1.0, 0, key)["total"] == REWARD_RANGE[1]
    assert score_key("Rome", frozenset(range(NUM_DOCS)) - {1, 2}, 1.0, MAX_BUDGET, key)["total"] == REWARD_RANGE[0]


def test_no_term_is_negative_zero():
    """A wrong answer at confidence 0 is calibrated -0.2 x 0: JSON would show it as -0.0."""
    breakdown = score_key("Rome", frozenset(), 0.0, 1, key_for({1}))
    assert all(math.copysign(1.0, value) == 1.0 for value in breakdown.values()), breakdown


# Numbers, points and what lies around them, beside any text: most of normalize's cases are there.
numberish = st.text(st.sampled_from("0123456789.,-_ aZ\u0663é\u00a0!"), max_size=30)


@given(numberish | st.text(max_size=30))
def test_normalize_equals_the_definition(text):
    assert normalize(text) == plain_normalize(text)


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("1312.93", "1312.93"),
        ("1,312.93", "1312.93"),
        ("$4.5 million.", "4.5 million"),
        ("v.1.2.3.", "v1.2.3"),
        ("1..2", "12"),
        ("1.-2", "12"),
        ("U.S.A.", "usa"),
        (". 5", "5"),
        ("3.\u0663", "3\u0663"),  # only ASCII digits hold a decimal point
    ],
)
def test_a_decimal_point_stays_and_other_points_go(text, normalized):
    """v1 stripped every point: "131.293" was a correct answer to "1312.93"."""
    assert normalize(text) == normalized


def test_the_empty_answer_is_never_accepted():
    """An alias of punctuation alone normalises to "": the empty submission of a stopped rollout scored +0.4."""
    key = EpisodeKey.from_row("Paris", ["?", "..."], [1], MAX_BUDGET)
    assert key.accepted == {"paris"}
    assert score_key("", frozenset(), 0.0, 1, key)["answer_correctness"] == 0.0


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"confidence": math.nan}, "confidence"),
        ({"confidence": 1.5}, "confidence"),
        ({"used": MAX_BUDGET + 1}, "budget_used"),
        ({"flagged": frozenset({NUM_DOCS})}, "flagged ids"),
    ],
)
def test_bad_inputs_are_refused_with_the_value(change, needle):
    args = {"answer": "x", "flagged": frozenset(), "confidence": 0.5, "used": 1} | change
    with pytest.raises(ValueError, match=needle):
        score_key(args["answer"], args["flagged"], args["confidence"], args["used"], key_for({0}))

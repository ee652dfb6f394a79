"""The v1 reward: properties (hypothesis), equality with the formula written plainly, and normalize."""

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


def plain_v1(answer, flagged, confidence, used, accepted, corrupt, max_budget=MAX_BUDGET):
    """Reward v1 as the README writes it, with the original regex normalize: the reference the fast path must equal."""

    def norm(text):
        return " ".join(re.sub(r"[^\w\s]", "", text.lower()).split())

    correct = norm(answer) in {norm(a) for a in accepted}
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
    assert got == plain_v1(answer, flagged, confidence, used, ("Paris", "City of Paris"), corrupt)


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


@given(st.text(max_size=30))
def test_normalize_equals_the_regex_definition(text):
    assert normalize(text) == " ".join(re.sub(r"[^\w\s]", "", text.lower()).split())


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

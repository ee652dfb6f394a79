"""The system prompts (training's and reward_api.inference's) state the reward's rules (REWARD_VERSION) with the
scoring module's own numbers."""

from __future__ import annotations

import re

import pytest

from pipeline.schema import MAX_BUDGET, REWARD_VERSION
from reward_api.inference import SYSTEM_PROMPT as INFERENCE_SYSTEM_PROMPT
from reward_api.scoring import REWARD_RANGE, EpisodeKey, reward_numbers, score_submission_key
from train.prompts import ONESHOT_SYSTEM_PROMPT, TOOLS_SYSTEM_PROMPT


def _scored(answer: str, flagged: list[int]) -> dict[str, float]:
    """Two corrupted documents (0 and 1) this time, one-shot, fully confident."""
    return score_submission_key(answer, flagged, 1.0, EpisodeKey(frozenset({"paris"}), frozenset({0, 1})))


def test_the_numbers_are_the_scoring_modules():
    n = reward_numbers()
    best, worst = _scored("Paris", [0, 1]), _scored("Lyon", [2, 3, 4])
    assert n["correct"] == best["answer_correctness"] and n["detection"] == best["corruption_detection"]
    assert _scored("Paris", [0])["corruption_detection"] == n["detection"] / 2  # in proportion to the share flagged
    assert n["allowance"] == best["false_positive_penalty"] and worst["false_positive_penalty"] == 0.0  # capped
    assert _scored("Paris", [0, 1, 2])["false_positive_penalty"] == pytest.approx(n["allowance"] - n["false_flag"])
    assert (n["confidence_gain"], -n["confidence_loss"]) == (
        best["confidence_calibration"],
        worst["confidence_calibration"],
    )
    top = n["correct"] + n["detection"] + n["allowance"] + n["confidence_gain"] + n["efficiency"]
    assert (-n["confidence_loss"], top) == pytest.approx(REWARD_RANGE)


@pytest.mark.parametrize("prompt", [ONESHOT_SYSTEM_PROMPT, TOOLS_SYSTEM_PROMPT, INFERENCE_SYSTEM_PROMPT])
def test_every_prompt_states_every_number_in_order(prompt):
    heading = f"Scoring (reward {REWARD_VERSION})"
    rules = next(part for part in prompt.split("\n\n") if part.startswith(heading))
    stated = [float(x) for x in re.findall(r"\b\d+(?:\.\d+)?\b", rules.removeprefix(heading))]
    n = reward_numbers()
    floor = 0  # "never below 0"
    expected = [n["correct"], n["detection"], n["allowance"], n["false_flag"], floor]
    assert stated == [*expected, n["confidence_gain"], n["confidence_loss"], MAX_BUDGET, n["efficiency"]]

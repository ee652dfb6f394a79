"""The reward (README: Reward v2): one pure function used by the server and by training.

Deterministic, no model in the loop. A one-shot submission {answer, flagged_ids, confidence} is the
action trace "flag each distinct id, then submit", so it costs len(set(flagged_ids)) + 1 budget.

Each term is written once below (`_detection`, `_false_positives`, `_efficiency`); the terms that take
only a few integer inputs are tabulated from those functions at import, so a score rounds two floats
instead of six. The results are identical to evaluating the formula directly (tested).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from typing_extensions import TypedDict  # pydantic reads typing_extensions' TypedDict on Python 3.11

from pipeline.schema import MAX_BUDGET, NUM_DOCS, REWARD_VERSION

__all__ = [
    "REWARD_VERSION",
    "REWARD_RANGE",
    "Breakdown",
    "EpisodeKey",
    "normalize",
    "accepted_answers",
    "score_key",
    "score_submission_key",
]

REWARD_RANGE = (-0.2, 1.05)
DOC_IDS = frozenset(range(NUM_DOCS))
CORRECT, WRONG = 0.4, 0.0
CONFIDENCE_GAIN, CONFIDENCE_LOSS = 0.1, -0.2
# What normalize strips: non-word characters, but a decimal point (between two ASCII digits). v1 stripped every
# point, which made "131.293" a correct answer to "1312.93".
_NON_WORD = re.compile(r"[^\w\s.]|(?<![0-9])\.|\.(?![0-9])")
# The ASCII bytes that `[^\w\s]` removes: bytes.translate deletes them about 2x faster than the regex, in text
# without a point.
_ASCII_NON_WORD = bytes(c for c in range(128) if re.match(r"[^\w\s]", chr(c)))


class Breakdown(TypedDict):
    answer_correctness: float
    corruption_detection: float
    false_positive_penalty: float
    confidence_calibration: float
    efficiency: float
    total: float


@functools.lru_cache(maxsize=1 << 14)
def normalize(text: str) -> str:
    """Lowercase, strip non-word characters but decimal points, collapse whitespace (cached: a GRPO group repeats
    answers)."""
    lowered = text.lower()
    if lowered.isascii() and "." not in lowered:
        return " ".join(lowered.encode().translate(None, _ASCII_NON_WORD).decode().split())
    return " ".join(_NON_WORD.sub("", lowered).split())


def accepted_answers(answer: str, aliases: Iterable[str] = ()) -> frozenset[str]:
    """Normalized forms that count as correct; compute once per episode when scoring many submissions. None is
    empty: an alias of punctuation alone would make the empty answer (a rollout that stops, a budget run out)
    correct."""
    return frozenset(form for a in (answer, *aliases) if (form := normalize(a)))


@dataclass(frozen=True, slots=True)
class EpisodeKey:
    """What scoring needs from an episode's hidden columns, precomputed once per episode."""

    accepted: frozenset[str]
    corrupt: frozenset[int]
    max_budget: int = MAX_BUDGET

    @classmethod
    def from_row(cls, answer: str, aliases: Iterable[str], corrupt_ids: Iterable[int], max_budget: int) -> EpisodeKey:
        return cls(accepted_answers(answer, aliases), frozenset(corrupt_ids), int(max_budget))


def _detection(true_flags: int, corrupt: int) -> float:
    return 0.3 * true_flags / corrupt if corrupt else 0.0


def _false_positives(false_flags: int) -> float:
    return max(0.0, 0.2 - 0.1 * false_flags)


def _efficiency(budget_used: int, max_budget: int) -> float:
    return 0.05 * (1.0 - budget_used / max_budget)


def _table(fn, *ranges):
    """{args: (raw, rounded)}: the total sums raw terms, the breakdown shows rounded ones."""
    return {args: (raw, round(raw, 4)) for args in itertools.product(*ranges) for raw in [fn(*args)]}


_DETECTION = _table(_detection, range(NUM_DOCS + 1), range(NUM_DOCS + 1))
_FALSE_POSITIVES = _table(_false_positives, range(NUM_DOCS + 1))
_EFFICIENCY = _table(_efficiency, range(MAX_BUDGET + 1), [MAX_BUDGET])


def _efficiency_term(budget_used: int, max_budget: int) -> tuple[float, float]:
    term = _EFFICIENCY.get((budget_used, max_budget))
    if term is None:
        raw = _efficiency(budget_used, max_budget)
        term = (raw, round(raw, 4))
    return term


def score_key(answer: str, flagged: frozenset[int], confidence: float, budget_used: int, key: EpisodeKey) -> Breakdown:
    """Reward of a finished episode: the formula with the episode's precomputed key."""
    if not 0.0 <= confidence <= 1.0:  # also refuses NaN
        raise ValueError(f"confidence must be in [0, 1], got {confidence}")
    if not 0 <= budget_used <= key.max_budget:
        raise ValueError(f"budget_used must be in [0, {key.max_budget}], got {budget_used}")
    if not flagged <= DOC_IDS:
        raise ValueError(f"flagged ids must be in 0..{NUM_DOCS - 1}, got {sorted(flagged)}")
    correct = normalize(answer) in key.accepted
    corrupt = key.corrupt
    detection, detection_r = _DETECTION[len(flagged & corrupt), len(corrupt)]
    false_pos, false_pos_r = _FALSE_POSITIVES[(len(flagged - corrupt),)]
    efficiency, efficiency_r = _efficiency_term(budget_used, key.max_budget)
    calibration = (CONFIDENCE_GAIN if correct else CONFIDENCE_LOSS) * confidence
    answer_term = CORRECT if correct else WRONG
    return {
        "answer_correctness": answer_term,
        "corruption_detection": detection_r,
        "false_positive_penalty": false_pos_r,
        "confidence_calibration": round(calibration, 4) + 0.0,  # + 0.0: -0.2 × 0 is -0.0, shown as 0.0
        "efficiency": efficiency_r,
        "total": round(answer_term + detection + false_pos + calibration + efficiency, 4),
    }


def submission_budget(flagged: frozenset[int], max_budget: int = MAX_BUDGET) -> int:
    """Budget of the trace "flag each id, then submit" (capped at max_budget)."""
    return min(len(flagged) + 1, max_budget)


def score_submission_key(answer: str, flagged_ids: Iterable[int], confidence: float, key: EpisodeKey) -> Breakdown:
    """A one-shot submission scored with the episode's precomputed key: the fast path for training and /score/batch.

    Equals playing `game.submission_moves(...)` through `game.play` (tested).
    """
    flagged = frozenset(flagged_ids)
    return score_key(answer, flagged, confidence, submission_budget(flagged, key.max_budget), key)


def reward_numbers() -> dict[str, float]:
    """The reward's numbers, read from the scoring module (its constants, else its function on a probe episode
    with one corrupted document) so that a prompt cannot drift from the reward."""
    key = EpisodeKey(frozenset({"a"}), frozenset({0}), MAX_BUDGET)
    clean = score_key("a", frozenset({0}), 1.0, 0, key)  # the corrupted document flagged, no budget used
    one_false = score_key("a", frozenset({0, 1}), 1.0, 0, key)  # and one clean document
    return {
        "correct": CORRECT,
        "detection": clean["corruption_detection"],
        "allowance": clean["false_positive_penalty"],
        "false_flag": round(clean["false_positive_penalty"] - one_false["false_positive_penalty"], 4),
        "confidence_gain": CONFIDENCE_GAIN,
        "confidence_loss": -CONFIDENCE_LOSS,
        "efficiency": clean["efficiency"],
    }


def reward_rules() -> str:
    """The reward in words, with reward_numbers(): what the system prompts of training and of
    reward_api.inference state."""
    n = reward_numbers()
    return (
        f"Scoring (reward {REWARD_VERSION}): a correct answer earns {n['correct']:g} (case and punctuation do not "
        f"matter, a decimal point between digits does). Flagging the corrupted documents earns up to "
        f"{n['detection']:g}, in proportion to the share of them you flag. Flagging no clean document earns "
        f"{n['allowance']:g}, and each clean document you flag takes {n['false_flag']:g} off that (never below 0). "
        f"Confidence c earns {n['confidence_gain']:g} × c when the answer is correct and costs "
        f"{n['confidence_loss']:g} × c when it is wrong. The share of the {MAX_BUDGET}-action budget left unused "
        f"earns up to {n['efficiency']:g}: every action uses one unit, each flag and the "
        "submission included."
    )

"""The reward, v1 (DESIGN §5): one pure function used by the server and by training.

Deterministic, no model in the loop. A one-shot submission {answer, flagged_ids, confidence} is the
action trace "flag each id, then submit", so it costs len(flagged_ids) + 1 budget.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import TypedDict

from pipeline.schema import MAX_BUDGET, REWARD_VERSION

__all__ = ["REWARD_VERSION", "REWARD_RANGE", "Breakdown", "normalize", "accepted_answers", "score", "score_submission"]

REWARD_RANGE = (-0.2, 1.05)
_NON_WORD = re.compile(r"[^\w\s]")


class Breakdown(TypedDict):
    answer_correctness: float
    corruption_detection: float
    false_positive_penalty: float
    confidence_calibration: float
    efficiency: float
    total: float


def normalize(text: str) -> str:
    """Lowercase, strip non-word characters, collapse whitespace."""
    return " ".join(_NON_WORD.sub("", text.lower()).split())


def accepted_answers(answer: str, aliases: Iterable[str] = ()) -> frozenset[str]:
    """Normalized forms that count as correct; compute once per episode when scoring many submissions."""
    return frozenset(normalize(a) for a in (answer, *aliases))


def score(
    answer: str,
    flagged_ids: Iterable[int],
    confidence: float,
    budget_used: int,
    *,
    accepted: frozenset[str],
    corrupt_ids: frozenset[int],
    max_budget: int = MAX_BUDGET,
) -> Breakdown:
    """Reward of a finished episode. `accepted` comes from `accepted_answers`."""
    if not 0.0 <= confidence <= 1.0 or math.isnan(confidence):
        raise ValueError(f"confidence must be in [0, 1], got {confidence}")
    if not 0 <= budget_used <= max_budget:
        raise ValueError(f"budget_used must be in [0, {max_budget}], got {budget_used}")
    flagged = frozenset(flagged_ids)
    correct = normalize(answer) in accepted
    parts = (
        0.4 if correct else 0.0,
        0.3 * len(flagged & corrupt_ids) / len(corrupt_ids) if corrupt_ids else 0.0,
        max(0.0, 0.2 - 0.1 * len(flagged - corrupt_ids)),
        0.1 * confidence if correct else -0.2 * confidence,
        0.05 * (1.0 - budget_used / max_budget),
    )
    return Breakdown(
        answer_correctness=round(parts[0], 4),
        corruption_detection=round(parts[1], 4),
        false_positive_penalty=round(parts[2], 4),
        confidence_calibration=round(parts[3], 4),
        efficiency=round(parts[4], 4),
        total=round(sum(parts), 4),
    )


def score_submission(
    answer: str,
    flagged_ids: Iterable[int],
    confidence: float,
    *,
    accepted: frozenset[str],
    corrupt_ids: frozenset[int],
    max_budget: int = MAX_BUDGET,
) -> Breakdown:
    """A one-shot submission: the trace "flag each id, then submit" (budget capped at max_budget)."""
    flagged = frozenset(flagged_ids)
    used = min(len(flagged) + 1, max_budget)
    return score(answer, flagged, confidence, used, accepted=accepted, corrupt_ids=corrupt_ids, max_budget=max_budget)

"""Difficulty tiers (task k has k corrupt documents) and their success thresholds, derived from the reward.

A tier's threshold is the reward of the weakest play we still call a success: the correct answer, at
least half of the corrupt documents flagged (rounded up), no false flag, confidence 0, and the whole
budget spent. It is computed by the scoring function itself, so it follows the formula. No wrong answer
can reach it (a wrong answer scores at most 0.3 + 0.2 + efficiency < 0.55, and every threshold is
>= 0.75). A baselines module may later replace these with figures measured from baseline agents.
"""

from __future__ import annotations

from pipeline.schema import MAX_BUDGET, TASKS
from reward_api.models import TaskOut
from reward_api.scoring import EpisodeKey, score_key

DESCRIPTIONS = {
    "easy": "One corrupt document (a changed number); the true answer is a clear majority.",
    "medium": "Two corrupt documents; the second swaps the answer for another entity.",
    "hard": "Three corrupt documents, adding an inverted statement.",
    "adversarial": "Four corrupt documents, including a coherent, authoritative-sounding fabrication.",
}
THRESHOLD_RULE = (
    "reward of: correct answer, ceil(k/2) of the k corrupt documents flagged, no false flag, confidence 0, "
    f"all {MAX_BUDGET} actions used"
)


def success_threshold(corrupt_docs: int) -> float:
    corrupt = frozenset(range(corrupt_docs))
    key = EpisodeKey(frozenset({"answer"}), corrupt, MAX_BUDGET)
    flagged = frozenset(range(-(-corrupt_docs // 2)))
    return score_key("answer", flagged, 0.0, MAX_BUDGET, key)["total"]


def task_list() -> list[TaskOut]:
    return [
        TaskOut(
            name=name,
            corrupt_docs=k,
            description=DESCRIPTIONS[name],
            success_threshold=success_threshold(k),
            threshold_rule=THRESHOLD_RULE,
        )
        for k, name in enumerate(TASKS, start=1)
    ]

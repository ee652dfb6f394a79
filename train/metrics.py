"""Evaluation metrics over scored episodes: reward with a 95% CI, accuracy, flag quality per corruption
kind, calibration (ECE, Brier) and ClashEval's context-bias rate."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean, stdev
from typing import Any

from pipeline.schema import CORRUPTION_LEVELS, TASKS
from reward_api.scoring import Breakdown, normalize
from train.rewards import Submission

ECE_BINS = 10


@dataclass(frozen=True)
class Scored:
    """One episode as evaluated: its row (hidden columns included), the parsed submission and its reward."""

    row: dict[str, Any]
    submission: Submission
    well_formed: bool
    breakdown: Breakdown

    @property
    def correct(self) -> bool:
        return self.breakdown["answer_correctness"] > 0


def mean_ci(values: Sequence[float]) -> dict[str, float | None]:
    """Mean with a normal-approximation 95% confidence interval; one value has none (None bounds)."""
    mean = fmean(values)
    if len(values) < 2:
        return {"mean": round(mean, 4), "ci95_low": None, "ci95_high": None}
    half = 1.96 * stdev(values) / math.sqrt(len(values))
    return {"mean": round(mean, 4), "ci95_low": round(mean - half, 4), "ci95_high": round(mean + half, 4)}


def _prf(tp: int, fp: int, fn: int) -> dict[str, float | int | None]:
    """Precision, recall and F1 over `tp + fn` documents of a kind; None for a kind the episodes do not hold (0
    would read as an agent missing every one)."""
    if not tp + fn:
        return {"support": 0, "precision": None, "recall": None, "f1": None}
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"support": tp + fn, "precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4)}


def flag_metrics(items: Sequence[Scored]) -> dict[str, dict[str, float | int]]:
    """Overall, and per corruption kind: recall over that kind's documents; precision counts as false
    positives the clean documents flagged in the episodes that hold a document of that kind."""
    counts = {kind: [0, 0, 0] for kind in ("all", *CORRUPTION_LEVELS)}
    for item in items:
        flagged = set(item.submission.flagged_ids)
        kinds = item.row["doc_corruption"]
        false_pos = sum(1 for i in flagged if kinds[i] == "none")
        present = set(kinds) - {"none"}
        for kind in ("all", *present):
            docs = [i for i, k in enumerate(kinds) if k != "none" and kind in ("all", k)]
            hit = sum(1 for i in docs if i in flagged)
            tp_fp_fn = counts[kind]
            tp_fp_fn[0] += hit
            tp_fp_fn[1] += false_pos
            tp_fp_fn[2] += len(docs) - hit
    return {kind: _prf(*c) for kind, c in counts.items()}


def calibration(items: Sequence[Scored]) -> dict[str, Any]:
    """Expected calibration error (equal-width bins), Brier score, and the reliability table."""
    bins: list[list[Scored]] = [[] for _ in range(ECE_BINS)]
    for item in items:
        bins[min(int(item.submission.confidence * ECE_BINS), ECE_BINS - 1)].append(item)
    means = [
        (b, len(group), fmean(i.submission.confidence for i in group), fmean(i.correct for i in group))
        for b, group in enumerate(bins)
        if group
    ]
    ece = sum(count * abs(accuracy - confidence) for _, count, confidence, accuracy in means) / len(items)
    brier = fmean((i.submission.confidence - i.correct) ** 2 for i in items)
    table = [
        {"bin": b, "count": count, "confidence": round(confidence, 4), "accuracy": round(accuracy, 4)}
        for b, count, confidence, accuracy in means
    ]
    return {"ece": round(ece, 4), "brier": round(brier, 4), "reliability": table}


def context_bias(item: Scored) -> bool:
    """ClashEval: the answer is what one of the corrupt documents claims."""
    answer = normalize(item.submission.answer)
    claims = item.row["doc_claims"]
    return bool(answer) and any(
        claims[i] is not None and normalize(claims[i]) == answer for i in item.row["corrupt_ids"]
    )


def episode_rewards(items: Sequence[Scored]) -> list[float]:
    """Each episode's mean reward over its replies: the units of the reward's interval, since an episode's sampled
    replies are not independent of one another."""
    totals: dict[int, list[float]] = {}
    for item in items:
        totals.setdefault(item.row["episode_id"], []).append(item.breakdown["total"])
    return [fmean(t) for t in totals.values()]


def summarize(items: Sequence[Scored]) -> dict[str, Any]:
    """Every metric over every reply; the reward's interval over episodes."""
    if not items:
        raise ValueError("no episodes to evaluate")
    rewards = episode_rewards(items)
    per_task = {
        task: {
            "episodes": len({i.row["episode_id"] for i in group}),
            "reward": mean_ci([i.breakdown["total"] for i in group])["mean"],
            "accuracy": round(fmean(i.correct for i in group), 4),
        }
        for task in TASKS
        if (group := [i for i in items if i.row["task"] == task])
    }
    parts = [key for key in items[0].breakdown if key != "total"]
    return {
        "episodes": len(rewards),
        "replies": len(items),
        "reward": mean_ci(rewards),
        "reward_parts": {key: round(fmean(i.breakdown[key] for i in items), 4) for key in parts},
        "accuracy": round(fmean(i.correct for i in items), 4),
        "well_formed_rate": round(fmean(i.well_formed for i in items), 4),
        "flags": flag_metrics(items),
        "calibration": calibration(items),
        "context_bias_rate": round(fmean(context_bias(i) for i in items), 4),
        "per_task": per_task,
    }

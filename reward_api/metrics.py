"""Metrics of baseline plays: mean reward, answer accuracy and flag precision/recall, per agent and task.

The tiers' success thresholds come from `reward_api.tasks`, which measures them from the same agents.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from reward_api.scoring import REWARD_VERSION

COLUMNS = ("episodes", "mean_reward", "answer_accuracy", "flag_precision", "flag_recall")


def _ratio(num: float, den: float) -> float | None:
    return round(num / den, 4) if den else None


def stats(plays: Iterable[tuple[Any, dict]], hidden: dict[int, dict]) -> dict:
    """One group of (submission, breakdown) plays; precision is None when the agent flagged nothing."""
    n = reward = correct = flagged = true_flags = corrupt = 0
    for submission, breakdown in plays:
        corrupt_ids = set(hidden[submission.episode_id]["corrupt_ids"])
        n += 1
        reward += breakdown["total"]
        correct += breakdown["answer_correctness"] > 0
        flagged += len(submission.flagged_ids)
        true_flags += len(corrupt_ids & set(submission.flagged_ids))
        corrupt += len(corrupt_ids)
    return {
        "episodes": n,
        "mean_reward": _ratio(reward, n),
        "answer_accuracy": _ratio(correct, n),
        "flag_precision": _ratio(true_flags, flagged),
        "flag_recall": _ratio(true_flags, corrupt),
    }


def summarize(plays: dict[str, list], hidden: dict[int, dict], split: str, seed: int, tasks: Sequence[str]) -> dict:
    agents = {}
    for agent, items in plays.items():
        by_task = {task: [p for p in items if hidden[p[0].episode_id]["task"] == task] for task in tasks}
        agents[agent] = {
            "all": stats(items, hidden),
            "tasks": {task: stats(group, hidden) for task, group in by_task.items() if group},
        }
    return {
        "split": split,
        "episodes": len(hidden),
        "seed": seed,
        "reward_version": REWARD_VERSION,
        "agents": agents,
    }


def _cell(value: float | int | None) -> str:
    return "–" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def table(metrics: dict) -> str:
    """Markdown: one row per agent and task (then all tasks), and the derived thresholds."""
    header = ["agent", "task", *COLUMNS]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for agent, result in metrics["agents"].items():
        for task, row in [*result["tasks"].items(), ("all", result["all"])]:
            lines.append("| " + " | ".join([agent, task, *(_cell(row[c]) for c in COLUMNS)]) + " |")
    thresholds = ", ".join(f"{task} {value:.2f}" for task, value in metrics["success_thresholds"].items())
    return (
        f"Baselines on {metrics['episodes']} {metrics['split']} episodes (reward {metrics['reward_version']}).\n\n"
        + "\n".join(lines)
        + f"\n\nSuccess thresholds ({metrics['threshold_rule']}): {thresholds}\n"
    )

"""One comparison table over evaluated agents (baselines and models side by side), as JSON rows and markdown."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipeline.schema import CORRUPTION_LEVELS

FLAG_KINDS = ("all", *CORRUPTION_LEVELS)


def comparison_rows(results: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The headline figures of each agent's `summarize` result (plus its actions in tool mode), one row each."""
    rows = []
    for name, r in results.items():
        row = {
            "agent": name,
            "episodes": r["episodes"],
            "reward": r["reward"]["mean"],
            "reward_ci95": [r["reward"]["ci95_low"], r["reward"]["ci95_high"]],
            "accuracy": r["accuracy"],
            "well_formed_rate": r["well_formed_rate"],
            "flags": {kind: {m: r["flags"][kind][m] for m in ("precision", "recall", "f1")} for kind in FLAG_KINDS},
            "ece": r["calibration"]["ece"],
            "brier": r["calibration"]["brier"],
            "context_bias_rate": r["context_bias_rate"],
        }
        if "actions" in r:
            row["actions_per_episode"] = r["actions"]["actions_per_episode"]
        rows.append(row)
    return rows


def _f(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def markdown(rows: list[dict[str, Any]]) -> str:
    """Two tables: the headline metrics (flags overall), then flag precision/recall/F1 per corruption kind.
    In tool mode "well-formed" is the share of episodes that ended with `submit_answer`."""
    tools = any("actions_per_episode" in row for row in rows)
    head = ["agent", "reward (95% CI)", "accuracy", "well-formed", "flag P / R / F1", "ECE", "Brier", "context bias"]
    head += ["actions / episode"] if tools else []
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    for row in rows:
        low, high = row["reward_ci95"]
        flags = row["flags"]["all"]
        cells = [
            row["agent"],
            f"{_f(row['reward'])} ({_f(low)}–{_f(high)})" if low is not None else _f(row["reward"]),
            _f(row["accuracy"]),
            _f(row["well_formed_rate"]),
            " / ".join(_f(flags[m]) for m in ("precision", "recall", "f1")),
            _f(row["ece"]),
            _f(row["brier"]),
            _f(row["context_bias_rate"]),
        ]
        cells += [f"{row['actions_per_episode']:.2f}"] if tools else []
        lines.append("| " + " | ".join(cells) + " |")
    kinds = FLAG_KINDS[1:]
    lines += ["", "| agent | " + " | ".join(f"{k} P / R / F1" for k in kinds) + " |", "|---|" + "---:|" * len(kinds)]
    for row in rows:
        cells = [" / ".join(_f(row["flags"][k][m]) for m in ("precision", "recall", "f1")) for k in kinds]
        lines.append(f"| {row['agent']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"

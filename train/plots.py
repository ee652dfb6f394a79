"""Charts: GRPO training curves from TRL's log history, and evaluation charts comparing agents."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)


def _series(history: Sequence[dict], key: str) -> tuple[list[int], list[float]]:
    points = [(h["step"], h[key]) for h in history if key in h and "step" in h]
    return [p[0] for p in points], [float(p[1]) for p in points]


def write_curves(history: Sequence[dict], out: Path) -> list[Path]:
    """`reward_curve.png` and `loss_curve.png` in `out`."""
    fig, ax = plt.subplots(figsize=(7, 4))
    steps, reward = _series(history, "reward")
    _, std = _series(history, "reward_std")
    ax.plot(steps, reward, label="reward (total)", color="C0")
    if len(std) == len(reward):
        low = [r - s for r, s in zip(reward, std, strict=True)]
        ax.fill_between(steps, low, [r + s for r, s in zip(reward, std, strict=True)], alpha=0.2)
    keys = sorted({k for h in history for k in h if k.startswith("rewards/") and k.endswith("/mean")})
    for i, key in enumerate(keys, start=1):
        ax.plot(*_series(history, key), label=key.removeprefix("rewards/").removesuffix("/mean"), color=f"C{i}")
    ax.set(xlabel="step", ylabel="reward", title="GRPO reward")
    ax.legend(fontsize=8)
    paths = [out / "reward_curve.png", out / "loss_curve.png"]
    fig.savefig(paths[0], dpi=120, bbox_inches="tight")
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(*_series(history, "loss"), color="C3")
    ax.set(xlabel="step", ylabel="loss", title="GRPO loss")
    fig.savefig(paths[1], dpi=120, bbox_inches="tight")
    plt.close(fig)
    return paths


def write_charts(results: dict[str, dict], out: Path) -> list[Path]:
    """`eval_reward.png` (mean ± 95% CI), `eval_calibration.png` (reliability), `eval_flags.png` (recall per kind),
    and in tool mode `eval_actions.png`."""
    names = list(results)
    paths = [out / "eval_reward.png", out / "eval_calibration.png", out / "eval_flags.png"]
    fig, ax = plt.subplots(figsize=(7, 4))
    means = [results[n]["reward"]["mean"] for n in names]
    bounds = [(results[n]["reward"]["ci95_low"], results[n]["reward"]["ci95_high"]) for n in names]
    errs = [  # no bar where one episode has no interval
        [0.0 if low is None else m - low for (low, _), m in zip(bounds, means, strict=True)],
        [0.0 if high is None else high - m for (_, high), m in zip(bounds, means, strict=True)],
    ]
    ax.bar(names, means, yerr=errs, capsize=4, color=[f"C{i}" for i in range(len(names))])
    ax.set(ylabel="mean reward (95% CI)", title="Reward by agent")
    ax.tick_params(axis="x", labelsize=8, rotation=20)
    fig.savefig(paths[0], dpi=120, bbox_inches="tight")
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], ls="--", color="grey", label="perfect calibration")
    for i, name in enumerate(names):
        table = results[name]["calibration"]["reliability"]
        ax.plot(
            [t["confidence"] for t in table], [t["accuracy"] for t in table], marker="o", color=f"C{i}", label=name
        )
    ax.set(xlabel="stated confidence", ylabel="accuracy", xlim=(0, 1), ylim=(0, 1), title="Reliability")
    ax.legend(fontsize=8)
    fig.savefig(paths[1], dpi=120, bbox_inches="tight")
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 4))
    kinds = [k for k in results[names[0]]["flags"] if k != "all"]
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        xs = [j + i * width for j in range(len(kinds))]
        recalls = [results[name]["flags"][k]["recall"] for k in kinds]  # None: no document of that kind, no bar
        ax.bar(xs, [math.nan if r is None else r for r in recalls], width, label=name, color=f"C{i}")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(kinds))], kinds)
    ax.set(ylabel="flag recall", ylim=(0, 1.05), title="Corrupt documents flagged, by corruption kind")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1, 1))
    fig.savefig(paths[2], dpi=120, bbox_inches="tight")
    plt.close(fig)
    if all("actions" in r for r in results.values()):
        paths.append(write_actions(results, out / "eval_actions.png"))
    return paths


def write_actions(results: dict[str, dict], path: Path) -> Path:
    """Tool mode: actions per episode by type (stacked), and how episodes ended, per agent."""
    names = list(results)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
    bottom = [0.0] * len(names)
    for i, kind in enumerate(results[names[0]]["actions"]["by_type"]):
        values = [results[n]["actions"]["by_type"][kind] for n in names]
        left.bar(names, values, bottom=bottom, label=kind, color=f"C{i}")
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    left.set(ylabel="actions per episode", title="Actions taken")
    left.legend(fontsize=8)
    bottom = [0.0] * len(names)
    for i, end in enumerate(("submitted_rate", "budget_exhausted_rate", "unfinished_rate")):
        values = [results[n]["actions"][end] for n in names]
        right.bar(names, values, bottom=bottom, label=end.removesuffix("_rate").replace("_", " "), color=f"C{i + 4}")
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    right.set(ylabel="share of episodes", ylim=(0, 1.25), title="How episodes ended")
    right.legend(fontsize=8, loc="upper center", ncols=3)
    for ax in (left, right):
        ax.tick_params(axis="x", labelsize=7, rotation=20)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def write_learning(history: Sequence[dict], before: dict, after: dict, path: Path) -> Path:
    """Left: GRPO training reward per step; then, per decoding (greedy, sampled), validation reward and its parts
    before and after GRPO."""
    fig, (left, *rights) = plt.subplots(1, 1 + len(before), figsize=(6 + 6 * len(before), 4))
    # The reward alone (what validation measures), not the total that may include a weighted format reward.
    steps, reward = _series(history, "rewards/episode_reward/mean")
    left.plot(steps, reward, color="C0", alpha=0.4, label="reward per step")
    window = max(1, len(reward) // 10)
    smooth = [
        sum(reward[max(0, i - window + 1) : i + 1]) / len(reward[max(0, i - window + 1) : i + 1])
        for i in range(len(reward))
    ]
    left.plot(steps, smooth, color="C0", label=f"mean of last {window}")
    left.set(xlabel="GRPO step", ylabel="training reward", title="GRPO on streamed train episodes")
    left.legend(fontsize=8)
    for right, decoding in zip(rights, before, strict=True):
        keys = ["total", *before[decoding]["reward_parts"]]
        values = [[r[decoding]["reward"]["mean"], *r[decoding]["reward_parts"].values()] for r in (before, after)]
        xs = range(len(keys))
        right.bar([x - 0.2 for x in xs], values[0], 0.4, label="after warm start (SFT)", color="C7")
        right.bar([x + 0.2 for x in xs], values[1], 0.4, label="after GRPO", color="C2")
        right.set_xticks(list(xs), [k.replace("_", "\n") for k in keys], fontsize=7)
        right.axhline(0, color="black", lw=0.5)
        right.set(ylabel=f"validation reward ({decoding})", title=f"Validation reward and its parts, {decoding}")
        right.legend(fontsize=8)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path

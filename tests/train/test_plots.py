"""Charts are written from real log histories and evaluation results (not stubs): files exist, are PNGs, and
each chart changes when, and only when, the data it plots changes (Agg renders the same input to the same bytes)."""

from __future__ import annotations

from train.agents import BASELINES, scripted_tool_agent, tool_tokenizer
from train.evaluate import evaluate, evaluate_tools
from train.plots import write_charts, write_curves, write_learning

PNG = b"\x89PNG\r\n\x1a\n"


def test_curves_and_learning_chart(tmp_path, episode_rows):
    history = [
        {"step": s, "reward": 0.2 + s / 100, "reward_std": 0.1, "loss": 0.01 * s, "rewards/episode_reward/mean": 0.3}
        for s in range(1, 21)
    ] + [{"step": 20, "train_runtime": 1.0}]
    paths = write_curves(history, tmp_path)
    follower, majority, empty = (evaluate(BASELINES[n], episode_rows[:30]) for n in ("follower", "majority", "empty"))
    before, after = {"greedy": follower, "sampled": empty}, {"greedy": majority, "sampled": majority}
    paths.append(write_learning(history, before, after, tmp_path / "learning.png"))
    assert [p.name for p in paths] == ["reward_curve.png", "loss_curve.png", "learning.png"]
    assert all(p.read_bytes().startswith(PNG) for p in paths)
    sampled = write_learning(history, before, {**after, "sampled": empty}, tmp_path / "other.png")
    assert sampled.read_bytes() != paths[2].read_bytes(), "the learning chart plots the sampled results too"
    (tmp_path / "other").mkdir()
    doubled = [{**h, "reward": h["reward"] * 2} if "reward" in h else h for h in history]
    other = write_curves(doubled, tmp_path / "other")
    assert other[0].read_bytes() != paths[0].read_bytes(), "the reward curve plots the rewards"
    assert other[1].read_bytes() == paths[1].read_bytes(), "the loss curve plots the losses only"


def test_tool_mode_charts_add_the_actions_chart(tmp_path, episode_rows, tiny_model):
    tokenizer = tool_tokenizer(str(tiny_model))
    results = {
        name: evaluate_tools(scripted_tool_agent(BASELINES[name], tokenizer), tokenizer, episode_rows[:6], 4096, 12)
        for name in ("oracle", "empty")
    }
    paths = write_charts(results, tmp_path)
    assert [p.name for p in paths][-1] == "eval_actions.png"
    assert all(p.read_bytes().startswith(PNG) for p in paths)
    (tmp_path / "other").mkdir()
    lower = {**results["empty"], "reward": {k: v - 0.1 for k, v in results["empty"]["reward"].items()}}
    other = write_charts({**results, "empty": lower}, tmp_path / "other")
    changed = [a.name for a, b in zip(paths, other, strict=True) if a.read_bytes() != b.read_bytes()]
    assert changed == ["eval_reward.png"], changed
    (tmp_path / "oneshot").mkdir()
    oneshot = write_charts({"oracle": evaluate(BASELINES["oracle"], episode_rows)}, tmp_path / "oneshot")
    assert "eval_actions.png" not in [p.name for p in oneshot]

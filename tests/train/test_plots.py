"""Charts are written from real log histories and evaluation results (not stubs): files exist and are PNGs."""

from __future__ import annotations

from train.agents import BASELINES
from train.evaluate import evaluate
from train.plots import write_curves, write_learning

PNG = b"\x89PNG\r\n\x1a\n"


def test_curves_and_learning_chart(tmp_path, episode_rows):
    history = [
        {"step": s, "reward": 0.2 + s / 100, "reward_std": 0.1, "loss": 0.01 * s, "rewards/episode_reward/mean": 0.3}
        for s in range(1, 21)
    ] + [{"step": 20, "train_runtime": 1.0}]
    paths = write_curves(history, tmp_path)
    before, after = (evaluate(BASELINES[name], episode_rows[:30]) for name in ("follower", "majority"))
    paths.append(write_learning(history, before, after, tmp_path / "learning.png"))
    assert [p.name for p in paths] == ["reward_curve.png", "loss_curve.png", "learning.png"]
    assert all(p.read_bytes().startswith(PNG) for p in paths)

"""The suite's small build with the test split hidden (episodes.hidden_test), for the hidden-split tests."""

from __future__ import annotations

from pathlib import Path

from pipeline.episodes import build_episodes
from tests.conftest import HIDDEN_KEY, SEED, SMALL_EPISODES

HIDDEN = SMALL_EPISODES.model_copy(update={"hidden_test": True})


__all__ = ["HIDDEN", "HIDDEN_KEY", "build_hidden"]


def build_hidden(root: Path, facts_dir: Path) -> tuple[Path, Path]:
    """(episodes folder, answers folder) built under `root` by the real episodes stage from facts built with
    HIDDEN_KEY (the `hidden_facts_dir` fixture)."""
    build_episodes(facts_dir, root / "episodes", HIDDEN, SEED, answers_dir=root / "answers", hidden_key=HIDDEN_KEY)
    return root / "episodes", root / "answers"

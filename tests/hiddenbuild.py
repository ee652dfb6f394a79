"""The suite's small build with the test split hidden (episodes.hidden_test), for the hidden-split tests."""

from __future__ import annotations

from pathlib import Path

from pipeline.episodes import build_episodes
from tests.conftest import SEED, SMALL_EPISODES

HIDDEN = SMALL_EPISODES.model_copy(update={"hidden_test": True})


def build_hidden(root: Path, facts_dir: Path) -> tuple[Path, Path]:
    """(episodes folder, answers folder) built under `root` by the real episodes stage."""
    build_episodes(facts_dir, root / "episodes", HIDDEN, SEED, answers_dir=root / "answers")
    return root / "episodes", root / "answers"

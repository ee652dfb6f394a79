"""The learning demo's own dataset: a small build with the real pipeline, so the demo and its evaluation
need neither the default million-episode build nor the network (offline fact sources only).

    python -m train.demo_data --out reports/learning/dataset    # what `python -m train.demo --build-data` builds
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from pipeline.console import log_to_console
from pipeline.episodes import build_episodes
from pipeline.facts import build_facts, write_facts
from pipeline.params import EpisodesParams, FactsParams

DEMO_SEED = 20261130
DEMO_FACTS = FactsParams(
    sources=["geonames", "elements", "synthetic"],
    synthetic_entities=2000,
    split_weights={"train": 0.8, "validation": 0.1, "test": 0.1},
    hub_limit=100,
)
DEMO_EPISODES = EpisodesParams(
    train=5000, validation=500, test=500, workers=1, shard_rows=2048, row_group_rows=256, shard_multiple=1
)


def build_demo_dataset(out: Path, seed: int = DEMO_SEED) -> Path:
    """Facts and episodes under `out`; returns the episodes folder (a dataset folder for `--data`)."""
    write_facts(build_facts(DEMO_FACTS, seed), out / "facts")
    build_episodes(out / "facts", out / "episodes", DEMO_EPISODES, seed)
    return out / "episodes"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.demo_data", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("reports/learning/dataset"))
    args = parser.parse_args(argv)
    log_to_console()
    logging.getLogger("train.demo_data").info("episodes in %s", build_demo_dataset(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`python -m train.evaluate`: models and baseline agents over a split → metrics JSON and PNG charts.

    python -m train.evaluate --data data/episodes --split validation --limit 1000 \
        --agents oracle majority follower empty --model grpo=models/grpo --out reports/eval
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pipeline.schema import SPLITS
from train.agents import BASELINES, Agent, model_agent
from train.data import head, stream_episodes
from train.metrics import Scored, summarize
from train.rewards import parse_completion, score_episode

logger = logging.getLogger("train.evaluate")


def take_rows(data: str, split: str, limit: int, revision: str | None = None) -> list[dict[str, Any]]:
    return head(stream_episodes(data, split, revision=revision), limit)


def score_rows(rows: Sequence[dict[str, Any]], completions: Iterable[str]) -> list[Scored]:
    scored = []
    for row, text in zip(rows, completions, strict=True):
        submission, well_formed = parse_completion(text)
        breakdown = score_episode(
            submission, row["answer"], row["answer_aliases"], row["corrupt_ids"], row["max_budget"]
        )
        scored.append(Scored(row, submission, well_formed, breakdown))
    return scored


def evaluate(agent: Agent, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return summarize(score_rows(rows, agent(rows)))


def _model_arg(value: str) -> tuple[str, str]:
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"--model expects NAME=PATH, got {value!r}")
    return name, path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.evaluate", description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="data/episodes", help="dataset folder or Hub repo id")
    parser.add_argument("--revision", default=None, help="Hub revision of the dataset")
    parser.add_argument("--split", default="validation", choices=SPLITS)
    parser.add_argument("--limit", type=int, default=1000, help="episodes from the start of the split")
    parser.add_argument("--agents", nargs="*", default=list(BASELINES), choices=list(BASELINES))
    parser.add_argument("--model", type=_model_arg, action="append", default=[], help="NAME=PATH (repeatable)")
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--out", type=Path, default=Path("reports/eval"))
    args = parser.parse_args(argv)
    if args.limit < 1:
        parser.error(f"--limit must be >= 1, got {args.limit}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from train.plots import write_charts

    rows = take_rows(args.data, args.split, args.limit, args.revision)
    agents: dict[str, Agent] = {name: BASELINES[name] for name in args.agents}
    agents |= {name: model_agent(path, args.max_new_tokens) for name, path in args.model}
    results = {}
    for name, agent in agents.items():
        results[name] = evaluate(agent, rows)
        logger.info("%s: reward %s, accuracy %s", name, results[name]["reward"]["mean"], results[name]["accuracy"])
    args.out.mkdir(parents=True, exist_ok=True)
    report = {"data": args.data, "split": args.split, "episodes": len(rows), "agents": results}
    (args.out / "eval.json").write_text(json.dumps(report, indent=1))
    write_charts(results, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

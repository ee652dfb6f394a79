"""`python -m train.evaluate`: models and baseline agents over a split → metrics JSON, a comparison table, charts.

    python -m train.evaluate --data data/episodes --split validation --limit 1000 \
        --agents oracle majority follower empty --model grpo=models/grpo --out reports/eval
    python -m train.evaluate --data reports/learning/dataset/episodes --demo reports/learning --out reports/eval
    python -m train.evaluate --data reports/learning/dataset/episodes --demo reports/learning --agents \
        --samples 8 --out reports/eval_sampled
    python -m train.evaluate --mode tools --model grpo=models/grpo --max-new-tokens 512 --out reports/eval_tools

One-shot mode scores a model's greedy reply per episode, or with `--samples K` K replies sampled as GRPO samples
them (the reward GRPO raises); tool mode plays each episode multi-turn through the training environment
(`train.toolplay`), greedily. Both score with `reward_api.scoring` and report the same metrics.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pipeline.console import TIMED, log_to_console
from pipeline.schema import SPLITS
from train.agents import (
    BASELINES,
    Agent,
    ModelLoadError,
    Sampling,
    model_agent,
    model_tool_agent,
    scripted_tool_agent,
    tool_tokenizer,
)
from train.compare import comparison_rows, markdown
from train.data import head, stream_episodes
from train.metrics import Scored, summarize
from train.rewards import parse_completion, score_episode
from train.toolplay import ToolAgent, action_stats, play

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


def evaluate(agent: Agent, rows: Sequence[dict[str, Any]], replies: int = 1) -> dict[str, Any]:
    """An agent's metrics over `rows`; one that writes `replies` per episode (sampling) is scored on each."""
    return summarize(score_rows([row for row in rows for _ in range(replies)], agent(rows)))


def evaluate_tools(
    agent: ToolAgent, tokenizer: Any, rows: Sequence[dict[str, Any]], max_completion_length: int, iterations: int
) -> dict[str, Any]:
    """Tool mode: the same metrics over the played episodes, plus the actions they took."""
    rollouts = play(agent, tokenizer, rows, max_completion_length, iterations)
    return summarize([r.scored() for r in rollouts]) | {"actions": action_stats(rollouts)}


# A model to evaluate: name, path, and the base model when the path is an adapter saved elsewhere.
Model = tuple[str, str, str | None]


def demo_models(folder: Path) -> list[Model]:
    """The learning demo's checkpoints: the SFT warm start, and the GRPO adapter on it."""
    for sub in ("sft", "grpo"):
        if not (folder / sub).is_dir():
            raise FileNotFoundError(f"--demo {folder}: no {sub}/ checkpoint (run python -m train.demo --out {folder})")
    return [("tiny SFT", str(folder / "sft"), None), ("tiny SFT+GRPO", str(folder / "grpo"), str(folder / "sft"))]


def run_agents(args: argparse.Namespace, rows: Sequence[dict[str, Any]], models: list[Model]) -> dict[str, Any]:
    results = {}
    if args.mode == "oneshot":
        for name in args.agents:
            results[name] = evaluate(BASELINES[name], rows)
        sampling = Sampling(args.samples, args.temperature, args.seed) if args.samples else None
        for name, path, base in models:
            agent = model_agent(path, args.max_new_tokens, base=base, sampling=sampling)
            results[name] = evaluate(agent, rows, args.samples or 1)
        return results
    play_args = (rows, args.max_new_tokens, args.max_tool_calling_iterations)
    if args.agents:
        tokenizer = tool_tokenizer(args.tokenizer or models[0][1])
        for name in args.agents:
            results[name] = evaluate_tools(scripted_tool_agent(BASELINES[name], tokenizer), tokenizer, *play_args)
    for name, path, base in models:
        results[name] = evaluate_tools(*model_tool_agent(path, base), *play_args)
    return results


def read_rows(
    parser: argparse.ArgumentParser, data: str, split: str, limit: int, revision: str | None = None
) -> list[dict[str, Any]]:
    """The first `limit` episodes, read before any model loads: data that cannot be read is one line naming the
    flags, not a traceback (datasets: no data files, a hidden split; OSError: a missing folder, a Hub it cannot
    reach)."""
    try:
        return take_rows(data, split, limit, revision)
    except (ValueError, OSError) as err:
        revision = f", --revision {revision!r}" if revision else ""
        problem = " ".join(str(err).split())  # a library's message may span lines
        parser.exit(2, f"error: --data {data!r}, --split {split!r}{revision}: {problem}\n")


def _model_arg(value: str) -> tuple[str, str, None]:
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"--model expects NAME=PATH, got {value!r}")
    return name, path, None


def _model_source(path: str) -> bool:
    """A local folder, or else a name the Hub could hold (a missing local path such as ./models/x is neither)."""
    if Path(path).is_dir():
        return True
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(path)
    except HFValidationError:
        return False
    return not Path(path).exists() and not path.startswith((".", "~"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.evaluate", description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="data/episodes", help="dataset folder or Hub repo id")
    parser.add_argument("--revision", default=None, help="Hub revision of the dataset")
    parser.add_argument("--split", default="validation", choices=SPLITS)
    parser.add_argument("--limit", type=int, default=1000, help="episodes from the start of the split")
    parser.add_argument("--agents", nargs="*", default=list(BASELINES), choices=list(BASELINES))
    parser.add_argument("--model", type=_model_arg, action="append", default=[], help="NAME=PATH (repeatable)")
    parser.add_argument("--demo", type=Path, help="the learning demo's output folder: adds its SFT and GRPO models")
    parser.add_argument("--mode", default="oneshot", choices=("oneshot", "tools"))
    parser.add_argument(
        "--max-new-tokens", type=int, help="one-shot: reply tokens (default 96); tools: all turns together (512)"
    )
    parser.add_argument(
        "--samples", type=int, default=0, help="one-shot: score K sampled replies per episode, not the greedy one"
    )
    parser.add_argument("--temperature", type=float, default=1.0, help="with --samples: the sampling temperature")
    parser.add_argument("--seed", type=int, default=0, help="with --samples: the sampling seed")
    parser.add_argument("--max-tool-calling-iterations", type=int, default=12, help="tools: rounds of tool calls")
    parser.add_argument("--tokenizer", help="tools: tokenizer the baselines write their tool calls with")
    parser.add_argument("--out", type=Path, default=Path("reports/eval"))
    parser.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads without a GPU (1 is fastest on a shared machine)"
    )
    args = parser.parse_args(argv)
    if args.max_new_tokens is None:
        args.max_new_tokens = 96 if args.mode == "oneshot" else 512
    for option in ("limit", "max_new_tokens", "max_tool_calling_iterations", "threads"):
        if getattr(args, option) < 1:
            parser.error(f"--{option.replace('_', '-')} must be >= 1, got {getattr(args, option)}")
    if args.samples < 0:
        parser.error(f"--samples must be >= 0 (0: greedy), got {args.samples}")
    if not args.temperature > 0:  # also refuses NaN
        parser.error(f"--temperature must be > 0, got {args.temperature}")
    if args.samples and args.mode == "tools":
        parser.error("--samples: one-shot mode only (tool mode plays greedily)")
    try:
        models = args.model + (demo_models(args.demo) if args.demo else [])
    except FileNotFoundError as err:
        parser.error(str(err))
    names = [*args.agents, *(name for name, _, _ in models)]
    if not names:
        parser.error("nothing to evaluate: give --agents with at least one agent, --model or --demo")
    if repeated := sorted({name for name in names if names.count(name) > 1}):
        parser.error(f"each agent and model needs its own name (results are keyed by it); repeated: {repeated}")
    if args.mode == "tools" and args.agents and not (args.tokenizer or models):
        parser.error("--mode tools: baselines write tool calls with a tokenizer: give --tokenizer, --model or --demo")
    given = [(f"--model {name}={path}", path) for name, path, _ in args.model] + [
        (f"--tokenizer {args.tokenizer}", args.tokenizer)
    ]
    for flag, path in given:
        if path and not _model_source(path):
            parser.error(f"{flag}: no such folder (and not a Hub model id)")
    if args.out.exists() and not args.out.is_dir():
        parser.error(f"--out {args.out}: a file, not a folder")
    log_to_console(TIMED)
    rows = read_rows(parser, args.data, args.split, args.limit, args.revision)
    try:  # after the data is read: data that cannot be read leaves nothing behind
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        parser.error(f"--out {args.out}: cannot be the output folder ({err.strerror or err})")
    import torch

    from train.plots import write_charts

    if not torch.cuda.is_available():
        torch.set_num_threads(args.threads)
    try:
        results = run_agents(args, rows, models)
    except ModelLoadError as err:
        parser.exit(2, f"error: {err}\n")
    for name, result in results.items():
        logger.info("%s: reward %s, accuracy %s", name, result["reward"]["mean"], result["accuracy"])
    decoding = {"samples": args.samples, "temperature": args.temperature, "seed": args.seed}
    report = {"data": args.data, "split": args.split, "mode": args.mode, "episodes": len(rows)}
    report |= {"decoding": decoding if args.samples else "greedy", "agents": results}
    (args.out / "eval.json").write_text(json.dumps(report, indent=1))
    table = comparison_rows(results)
    header = {key: value for key, value in report.items() if key != "agents"}
    (args.out / "comparison.json").write_text(json.dumps(header | {"rows": table}, indent=1))
    (args.out / "comparison.md").write_text(markdown(table))
    write_charts(results, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

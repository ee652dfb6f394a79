"""Baseline agents played through the reward server's HTTP API, with metrics per agent and task.

`python -m reward_api.baselines --data PATH [--url URL] [--split validation] [--episodes 1000] [--out FILE]`

Every episode is started with POST /reset (the agents see only that observation); the majority agent
then plays it with POST /step and the state token, and every agent's submissions are scored in bulk
with POST /score/batch (the /step rewards must equal the batch's, or the run stops). Without --url the
script serves --data itself on a free loopback port. With CONTEXTCORRUPTION_API_TOKEN set, every request carries it
as a bearer token (the server it starts requires it then too). The agents are those of `reward_api.agents`; the oracle
reads the answer and the corrupt ids from the dataset files (hidden columns).

The success thresholds it reports are the tiers' of `reward_api.tasks.task_list`, measured in-process on
--data's validation split, exactly what GET /tasks serves. Both outputs are written under temporary names and
renamed when complete, the metrics JSON last, so a killed run leaves no partial or stale-paired metrics.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path

import httpx
import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.atomic import write_text_atomic
from pipeline.console import TIMED, log_to_console
from pipeline.schema import TASKS
from reward_api.agents import AGENTS, Submission, oracle_submission, random_submissions, reader_submissions
from reward_api.auth import client_headers
from reward_api.localserver import Served, local_server
from reward_api.metrics import summarize, table
from reward_api.store import EpisodeStore, StoreError, read_manifest
from reward_api.tasks import task_list

log = logging.getLogger("reward_api.baselines")

BATCH = 1024
CONNECTIONS = 4


def truth(root: Path, split: str, ids: np.ndarray) -> dict[int, dict]:
    """Hidden columns of the chosen episodes, read from the dataset files (for the oracle and the metrics)."""
    manifest = read_manifest(root)
    files = [str(root / s.path) for s in manifest.shards if s.split == split]
    table_ = pq.read_table(files, columns=["episode_id", "task", "answer", "corrupt_ids"])
    table_ = table_.filter(pc.is_in(table_["episode_id"], value_set=pc.cast(ids, "int64")))
    return {row["episode_id"]: row for row in table_.to_pylist()}


def episode_ids(root: Path, split: str, episodes: int) -> np.ndarray:
    """The first `episodes` ids of a split (all of it when smaller): ids are independent draws, so any range is a
    random sample."""
    manifest = read_manifest(root)
    splits = manifest.splits
    if split not in splits:
        raise SystemExit(f"--split {split!r}: the dataset has splits {sorted(splits)}")
    if split in manifest.hidden_splits:  # the oracle and the metrics read the answers from the dataset folder
        raise SystemExit(f"--split {split!r}: published without its ground truth (hidden_test); play another split")
    if episodes < 1:
        raise SystemExit(f"--episodes must be at least 1, got {episodes}")
    info = splits[split]
    if episodes > info.num_rows:
        log.info("split %s has %d episodes; playing all of them", split, info.num_rows)
    return np.arange(info.first_id, info.first_id + min(episodes, info.num_rows), dtype=np.int64)


class ServerError(RuntimeError):
    """The server refused or dropped a call of the run (a 401 without the token, a lost connection): it ends."""


def _post(client: httpx.Client, path: str, body: dict) -> dict:
    try:
        response = client.post(path, json=body)
    except httpx.HTTPError as exc:
        raise ServerError(f"POST {path} failed: {' '.join(str(exc).split())}") from None
    if response.status_code != 200:
        raise ServerError(f"POST {path} answered {response.status_code}: {' '.join(response.text[:500].split())}")
    return response.json()


def score_batch(client: httpx.Client, submissions: list[Submission]) -> list[dict]:
    results = []
    for start in range(0, len(submissions), BATCH):
        chunk = [s.body() for s in submissions[start : start + BATCH]]
        results.extend(_post(client, "/score/batch", {"submissions": chunk})["results"])
    return results


def play_majority(client: httpx.Client, episode_id: int) -> tuple[dict[str, Submission], dict]:
    """One episode over /reset + /step: the readers' submissions, and the majority agent's /step breakdown."""
    observation = _post(client, "/reset", {"episode_id": episode_id})["observation"]
    submissions = reader_submissions(observation)
    majority = submissions["majority"]
    action = {"action_type": "submit_answer", "answer": majority.answer, "confidence": majority.confidence}
    step = _post(client, "/step", {"action": {**action, "state_token": observation["state_token"]}})
    return submissions, step["observation"]["reward_breakdown"]


def play(client: httpx.Client, ids: np.ndarray, hidden: dict[int, dict], seed: int) -> dict[str, list]:
    """Every agent's (submission, breakdown) per episode, all scored by the server."""
    with ThreadPoolExecutor(CONNECTIONS) as pool:  # overlaps the client's reading with the server's work
        episodes = list(pool.map(lambda episode_id: play_majority(client, episode_id), ids.tolist()))
    plays = {
        agent: [subs[agent] for subs, _ in episodes] for agent in ("majority", "flag_all", "majority_flag_dissent")
    }
    plays["random"] = random_submissions(ids, seed)
    plays["oracle"] = [oracle_submission(i, hidden[i]["answer"], hidden[i]["corrupt_ids"]) for i in ids.tolist()]
    scored = {agent: [r["breakdown"] for r in score_batch(client, subs)] for agent, subs in plays.items()}
    if scored["majority"] != [breakdown for _, breakdown in episodes]:
        raise ServerError("/step and /score/batch disagree on the same submissions")
    return {agent: list(zip(plays[agent], scored[agent], strict=True)) for agent in AGENTS}


def run(data: Path, url: str | None, split: str, episodes: int, seed: int) -> dict:
    store = EpisodeStore(data, cache_mb=64, preload_keys=False)  # checks every shard first (StoreError)
    ids = episode_ids(data, split, episodes)
    hidden = truth(data, split, ids)
    server = local_server(data) if url is None else nullcontext(Served(url.rstrip("/"), 0, 0.0))
    with server as served, httpx.Client(base_url=served.url, timeout=60, headers=client_headers()) as client:
        try:
            params_hash = client.get("/manifest").raise_for_status().json()["params_hash"]
        except httpx.HTTPError as exc:
            raise SystemExit(f"no reward server at {served.url} ({exc})") from exc
        if params_hash != read_manifest(data).params_hash:
            raise SystemExit(f"{served.url} serves another dataset (params hash {params_hash}) than {data}")
        plays = play(client, ids, hidden, seed)
    return {**summarize(plays, hidden, split=split, seed=seed, tasks=TASKS), **thresholds(store)}


def thresholds(store: EpisodeStore) -> dict:
    """The tiers of GET /tasks for this dataset: their success thresholds, rules and the means they came from."""
    tiers = task_list(store)
    return {
        "success_thresholds": {tier.name: tier.success_threshold for tier in tiers},
        "threshold_rule": "; ".join(dict.fromkeys(tier.threshold_rule for tier in tiers)),
        "tiers": {tier.name: tier.model_dump(exclude={"name", "description", "threshold_rule"}) for tier in tiers},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reward_api.baselines", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="dataset folder (truth for the oracle and metrics)")
    parser.add_argument("--url", help="play against this running server (default: serve --data on a free port)")
    parser.add_argument("--split", default="validation", help="the split played (default: %(default)s)")
    parser.add_argument("--episodes", type=int, default=1000, help="first N episodes of the split (at most all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random agent")
    parser.add_argument(
        "--out", type=Path, default=Path("data/metrics/baselines.json"), help="metrics JSON (default: %(default)s)"
    )
    parser.add_argument("--table", type=Path, help="markdown table (default: --out with .md)")
    args = parser.parse_args(argv)
    log_to_console(TIMED)
    try:
        metrics = run(args.data, args.url, args.split, args.episodes, args.seed)
    except (StoreError, ServerError) as err:  # a missing or damaged dataset (the message names the file), a refusal
        raise SystemExit(f"baselines: {err}") from None
    args.out.parent.mkdir(parents=True, exist_ok=True)
    markdown = table(metrics)
    write_text_atomic(args.table or args.out.with_suffix(".md"), markdown)
    write_text_atomic(args.out, json.dumps(metrics, indent=2, sort_keys=True) + "\n")  # DVC's metrics file last
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())

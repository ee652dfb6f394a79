"""Baseline agents played through the reward server's HTTP API, with metrics per agent and task.

`python -m reward_api.baselines --data PATH [--url URL] [--split validation] [--episodes 1000] [--out FILE]`

Every episode is started with POST /reset (the agents see only that observation); the majority agent
then plays it with POST /step and the state token, and every agent's submissions are scored in bulk
with POST /score/batch (the /step rewards must equal the batch's, or the run stops). Without --url the
script serves --data itself on a free loopback port. The agents:

- random: the original spec's baseline; flags 0-4 random documents, answers "unknown" with confidence 0.5.
- majority: flags nothing, answers what most documents state (`heuristics.read`), confidence = its share.
- flag_all: the majority answer, with all 8 documents flagged.
- majority_flag_dissent: the majority answer, flagging each document that does not state it.
- oracle: reads the answer and the corrupt ids from the dataset files (hidden columns). It is the upper
  bound, not an agent: it only shows what a perfect play scores.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path
from typing import NamedTuple

import httpx
import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.randomness import integers, permutations
from pipeline.schema import NUM_DOCS, TASKS
from reward_api.heuristics import read
from reward_api.localserver import Served, local_server
from reward_api.metrics import summarize, table
from reward_api.store import read_manifest

log = logging.getLogger("reward_api.baselines")

AGENTS = ("random", "majority", "flag_all", "majority_flag_dissent", "oracle")
# Draw slots of pipeline.randomness for the random agent.
RANDOM_COUNT_SLOT, RANDOM_DOCS_SLOT = 7001, 7002
BATCH = 1024
CONNECTIONS = 4


class Submission(NamedTuple):
    episode_id: int
    answer: str
    flagged_ids: tuple[int, ...]
    confidence: float

    def body(self) -> dict:
        return {**self._asdict(), "flagged_ids": list(self.flagged_ids)}


def random_submissions(ids: np.ndarray, seed: int) -> list[Submission]:
    """The original spec's random agent, drawn from (seed, episode id) so a run is reproducible."""
    counts = integers(seed, ids, RANDOM_COUNT_SLOT, 5)
    orders = permutations(seed, ids, RANDOM_DOCS_SLOT, NUM_DOCS)
    return [
        Submission(int(i), "unknown", tuple(sorted(int(d) for d in order[:k])), 0.5)
        for i, k, order in zip(ids, counts, orders, strict=True)
    ]


def reader_submissions(observation: dict) -> dict[str, Submission]:
    """The three agents that read the visible text only."""
    docs = observation["documents"]
    reading = read(observation["question"], [d["content"] for d in docs])
    share = round(reading.votes / len(docs), 4)
    episode_id = observation["episode_id"]
    return {
        "majority": Submission(episode_id, reading.answer, (), share),
        "flag_all": Submission(episode_id, reading.answer, tuple(range(len(docs))), share),
        "majority_flag_dissent": Submission(episode_id, reading.answer, reading.dissenting, share),
    }


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
    splits = read_manifest(root).splits
    if split not in splits:
        raise SystemExit(f"--split {split!r}: the dataset has splits {sorted(splits)}")
    if episodes < 1:
        raise SystemExit(f"--episodes must be at least 1, got {episodes}")
    info = splits[split]
    if episodes > info.num_rows:
        log.info("split %s has %d episodes; playing all of them", split, info.num_rows)
    return np.arange(info.first_id, info.first_id + min(episodes, info.num_rows), dtype=np.int64)


def _post(client: httpx.Client, path: str, body: dict) -> dict:
    response = client.post(path, json=body)
    if response.status_code != 200:
        raise RuntimeError(f"POST {path} answered {response.status_code}: {response.text[:500]}")
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
    plays["oracle"] = [
        Submission(i, hidden[i]["answer"], tuple(sorted(hidden[i]["corrupt_ids"])), 1.0) for i in ids.tolist()
    ]
    scored = {agent: [r["breakdown"] for r in score_batch(client, subs)] for agent, subs in plays.items()}
    if scored["majority"] != [breakdown for _, breakdown in episodes]:
        raise RuntimeError("/step and /score/batch disagree on the same submissions")
    return {agent: list(zip(plays[agent], scored[agent], strict=True)) for agent in AGENTS}


def run(data: Path, url: str | None, split: str, episodes: int, seed: int) -> dict:
    ids = episode_ids(data, split, episodes)
    hidden = truth(data, split, ids)
    server = local_server(data) if url is None else nullcontext(Served(url.rstrip("/"), 0, 0.0))
    with server as served, httpx.Client(base_url=served.url, timeout=60) as client:
        try:
            params_hash = client.get("/manifest").raise_for_status().json()["params_hash"]
        except httpx.HTTPError as exc:
            raise SystemExit(f"no reward server at {served.url} ({exc})") from exc
        if params_hash != read_manifest(data).params_hash:
            raise SystemExit(f"{served.url} serves another dataset (params hash {params_hash}) than {data}")
        plays = play(client, ids, hidden, seed)
    return summarize(plays, hidden, split=split, seed=seed, tasks=TASKS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reward_api.baselines", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="dataset folder (truth for the oracle and metrics)")
    parser.add_argument("--url", help="play against this running server (default: serve --data on a free port)")
    parser.add_argument("--split", default="validation")
    parser.add_argument("--episodes", type=int, default=1000, help="first N episodes of the split (at most all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random agent")
    parser.add_argument("--out", type=Path, default=Path("data/metrics/baselines.json"))
    parser.add_argument("--table", type=Path, help="markdown table (default: --out with .md)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    metrics = run(args.data, args.url, args.split, args.episodes, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    markdown = table(metrics)
    (args.table or args.out.with_suffix(".md")).write_text(markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())

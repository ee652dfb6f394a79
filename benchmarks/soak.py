"""Soak: mixed traffic near saturation against `python -m reward_api` with one and with two workers.

    .venv/bin/python benchmarks/soak.py [--data data/episodes] [--seconds 60] [--warmup 20] [--workers 1 2]

Loopback only, bounded in time (--seconds per run, after a warm-up) and in concurrency (--users). The load
client is this script in a separate process (asyncio + aiohttp), so it does not share the server's GIL. Each
virtual user loops over a weighted mix: replay (GET /episodes/{random id}), POST /score (a one-shot
submission or an action trace), POST /score/batch (8 episodes x a GRPO group of 8) and a whole game
(/reset, then /step flag, read, submit with the state tokens). Any non-200 answer, transport error, or
game that does not end with a reward counts as an error. Reports requests/s, p50/p99 per kind, errors and
the server's RSS (all its processes) after the warm-up (--warmup: answer keys loaded in the background,
caches filled), every 5 s, and at the end; fails unless errors are 0 and RSS
grew by at most 10%. Writes benchmarks/results/soak.json with the load average it ran under.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reward_api.localserver import local_server  # noqa: E402

MIX = {"replay": 40, "score": 25, "trace": 10, "batch": 5, "game": 20}
MAX_RSS_GROWTH = 0.10
SAMPLE_S = 5.0


def submission(last: int, rng: random.Random) -> dict:
    flags = sorted(rng.sample(range(8), rng.randint(0, 3)))
    return {"episode_id": rng.randint(0, last), "answer": "Paris", "flagged_ids": flags, "confidence": rng.random()}


async def one_user(session, url: str, last: int, deadline: float, seed: int, log: list) -> None:
    """Loop over the mix until the deadline; append (kind, seconds, ok) per request."""
    rng = random.Random(seed)
    kinds, weights = list(MIX), list(MIX.values())

    async def call(kind: str, method: str, path: str, body=None) -> dict | None:
        start = time.perf_counter()
        try:
            async with session.request(method, url + path, json=body) as reply:
                data = await reply.json(content_type=None)
                ok = reply.status == 200
        except Exception:  # noqa: BLE001 - a transport failure is an error to count, not to raise
            data, ok = None, False
        log.append((kind, time.perf_counter() - start, ok))
        return data if ok else None

    while time.monotonic() < deadline:
        kind = rng.choices(kinds, weights)[0]
        if kind == "replay":
            await call(kind, "GET", f"/episodes/{rng.randint(0, last)}")
        elif kind == "score":
            await call(kind, "POST", "/score", submission(last, rng))
        elif kind == "trace":
            actions = [{"action_type": "read_doc", "doc_id": 0}, {"action_type": "flag_suspicious", "doc_id": 2}]
            actions.append({"action_type": "submit_answer", "answer": "x", "confidence": 0.5})
            await call(kind, "POST", "/score", {"episode_id": rng.randint(0, last), "actions": actions})
        elif kind == "batch":
            subs = [
                {**submission(last, rng), "episode_id": e} for e in rng.sample(range(last + 1), 8) for _ in range(8)
            ]
            await call(kind, "POST", "/score/batch", {"submissions": subs})
        else:
            await game(call, last, rng, log)


async def game(call, last: int, rng: random.Random, log: list) -> None:
    reply = await call("reset", "POST", "/reset", {"episode_id": rng.randint(0, last)})
    moves = [
        {"action_type": "flag_suspicious", "doc_id": rng.randrange(8)},
        {"action_type": "read_doc", "doc_id": rng.randrange(8)},
        {"action_type": "submit_answer", "answer": "Paris", "confidence": 0.6},
    ]
    for move in moves:
        if reply is None:
            return
        reply = await call(
            "step", "POST", "/step", {"action": {**move, "state_token": reply["observation"]["state_token"]}}
        )
    if reply is not None and not (reply["done"] and reply["reward"] is not None):
        log.append(("step", 0.0, False))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def summarise(log: list, seconds: float) -> dict:
    kinds = sorted({kind for kind, _, _ in log})
    per_kind = {
        kind: {
            "requests": len(times := [t for k, t, _ in log if k == kind]),
            "p50_ms": round(percentile(times, 0.50) * 1000, 2),
            "p99_ms": round(percentile(times, 0.99) * 1000, 2),
        }
        for kind in kinds
    }
    times = [t for _, t, _ in log]
    return {
        "requests": len(log),
        "requests_per_s": round(len(log) / seconds, 1),
        "p50_ms": round(percentile(times, 0.50) * 1000, 2),
        "p99_ms": round(percentile(times, 0.99) * 1000, 2),
        "errors": sum(not ok for _, _, ok in log),
        "per_kind": per_kind,
    }


async def drive(url: str, last: int, seconds: float, users: int, seed: int) -> dict:
    import aiohttp

    log: list = []
    connector = aiohttp.TCPConnector(limit=users)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as session:
        deadline = time.monotonic() + seconds
        started = time.monotonic()
        await asyncio.gather(*(one_user(session, url, last, deadline, seed * 1000 + u, log) for u in range(users)))
        return summarise(log, time.monotonic() - started)


def client(url: str, last: int, seconds: float, users: int, seed: int) -> dict:
    """Run the load client in its own process; its summary comes back as JSON on stdout."""
    command = [sys.executable, __file__, "client", url, str(last), str(seconds), str(users), str(seed)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 120, check=True)
    return json.loads(done.stdout)


def server_rss_mb(pid: int) -> float:
    """RSS of the server process and its workers."""
    root = psutil.Process(pid)
    return round(sum(p.memory_info().rss for p in [root, *root.children(recursive=True)]) / 2**20, 1)


def sampled(pid: int, every: float, stop: threading.Event, into: list) -> None:
    while not stop.wait(every):
        into.append(server_rss_mb(pid))


def soak(data: Path, workers: int, seconds: float, users: int, warmup: float) -> dict:
    """Warm up (answer keys loaded, caches filled), then soak; RSS sampled every SAMPLE_S seconds throughout."""
    last = json.loads((data / "manifest.json").read_text())
    last = max(info["first_id"] + info["num_rows"] - 1 for info in last["splits"].values())
    with local_server(data, extra_args=("--workers", str(workers))) as served:
        client(served.url, last, warmup, users, seed=1)
        rss_before = server_rss_mb(served.pid)
        load_before = os.getloadavg()
        samples, stop = [rss_before], threading.Event()
        sampler = threading.Thread(target=sampled, args=(served.pid, SAMPLE_S, stop, samples))
        sampler.start()
        try:
            result = client(served.url, last, seconds, users, seed=2)
        finally:
            stop.set()
            sampler.join()
        rss_after = server_rss_mb(served.pid)
    growth = (rss_after - rss_before) / rss_before
    return {
        "workers": workers,
        "seconds": seconds,
        "warmup_seconds": warmup,
        "users": users,
        **result,
        "rss_mb_before": rss_before,
        "rss_mb_after": rss_after,
        "rss_growth": round(growth, 4),
        "rss_mb_samples": samples + [rss_after],
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "passed": result["errors"] == 0 and growth <= MAX_RSS_GROWTH,
    }


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "client":
        url, last, seconds, users, seed = sys.argv[2:7]
        print(json.dumps(asyncio.run(drive(url, int(last), float(seconds), int(users), int(seed)))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT / "data" / "episodes")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds of load before the RSS baseline")
    parser.add_argument("--users", type=int, default=32, help="concurrent virtual users (connections)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "soak.json")
    args = parser.parse_args()
    runs = [soak(args.data, workers, args.seconds, args.users, args.warmup) for workers in args.workers]
    report = {"cpus": os.cpu_count(), "data": str(args.data), "mix_weights": MIX, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    for run in runs:
        print(
            f"{run['workers']} worker(s): {run['requests_per_s']} req/s, "
            f"p50 {run['p50_ms']} ms, p99 {run['p99_ms']} ms, "
            f"{run['errors']} errors, RSS {run['rss_mb_before']} -> {run['rss_mb_after']} MB "
            f"({run['rss_growth']:+.1%}), load {run['load_average_after']}"
        )
    return 0 if all(run["passed"] for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Soak: mixed traffic near saturation against `python -m reward_api` with one and with two workers.

    .venv/bin/python benchmarks/soak.py [--data data/episodes] [--seconds 60] [--warmup 60] [--workers 1 2]

Loopback only, bounded in time (--seconds per run, after a warm-up) and in concurrency (--users). The load
client is this script in a separate process (asyncio + aiohttp), so it does not share the server's GIL. Each
virtual user loops over a weighted mix: replay (GET /episodes/{random id}), POST /score (a one-shot
submission or an action trace), POST /score/batch (8 episodes x a GRPO group of 8) and a whole game
(/reset, then /step flag, read, submit with the state tokens). Any non-200 answer, transport error, or
game that does not end with a reward counts as an error.

The RSS baseline is taken at the server's steady state (`warm_up`): every worker serves every shard from its
agent-views cache (built or checked in the background at start-up; $CONTEXTCORRUPTION_VIEW_CACHE or the user's
cache), /tasks answers (thresholds measured in a background thread), --warmup seconds of the same mix have filled
the lazily built caches, and the server is idle again. Then --seconds of load, RSS sampled every 5 s (a longer
--seconds shows whether growth levels off). RSS is summed over the server's processes (with --workers 2: the
uvicorn supervisor and both workers), and reported per process too. Reports requests/s, p50/p99 per kind and
errors; fails unless errors are 0 and the summed RSS grew by at most 10%. Writes benchmarks/results/soak.json
with the load average it ran under, and refuses a run during which the dataset's manifest changed.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
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


def server_processes(pid: int) -> list[psutil.Process]:
    """The server's processes: with --workers N > 1, uvicorn's supervisor and its N worker processes."""
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def rss_mb(processes: list[psutil.Process]) -> dict[int, float]:
    """RSS (MB) of each process, by pid."""
    return {proc.pid: round(proc.memory_info().rss / 2**20, 1) for proc in processes}


def open_views(proc: psutil.Process) -> int:
    """Views files the process holds open: a worker opens each shard's once it is checked, before serving it."""
    return sum(f.path.endswith(".views") for f in proc.open_files())


def idle(processes: list[psutil.Process], window: float = 2.0) -> bool:
    """True when the server's processes together used under 5% of a core over `window` seconds."""
    before = sum(sum(p.cpu_times()[:2]) for p in processes)
    time.sleep(window)
    return sum(sum(p.cpu_times()[:2]) for p in processes) - before < 0.05 * window


def until(what: str, ready, timeout: float) -> float:
    start = time.monotonic()
    while not ready():
        if time.monotonic() - start > timeout:
            raise RuntimeError(f"the server was not {what} after {timeout:.0f} s")
        time.sleep(0.2)
    return round(time.monotonic() - start, 1)


def warm_up(served, shards: int, workers: int, last: int, seconds: float, users: int, timeout: float) -> dict:
    """Bring the server to its steady state before the RSS baseline; returns the seconds each step took.

    Every worker serves every shard from its views cache (its background build or check is done), /tasks
    answers (its thresholds thread is done), `seconds` of the mixed load fill the lazily built caches (row
    groups, views, keys), and then the server goes idle (no background work left: answer keys loaded).
    """

    def views_ready() -> bool:  # the process list is read again: a worker may start after the first is healthy
        return sum(open_views(p) >= shards for p in server_processes(served.pid)) >= workers

    steps = {"views_ready_s": until("serving every shard from its views cache", views_ready, timeout)}
    processes = server_processes(served.pid)
    steps["tasks_ready_s"] = until(
        "answering /tasks", lambda: httpx.get(served.url + "/tasks", timeout=timeout).status_code == 200, timeout
    )
    steps["idle_before_warmup_s"] = until("idle", lambda: idle(processes), timeout)
    client(served.url, last, seconds, users, seed=1)
    steps["idle_after_warmup_s"] = until("idle", lambda: idle(processes), timeout)
    return steps


def roles(processes: list[psutil.Process], workers: int) -> dict[int, str]:
    if workers == 1:
        return {processes[0].pid: "server"}
    return {
        p.pid: "worker" if open_views(p) else "supervisor" if i == 0 else "helper" for i, p in enumerate(processes)
    }


def sampled(processes: list[psutil.Process], start: float, stop: threading.Event, into: list) -> None:
    while not stop.wait(SAMPLE_S):
        into.append([round(time.monotonic() - start), round(sum(rss_mb(processes).values()), 1)])


def manifest_sha(data: Path) -> str:
    return hashlib.sha256((data / "manifest.json").read_bytes()).hexdigest()


def soak(data: Path, workers: int, seconds: float, users: int, warmup: float, timeout: float) -> dict:
    """Warm up (see `warm_up`), then `seconds` of mixed load; RSS of every server process before, every
    SAMPLE_S seconds, and after (once idle again, as before). The verdict is on the sum over its processes."""
    manifest = json.loads((data / "manifest.json").read_text())
    last = max(info["first_id"] + info["num_rows"] - 1 for info in manifest["splits"].values())
    sha = manifest_sha(data)
    with local_server(data, extra_args=("--workers", str(workers))) as served:
        steps = warm_up(served, len(manifest["shards"]), workers, last, warmup, users, timeout)
        processes = server_processes(served.pid)
        before, load_before = rss_mb(processes), os.getloadavg()
        start = time.monotonic()
        samples, stop = [[0, round(sum(before.values()), 1)]], threading.Event()
        sampler = threading.Thread(target=sampled, args=(processes, start, stop, samples))
        sampler.start()
        try:
            result = client(served.url, last, seconds, users, seed=2)
        finally:
            stop.set()
            sampler.join()
        steps["idle_after_soak_s"] = until("idle", lambda: idle(processes), timeout)
        after, named = rss_mb(processes), roles(processes, workers)
    if manifest_sha(data) != sha:
        raise RuntimeError(f"{data}/manifest.json changed during the run (dataset rebuilt): run the soak again")
    total_before, total_after = sum(before.values()), sum(after.values())
    growth = (total_after - total_before) / total_before
    return {
        "workers": workers,
        "seconds": seconds,
        "warmup_seconds": warmup,
        "users": users,
        "warm_up": steps,
        **result,
        "rss_measure": "sum of the RSS of all the server's processes (uvicorn supervisor and workers)",
        "rss_mb_before": round(total_before, 1),
        "rss_mb_after": round(total_after, 1),
        "rss_growth": round(growth, 4),
        "rss_per_process": [
            {"role": named[pid], "mb_before": mb, "mb_after": after[pid], "growth": round(after[pid] / mb - 1, 4)}
            for pid, mb in before.items()
        ],
        "rss_mb_peak_under_load": max(mb for _, mb in samples),
        "rss_mb_samples": samples + [[round(time.monotonic() - start), round(total_after, 1)]],
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "manifest_sha256": sha,
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
    parser.add_argument(
        "--warmup", type=float, default=60.0, help="seconds of load before the RSS baseline (fills the key cache)"
    )
    parser.add_argument("--ready-timeout", type=float, default=900.0, help="seconds allowed for each warm-up step")
    parser.add_argument("--users", type=int, default=32, help="concurrent virtual users (connections)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "soak.json")
    args = parser.parse_args()
    runs = [
        soak(args.data, workers, args.seconds, args.users, args.warmup, args.ready_timeout) for workers in args.workers
    ]
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

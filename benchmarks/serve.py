"""Serving benchmark: the reward server (one uvicorn worker) against a bare FastAPI floor, in one run.

    .venv/bin/python benchmarks/serve.py [--data data/episodes] [--seconds 10] [--out benchmarks/results/serve.json]

Needs `wrk` (Debian: apt-get install wrk) as the load client: 2 threads, 8 connections, loopback only, each
run bounded by --seconds. Measured, each against the floor on the same machine with the same method:
GET /episodes/{random id} over the whole dataset and POST /score of a one-shot submission for a random id;
then the server's RSS after the load, /score/batch scores per server CPU-second (batches of 1,024, GRPO
groups of 8 per episode), in-process scoring per CPU-second (best of 5 runs), and start-up to healthy. The floor is
`python benchmarks/serve.py floor --port P`: the same routes answering a constant, same uvicorn settings;
each route is measured on the floor and then at once on the server.

The server builds its agent-views cache (reward_api.views) in a fresh folder (--view-cache, default a temporary
one): the load waits until the server holds every shard's views file, and the build's seconds and bytes are
reported; a second start on the built cache gives start-up and time to views ready on a warm restart.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reward_api.localserver import Served, free_port, local_server, wait_healthy  # noqa: E402
from reward_api.store import read_manifest  # noqa: E402
from reward_api.views import CACHE_ENV, cache_folder  # noqa: E402

CONNECTIONS, THREADS = 8, 2
BATCH, GROUP = 1024, 8
SUBMISSION = {"answer": "Paris", "flagged_ids": [1, 3], "confidence": 0.7}
TARGETS = {"rps_ratio": 0.7, "p99_ratio": 2.0, "rss_mb": 500, "batch_per_core": 50_000, "inproc_per_core": 200_000}
LUA = {
    "episodes": """
request = function()
  return wrk.format("GET", "/episodes/" .. math.random(0, {last}))
end
""",
    "score": """
request = function()
  local body = '{{"episode_id": ' .. math.random(0, {last})
    .. ', "answer": "Paris", "flagged_ids": [1, 3], "confidence": 0.7}}'
  return wrk.format("POST", "/score", {{["Content-Type"] = "application/json"}}, body)
end
""",
}


def floor_app():
    """The floor: FastAPI with the benchmarked routes answering a constant (no store, no scoring)."""
    from fastapi import FastAPI

    app = FastAPI()

    @app.get("/health")
    async def health() -> dict:
        return {"status": "healthy"}

    @app.get("/episodes/{episode_id}")
    async def episode(episode_id: int) -> dict:
        return {"episode_id": episode_id}

    @app.post("/score")
    async def score(body: dict) -> dict:
        return {"episode_id": body.get("episode_id"), "reward": 0.0}

    return app


@contextmanager
def floor_server():
    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "floor", "--port", str(port)], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        yield Served(url, proc.pid, wait_healthy(url, proc, 60))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _seconds(value: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", value).groups()
    return float(number) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[unit]


def wrk(url: str, route: str, last_id: int, seconds: float) -> dict:
    """requests/s, p50 and p99 (ms) of one wrk run on `route` with random ids in 0..last_id."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(LUA[route].format(last=last_id))
    try:
        cmd = ["wrk", f"-t{THREADS}", f"-c{CONNECTIONS}", f"-d{seconds:.0f}s", "--timeout", "30s", "--latency"]
        cmd += ["-s", script.name, url]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=seconds + 60).stdout
    finally:
        os.unlink(script.name)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise RuntimeError(f"{route}: {errors.group(1)} error responses from {url}\n{out}")
    latency = dict(re.findall(r"^\s+(50|99)(?:\.000)?%\s+(\S+)\s*$", out, re.M))
    if len(latency) != 2:
        raise RuntimeError(f"{route}: no latency distribution in wrk's output\n{out}")
    return {
        "requests": int(re.search(r"(\d+) requests in", out).group(1)),
        "rps": round(float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), 1),
        "p50_ms": round(_seconds(latency["50"]) * 1e3, 3),
        "p99_ms": round(_seconds(latency["99"]) * 1e3, 3),
    }


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> dict:
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {key: round(int(status[key].split()[0]) / 1024, 1) for key in ("VmRSS", "VmHWM")}


def open_views(pid: int) -> int:
    """How many views files the server process holds open: each is opened once checked, before it is served."""
    count = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            count += os.readlink(fd).endswith(".views")
        except OSError:
            continue
    return count


def wait_views(served: Served, shards: int, timeout: float = 900) -> float:
    """Seconds until the server serves every shard from its views cache."""
    start = time.monotonic()
    while open_views(served.pid) < shards:
        if time.monotonic() - start > timeout:
            raise RuntimeError(f"the server did not open its {shards} views files in {timeout:.0f} s")
        time.sleep(0.1)
    return time.monotonic() - start


@contextmanager
def view_cache(base: Path | None):
    """Point the servers started inside at `base` (a fresh temporary folder when None) for their views cache."""
    before = os.environ.get(CACHE_ENV)
    with tempfile.TemporaryDirectory(prefix="views-") as temporary:
        os.environ[CACHE_ENV] = str(base or temporary)
        try:
            yield Path(os.environ[CACHE_ENV])
        finally:
            if before is None:
                os.environ.pop(CACHE_ENV)
            else:
                os.environ[CACHE_ENV] = before


def batch_rate(served: Served, last_id: int, batches: int) -> dict:
    """Scores per server CPU-second over /score/batch (the client's own work is not counted)."""
    rng = random.Random(0)
    bodies = []
    for _ in range(batches):
        ids = [rng.randint(0, last_id) for _ in range(BATCH // GROUP)]
        bodies.append(
            json.dumps({"submissions": [{"episode_id": i, **SUBMISSION} for i in ids for _ in range(GROUP)]})
        )
    with httpx.Client(base_url=served.url, timeout=120, headers={"content-type": "application/json"}) as client:
        client.post("/score/batch", content=bodies[0]).raise_for_status()  # warm-up
        before, start = cpu_seconds(served.pid), time.perf_counter()
        for body in bodies:
            client.post("/score/batch", content=body).raise_for_status()
        cpu, wall = cpu_seconds(served.pid) - before, time.perf_counter() - start
    scores = BATCH * batches
    return {
        "scores": scores,
        "server_cpu_s": round(cpu, 3),
        "per_core": round(scores / cpu),
        "per_s": round(scores / wall),
    }


def inprocess_rate(data: Path, last_id: int, scores: int, repeats: int = 5) -> dict:
    """score_submission_key over keys loaded once, per CPU-second of this process: the best of `repeats` runs of
    `scores` each (as timeit does), since a busy host only ever slows a run down."""
    from reward_api.scoring import score_submission_key
    from reward_api.store import EpisodeStore

    store = EpisodeStore(data)
    rng = random.Random(1)
    keys = list(store.keys(rng.randint(0, last_id) for _ in range(1000)).values())
    flagged = SUBMISSION["flagged_ids"]
    cpus = []
    for _ in range(repeats):
        start = time.process_time()
        for i in range(scores):
            score_submission_key("Paris", flagged, 0.7, keys[i % len(keys)])
        cpus.append(time.process_time() - start)
    return {
        "scores": scores,
        "repeats": repeats,
        "cpu_s": [round(cpu, 3) for cpu in cpus],
        "per_core": round(scores / min(cpus)),
        "per_core_median": round(scores / sorted(cpus)[repeats // 2]),
    }


def measure(data: Path, seconds: float, batches: int, inproc: int, cache: Path | None = None) -> dict:
    shards = read_manifest(data).shards
    last_id = sum(s.num_rows for s in shards) - 1
    results: dict = {"episodes": last_id + 1, "connections": CONNECTIONS, "seconds": seconds, "cores": os.cpu_count()}
    with view_cache(cache) as base:
        with local_server(data) as served, floor_server() as floor:
            results["startup_s"] = round(served.startup_s, 2)
            build_s = wait_views(served, len(shards))
            size = sum(path.stat().st_size for path in cache_folder(shards, base).glob("*.views"))
            results["views"] = {
                "shards": len(shards),
                "build_s": round(build_s, 1),  # from healthy to every shard served from the cache
                "build_s_per_1m": round(build_s * 1e6 / (last_id + 1), 1),
                "mb": round(size / 2**20, 1),
                "bytes_per_episode": round(size / (last_id + 1), 1),
            }
            # Each route on the floor, then at once on the server: a shared machine's load drifts within minutes.
            results["load_avg_before"] = round(os.getloadavg()[0], 2)
            results["floor"], results["server"] = {}, {}
            for route in LUA:
                results["floor"][route] = wrk(floor.url, route, last_id, seconds)
                results["server"][route] = wrk(served.url, route, last_id, seconds)
            results["batch"] = batch_rate(served, last_id, batches)
            results["rss_mb"] = rss_mb(served.pid)
        with local_server(data) as served:  # a restart finds the cache built: it only checks and opens the files
            results["views"]["restart_startup_s"] = round(served.startup_s, 2)
            results["views"]["restart_ready_s"] = round(wait_views(served, len(shards)), 1)
    results["inprocess"] = inprocess_rate(data, last_id, inproc)
    results["load_avg_after"] = round(os.getloadavg()[0], 2)
    results["ratios"] = {
        route: {
            "rps": round(results["server"][route]["rps"] / results["floor"][route]["rps"], 3),
            "p99": round(results["server"][route]["p99_ms"] / results["floor"][route]["p99_ms"], 3),
        }
        for route in LUA
    }
    return results


def verdicts(r: dict) -> list[tuple[str, str, str, bool]]:
    rows = []
    for route in LUA:
        server, floor, ratio = r["server"][route], r["floor"][route], r["ratios"][route]
        rows.append(
            (
                f"{route} req/s",
                f"{server['rps']:.0f} vs floor {floor['rps']:.0f}",
                f"{ratio['rps']:.2f}x >= 0.7x",
                ratio["rps"] >= TARGETS["rps_ratio"],
            )
        )
        rows.append(
            (
                f"{route} p50/p99 ms",
                f"{server['p50_ms']}/{server['p99_ms']} vs {floor['p50_ms']}/{floor['p99_ms']}",
                f"p99 {ratio['p99']:.2f}x <= 2x",
                ratio["p99"] <= TARGETS["p99_ratio"],
            )
        )
    rows.append(
        (
            "server RSS MB (peak)",
            f"{r['rss_mb']['VmRSS']} ({r['rss_mb']['VmHWM']})",
            "<= 500",
            r["rss_mb"]["VmHWM"] <= TARGETS["rss_mb"],
        )
    )
    rows.append(
        (
            "/score/batch scores/s/core",
            f"{r['batch']['per_core']:,}",
            ">= 50,000",
            r["batch"]["per_core"] >= TARGETS["batch_per_core"],
        )
    )
    rows.append(
        (
            "in-process scores/s/core",
            f"{r['inprocess']['per_core']:,}",
            ">= 200,000",
            r["inprocess"]["per_core"] >= TARGETS["inproc_per_core"],
        )
    )
    rows.append(("start-up to healthy s", f"{r['startup_s']}", "<= 5", r["startup_s"] <= 5))
    views = r["views"]
    rows.append(
        (
            "views cache: build s, MB (B/episode)",
            f"{views['build_s']}, {views['mb']} ({views['bytes_per_episode']})",
            "built in the background",
            True,
        )
    )
    return rows


def table(rows: list[tuple[str, str, str, bool]]) -> str:
    lines = ["| measure | value | target | met |", "|---|---|---|---|"]
    lines += [f"| {name} | {value} | {target} | {'yes' if ok else 'NO'} |" for name, value, target, ok in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", choices=["run", "floor"], default="run")
    parser.add_argument("--data", type=Path, default=ROOT / "data" / "episodes")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each wrk run")
    parser.add_argument("--batches", type=int, default=30, help="/score/batch requests of 1,024")
    parser.add_argument("--inprocess", type=int, default=100_000, help="in-process scores per repeat (best of 5)")
    parser.add_argument("--port", type=int, help="floor mode: the port to serve on")
    parser.add_argument("--view-cache", type=Path, help="views cache folder (default: a fresh temporary one)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "serve.json")
    args = parser.parse_args(argv)
    if args.mode == "floor":
        import uvicorn

        uvicorn.run(floor_app(), host="127.0.0.1", port=args.port, log_level="info", access_log=False)
        return 0
    if shutil.which("wrk") is None:
        raise SystemExit("wrk not found: apt-get install wrk")
    if not (args.data / "manifest.json").is_file():
        raise SystemExit(f"{args.data}: no dataset folder; build it with `dvc repro`")
    results = measure(args.data, args.seconds, args.batches, args.inprocess, args.view_cache)
    rows = verdicts(results)
    results["targets_met"] = {name: ok for name, _, _, ok in rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(table(rows))
    load = f"{results['load_avg_before']} before, {results['load_avg_after']} after"
    print(f"load average (1 min): {load}, on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Engines benchmark: the episodes stage on the local engine and on Ray, same params, in one run.

    .venv/bin/python benchmarks/engines.py                          # 200k episodes at params.yaml settings
    .venv/bin/python benchmarks/engines.py --episodes 50000 --out /tmp/engines.json
    .venv/bin/python benchmarks/engines.py --cores-per-node 32 --nodes 1 8 64   # the extrapolation table

The facts are built once (not timed). Each run is its own child process: local with 1 worker (the per-core
rate: episodes per CPU-second of the build in that process, imports and start-up left out), local with
`--workers`, and Ray with a fresh one-machine cluster of `--workers` CPUs (its start-up timed apart from the
build). CPU seconds are summed over
the child's process tree (Ray's raylet and workers included), sampled every 100 ms. The shards' sha256 must
agree across runs. The extrapolation assumes the per-core rate holds per node (shards are independent; the
driver only collects ShardInfo), so it is an upper bound that ignores the shared filesystem's write bandwidth.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import psutil  # installed with dvc, a core dependency

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: `benchmarks.build` and `pipeline` from this checkout

from benchmarks.build import scaled  # noqa: E402
from pipeline.params import EpisodesParams, FactsParams, read_params, section, seed  # noqa: E402

SIZES = (10_000_000, 100_000_000, 1_000_000_000)


def child(work: Path, engine: str, workers: int, total: int) -> dict:
    from pipeline.episodes import build_episodes

    data = read_params(ROOT / "params.yaml")
    params = scaled(section(data, "episodes", EpisodesParams), total)
    params = params.model_copy(update={"engine": engine, "workers": workers})
    startup = 0.0
    if engine == "ray":
        import ray

        begin = time.perf_counter()
        from pipeline.engines import ray_init_args

        ray.init(**ray_init_args("", workers), log_to_driver=False)
        startup = time.perf_counter() - begin
    begin, cpu = time.perf_counter(), time.process_time()
    manifest = build_episodes(work / "facts", work / f"{engine}-{workers}", params, seed(data))
    build_s, build_cpu_s = time.perf_counter() - begin, time.process_time() - cpu
    return {
        "episodes": total,
        "shards": len(manifest.shards),
        "startup_s": startup,
        "build_s": build_s,
        "build_cpu_s": build_cpu_s,  # this process only: the whole build when workers == 1
        "sha256": [shard.sha256 for shard in manifest.shards],
    }


def measure(work: Path, engine: str, workers: int, total: int) -> dict:
    """One child run; adds its wall seconds and the CPU seconds of its whole process tree (polled every 100 ms)."""
    result = work / f"{engine}-{workers}.json"
    args = ["--child", engine, "--workers", str(workers), "--episodes", str(total), "--work", str(work)]
    start = time.perf_counter()
    proc = psutil.Popen([sys.executable, __file__, *args, "--result", str(result)])
    cpu: dict[int, float] = {}  # pid → its latest user + system seconds
    while proc.poll() is None:
        for p in [proc, *_children(proc)]:
            with contextlib.suppress(psutil.Error):
                cpu[p.pid] = sum(p.cpu_times()[:2])
        time.sleep(0.1)
    if proc.returncode:
        raise SystemExit(f"benchmark child {engine} failed with exit status {proc.returncode}")
    wall = time.perf_counter() - start
    return json.loads(result.read_text()) | {"wall_s": wall, "cpu_s": sum(cpu.values())}


def _children(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return proc.children(recursive=True)
    except psutil.Error:
        return []


def extrapolate(per_core: float, cores_per_node: int, nodes: list[int]) -> dict:
    """Minutes to build each of SIZES on N nodes, if every core keeps the measured rate."""
    return {str(n): {str(size): size / (per_core * cores_per_node * n) / 60 for size in SIZES} for n in nodes}


def report(results: dict) -> str:
    head = f"{'run':<10}{'episodes':>10}{'shards':>7}{'start s':>9}{'build s':>9}{'ep/s':>9}{'CPU s':>8}"
    rows = [f"{head}{'ep/CPU-s':>10}"]
    for name, r in results["runs"].items():
        rows.append(
            f"{name:<10}{r['episodes']:>10,}{r['shards']:>7}{r['startup_s']:>9.1f}{r['build_s']:>9.1f}"
            f"{r['episodes'] / r['build_s']:>9,.0f}{r['cpu_s']:>8.1f}{r['episodes'] / r['cpu_s']:>10,.0f}"
        )
    s = results["summary"]
    rows.append(
        f"identical shards: {s['identical']}; Ray / local build {s['ray_vs_local_build']:.2f}x "
        f"(with start-up {s['ray_vs_local_wall']:.2f}x); per core {s['episodes_per_cpu_s']:,.0f} episodes / CPU-s "
        "(local-1's build)"
    )
    cores = results["cores_per_node"]
    rows.append(f"minutes at that rate, {cores} cores per node: " + ", ".join(f"{n:,}" for n in SIZES) + " episodes")
    for nodes, minutes in results["extrapolation"].items():
        rows.append(f"  {nodes:>4} nodes: " + ", ".join(f"{m:,.2f}" for m in minutes.values()))
    return "\n".join(rows)


def run(total: int, workers: int, cores_per_node: int, nodes: list[int], out: Path) -> dict:
    from pipeline.facts import build_facts, write_facts

    data = read_params(ROOT / "params.yaml")
    with tempfile.TemporaryDirectory(prefix="engines-bench-") as tmp:
        work = Path(tmp)
        write_facts(build_facts(section(data, "facts", FactsParams), seed(data)), work / "facts")
        runs = {
            "local-1": measure(work, "local", 1, total),
            f"local-{workers}": measure(work, "local", workers, total),
            f"ray-{workers}": measure(work, "ray", workers, total),
        }
    local, ray_run = runs[f"local-{workers}"], runs[f"ray-{workers}"]
    per_core = runs["local-1"]["episodes"] / runs["local-1"]["build_cpu_s"]  # imports and start-up left out
    results = {
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "cores_per_node": cores_per_node,
        "runs": runs,
        "summary": {
            "identical": len({tuple(r.pop("sha256")) for r in runs.values()}) == 1,
            "ray_vs_local_build": ray_run["build_s"] / local["build_s"],
            "ray_vs_local_wall": ray_run["wall_s"] / local["wall_s"],
            "episodes_per_cpu_s": per_core,
        },
        "extrapolation": extrapolate(per_core, cores_per_node, nodes),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=2, help="processes of the local pool and CPUs of Ray")
    parser.add_argument("--cores-per-node", type=int, default=32)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 8, 32, 128])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "engines.json")
    parser.add_argument("--child", choices=("local", "ray"), help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.result.write_text(json.dumps(child(args.work, args.child, args.workers, args.episodes)))
        return
    results = run(args.episodes, args.workers, args.cores_per_node, args.nodes, args.out)
    print(report(results))
    print(f"results: {args.out}")


if __name__ == "__main__":
    main()

"""GRPO step time and completion tokens/s: Unsloth (4-bit + LoRA) against transformers + peft, same run, same model.

The model has Qwen2-1.5B's shape (hidden 1536, 28 layers, 12 heads, 2 KV heads, intermediate 8960, tied
embeddings, Qwen2's 151,936-row vocabulary) with random weights, and an 8,192-token BPE tokenizer trained on
episode text (`train.tiny`); both are built offline, so nothing is downloaded. Each backend runs the same short
one-shot GRPO run (`train.trainer.build_trainer`: the project's prompts and reward, fixed seed) in its own
process, so GPU memory is released between them: Unsloth (4-bit + LoRA), transformers + peft in bf16 + LoRA, and
transformers + peft in 4-bit (bitsandbytes) + LoRA. A backend that cannot run here gets a "skipped: ..." record.

The device machine reaches no package registry, so the packages its image lacks travel with the working tree:

    .venv/bin/python benchmarks/grpo_gpu.py --prepare .gpu_bench    # here, ~10-20 s: packages (47 MiB) and episodes
    # there, with carry [".gpu_bench"] and timeout_s 600; 265 s on an H200 (model 21 s, Unsloth 115 s, each
    # transformers backend ~60 s), at most --budget 420 s: a backend that would start later is recorded as skipped,
    # and the JSON is rewritten after each backend, so a cut-off run keeps what it measured.
    PYTHONPATH=.gpu_bench/site python3 benchmarks/grpo_gpu.py --data .gpu_bench/episodes --out $OUT/grpo_gpu.json

    .venv/bin/python benchmarks/grpo_gpu.py --size tiny --device cpu    # the CPU check the test suite runs
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BACKENDS = ("unsloth", "transformers-bf16", "transformers-4bit")
SIZES = {  # TinyConfig fields; "vocab" is the model's embedding rows (None: the tokenizer's own size)
    "1.5b": {"hidden_size": 1536, "intermediate_size": 8960, "num_hidden_layers": 28, "num_attention_heads": 12,
             "num_key_value_heads": 2, "vocab_size": 8192, "vocab": 151936},
    "tiny": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
             "num_key_value_heads": 2, "vocab_size": 1024, "vocab": None},
}  # fmt: skip
PACKAGES = ("torch", "transformers", "trl", "peft", "datasets", "accelerate", "bitsandbytes", "unsloth", "unsloth_zoo")
# What the device image lacks besides requirements-gpu.txt's unsloth/trl/datasets/peft/bitsandbytes pins.
# torchao (20 MB, Unsloth's QAT/fp8 paths) and hf_transfer (9 MB, downloads) are left out: the carry limit is 64 MiB.
EXTRA_WHEELS = (
    "dill<0.4.2",
    "multiprocess<0.70.20",
    "fsspec<=2026.2.0",
    "typing-extensions",
    "tyro",
    "shtab",
    "docstring-parser",
    "typeguard",
    "msgspec",
    "cut_cross_entropy",
    "json5",
    "nest-asyncio",
    "structlog",
)
# Unpacked but not needed there: Unsloth's web studio and CLI, a stray test package, bitsandbytes' other GPU builds.
PRUNE = (
    "studio",
    "unsloth_cli",
    "test",
    "bin",
    "bitsandbytes/libbitsandbytes_[!c]*.so",
    "bitsandbytes/*cuda1[12]?.so",
)
KEEP = ("libbitsandbytes_cuda130.so", "libbitsandbytes_cuda132.so")  # the device's torch is built for CUDA 13.0
ON_DEVICE = ("torch", "transformers", "accelerate", "matplotlib")  # already in the device image
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "UNSLOTH_DISABLE_STATISTICS": "1", "TOKENIZERS_PARALLELISM": "false"}  # fmt: skip


def versions() -> dict[str, str | None]:
    found = {}
    for name in PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def skip_reason(backend: str, cuda: bool) -> str | None:
    """None when the backend can run; else every reason it cannot, e.g. "skipped: no CUDA; unsloth not installed"."""
    missing = [] if cuda or backend == "transformers-bf16" else ["no CUDA"]
    needs = {"unsloth": "unsloth", "transformers-4bit": "bitsandbytes"}.get(backend)
    if needs and importlib.util.find_spec(needs) is None:
        missing.append(f"{needs} not installed")
    return f"skipped: {'; '.join(missing)}" if missing else None


def build_model(spec: dict) -> dict:
    """Tokenizer trained on train-split text, then the random-weight model (on the GPU when there is one)."""
    import torch

    from train.data import head, stream_episodes
    from train.prompts import episode_text
    from train.tiny import TinyConfig, build_model, build_tokenizer

    size = dict(SIZES[spec["size"]])
    vocab = size.pop("vocab")
    texts = [episode_text(r["question"], r["documents"]) for r in head(stream_episodes(spec["data"], "train"), 300)]
    tokenizer = build_tokenizer(texts, size["vocab_size"])
    cuda = spec["device"] == "cuda"
    with torch.device("cuda" if cuda else "cpu"):
        model = build_model(TinyConfig(**size, seed=spec["seed"]), tokenizer)
        if vocab:
            model.resize_token_embeddings(vocab, mean_resizing=False)
    model = model.to(torch.bfloat16 if cuda else torch.float32)
    tokenizer.save_pretrained(spec["model"])
    model.save_pretrained(spec["model"])
    params = sum(p.numel() for p in model.parameters())
    gpu = torch.cuda.get_device_name(0) if cuda else None
    return {"parameters": params, "vocab_rows": model.config.vocab_size, "tokenizer_size": len(tokenizer), "gpu": gpu}


def run_backend(spec: dict) -> dict:
    """One short GRPO run; step i lasts from the end of step i-1 (or train start) to its end, generation included."""
    import torch  # before Unsloth is fine: it patches transformers, trl and peft, not torch

    backend = spec["backend"]
    if spec["device"] == "cpu":
        torch.set_num_threads(1)  # on shared cores torch's own threads run several times slower
    if backend == "unsloth":
        from train.backend import import_unsloth_first

        if not import_unsloth_first():
            raise RuntimeError("unsloth backend asked for, but CUDA or unsloth is missing")
    from transformers import TrainerCallback

    from train.backend import _peft_policy, _unsloth_policy
    from train.config import TrainParams
    from train.data import stream_episodes
    from train.trainer import build_trainer

    class StepClock(TrainerCallback):
        def __init__(self) -> None:
            self.ends: list[float] = []

        def _mark(self) -> None:
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            self.ends.append(time.perf_counter())

        def on_train_begin(self, args, state, control, **kwargs):
            self._mark()

        def on_step_end(self, args, state, control, **kwargs):
            self._mark()

    params = TrainParams(
        model=spec["model"], data=spec["data"], max_steps=spec["steps"], output_dir=spec["output_dir"],
        load_in_4bit=backend != "transformers-bf16", num_generations=spec["num_generations"],
        per_device_train_batch_size=spec["batch"], gradient_accumulation_steps=1,
        max_completion_length=spec["max_completion_length"], logging_steps=1, save_steps=10**6, seed=spec["seed"],
    )  # fmt: skip
    policy = (_unsloth_policy if backend == "unsloth" else _peft_policy)(params)
    trainer = build_trainer(params, policy, stream_episodes(params.data, params.split))
    clock = StepClock()
    trainer.add_callback(clock)
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    trainer.train()
    steps = [b - a for a, b in zip(clock.ends, clock.ends[1:], strict=False)]
    lengths = [e["completions/mean_length"] for e in trainer.state.log_history if "completions/mean_length" in e]
    measured = steps[1:] or steps  # the first step compiles and warms the caches
    tokens = [n * spec["batch"] for n in lengths[-len(measured) :]] if len(lengths) >= len(measured) else []
    return {
        "status": "ok",
        "backend": policy.backend,
        "dtype": "4-bit" if params.load_in_4bit and torch.cuda.is_available() else str(policy.model.dtype),
        "step_seconds": steps,
        "median_step_seconds": statistics.median(measured),
        "completion_tokens_per_second": sum(tokens) / sum(measured) if tokens else None,
        "mean_completion_length": statistics.fmean(lengths) if lengths else None,
        "prompt_and_completion_tokens": max(
            (e["num_tokens"] for e in trainer.state.log_history if "num_tokens" in e), default=None
        ),
        "peak_gpu_memory_bytes": torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None,
        "versions": versions(),
    }


def run_child(role: str, spec: dict, work: Path, timeout: float) -> dict:
    """Run `role` in a fresh interpreter (GPU memory is freed when it exits); a failure becomes a record."""
    spec_file, result_file = work / f"{role}.spec.json", work / f"{role}.result.json"
    spec_file.write_text(json.dumps(spec))
    result_file.unlink(missing_ok=True)
    command = [sys.executable, __file__, "--child", role, str(spec_file), str(result_file)]
    env = {**os.environ, **OFFLINE, **({} if spec["device"] == "cuda" else {"CUDA_VISIBLE_DEVICES": ""})}
    start = time.perf_counter()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:  # its captured output is bytes, whatever `text` says
        tail = (err.stderr or b"").decode(errors="replace")[-3000:]
        return {"status": f"failed: timed out after {timeout:.0f} s", "log_tail": tail}
    wall = round(time.perf_counter() - start, 1)
    if not result_file.is_file():
        return {"status": f"failed: exit {done.returncode}", "wall_seconds": wall, "log_tail": done.stderr[-3000:]}
    return {**json.loads(result_file.read_text()), "wall_seconds": wall, "exit_code": done.returncode}


def child_main(role: str, spec_file: Path, result_file: Path) -> int:
    spec = json.loads(spec_file.read_text())
    result = build_model(spec) if role == "build" else run_backend(spec)
    result_file.write_text(json.dumps(result))
    sys.stdout.flush()
    # A stream left half-read at max_steps can abort at interpreter exit; the figures are written already.
    os._exit(0)


def ratios(results: dict) -> dict:
    """Unsloth's figures over each transformers backend's, from this same run."""
    fast, found = results.get("unsloth", {}), {}
    keys = ("median_step_seconds", "completion_tokens_per_second", "peak_gpu_memory_bytes")
    for name in ("transformers-bf16", "transformers-4bit"):
        base = results.get(name, {})
        if fast.get("status") == "ok" and base.get("status") == "ok":
            found |= {f"unsloth/{name} {k}": fast[k] / base[k] for k in keys if fast.get(k) and base.get(k)}
    return found


def table(report: dict) -> str:
    lines = ["| backend | status | median step s | completion tok/s | peak GPU GiB |", "|---|---|---:|---:|---:|"]
    for name, r in report["results"].items():
        peak = r.get("peak_gpu_memory_bytes")
        tps = r.get("completion_tokens_per_second")
        step = f"{r['median_step_seconds']:.2f}" if "median_step_seconds" in r else ""
        cells = [name, r["status"], step, f"{tps:.0f}" if tps else "", f"{peak / 2**30:.1f}" if peak else ""]
        lines.append(f"| {' | '.join(cells)} |")
    lines += [f"{k}: {v:.2f}" for k, v in report["ratios"].items()]
    return "\n".join(lines)


def prepare(folder: Path) -> None:
    """Here, where a registry is reachable: the packages the device image lacks, unpacked and pruned, and a dataset."""
    exclude = ROOT / ".git" / "info" / "exclude"
    entry = f"/{folder.resolve().relative_to(ROOT)}/"
    listed = exclude.read_text() if exclude.is_file() else ""
    if exclude.parent.is_dir() and entry not in listed:
        exclude.write_text(listed + f"{entry}\n")
    pins = [line.strip() for line in (ROOT / "requirements-gpu.txt").read_text().splitlines()]
    pins = [p for p in pins if p and not p.startswith("#") and not p.startswith(ON_DEVICE)]
    # The project's own dependencies that training imports (train.config reads params.yaml with ruamel.yaml).
    ours = ("pydantic", "pydantic-core", "annotated-types", "typing-inspection", "ruamel.yaml")
    pins += [f"{name}=={version(name)}" for name in ours]
    site = folder / "site"
    platforms = [f"--platform={p}" for p in ("manylinux_2_28_x86_64", "manylinux_2_24_x86_64", "manylinux2014_x86_64")]
    pip = [sys.executable, "-m", "pip"]
    target = ["--only-binary=:all:", "--python-version=3.12", "--implementation=cp", *platforms]
    with tempfile.TemporaryDirectory() as wheels:
        subprocess.run([*pip, "download", "--no-deps", *target, "-d", wheels, *pins, *EXTRA_WHEELS], check=True)
        found = sorted(map(str, Path(wheels).glob("*.whl")))
        subprocess.run(
            [*pip, "install", "-q", "--no-deps", "--no-compile", *target, "--target", str(site), *found], check=True
        )
    for path in [found for pattern in PRUNE for found in site.glob(pattern) if found.name not in KEEP]:
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    build_dataset(folder)
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    print(f"{folder}: packages and episodes, {size / 2**20:.0f} MiB to carry (the tree and carry: 64 MiB at most)")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="1.5b")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--data", type=Path, help="dataset folder (default: a small build under --work)")
    parser.add_argument("--work", type=Path, help="model, dataset and run folders (default: a temporary folder)")
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    parser.add_argument("--steps", type=int, help="GRPO steps per backend, the first one a warm-up (1.5b: 4, tiny: 2)")
    parser.add_argument("--num-generations", type=int, help="completions per prompt (1.5b: 8, tiny: 4)")
    parser.add_argument("--batch", type=int, help="completions per step, a multiple of --num-generations (1.5b: 16)")
    parser.add_argument("--max-completion-length", type=int, help="(1.5b: 128, tiny: 16)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--timeout", type=float, default=180, help="seconds one child process may take")
    parser.add_argument("--budget", type=float, default=420, help="seconds for everything; later backends are skipped")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "grpo_gpu.json")
    parser.add_argument("--prepare", type=Path, metavar="FOLDER", help="fetch the device's packages and a dataset")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child or args.prepare:
        return args
    big = args.size == "1.5b"
    args.steps = args.steps or (4 if big else 2)
    args.num_generations = args.num_generations or (8 if big else 4)
    args.batch = args.batch or args.num_generations * (2 if big else 1)
    args.max_completion_length = args.max_completion_length or (128 if big else 16)
    if args.batch % args.num_generations or args.steps < 1:
        parser.exit(2, "error: --batch must be a multiple of --num-generations, and --steps at least 1\n")
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        parser.exit(2, "error: --device cuda, but torch sees no CUDA device (use --device cpu for the CPU check)\n")
    return args


def measure(args: argparse.Namespace, work: Path) -> dict:
    """Build the model, then run each backend in turn; the report is written after each, so a cut-off run keeps it."""
    start = time.perf_counter()
    keys = ("size", "device", "seed", "steps", "num_generations", "batch", "max_completion_length")
    spec = {key: getattr(args, key) for key in keys}
    spec["data"] = str(args.data or build_dataset(work / "dataset"))
    spec["model"] = str(work / "model")
    report = {"settings": spec, "model": run_child("build", spec, work, args.timeout), "results": {}, "ratios": {}}
    if "parameters" not in report["model"]:
        raise SystemExit(f"error: model build failed: {json.dumps(report['model'])[-3000:]}")
    for backend in args.backends:
        left = args.budget - (time.perf_counter() - start)
        reason = skip_reason(backend, args.device == "cuda") or (
            f"skipped: {left:.0f} s of --budget left" if left < 60 else None
        )
        child = {**spec, "backend": backend, "output_dir": str(work / backend)}
        report["results"][backend] = (
            {"status": reason} if reason else run_child(backend, child, work, min(args.timeout, left))
        )
        report["ratios"] = ratios(report["results"])
        args.out.write_text(json.dumps(report, indent=1) + "\n")
        print(f"{backend}: {report['results'][backend]['status']}", flush=True)
    return report


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.child:
        return child_main(args.child[0], Path(args.child[1]), Path(args.child[2]))
    if args.prepare:
        prepare(args.prepare)
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="grpo_gpu_") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        report = measure(args, work)
    print(table(report))
    return 1 if any(r["status"].startswith("failed") for r in report["results"].values()) else 0


def build_dataset(out: Path) -> Path:
    """A small build with the real pipeline from offline fact sources (the learning demo's facts); the episodes."""
    from pipeline.episodes import build_episodes
    from pipeline.facts import build_facts, write_facts
    from pipeline.params import EpisodesParams
    from train.demo_data import DEMO_FACTS, DEMO_SEED

    episodes = EpisodesParams(train=512, validation=32, test=32, workers=1, shard_rows=512, row_group_rows=128)
    write_facts(build_facts(DEMO_FACTS, DEMO_SEED), out / "facts")
    build_episodes(out / "facts", out / "episodes", episodes, DEMO_SEED)
    return out / "episodes"


if __name__ == "__main__":
    raise SystemExit(main())

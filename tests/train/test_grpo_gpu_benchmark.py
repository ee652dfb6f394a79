"""The GPU benchmark script's CPU mode: a tiny model, the transformers backend only, a record for each skipped one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "grpo_gpu.py"
NO_CUDA = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}


def bench(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], env=NO_CUDA, capture_output=True, text=True, timeout=timeout
    )


def test_tiny_cpu_run_measures_transformers_and_records_skips(episodes_dir, tmp_path):
    out = tmp_path / "grpo_gpu.json"
    done = bench(
        "--size", "tiny", "--device", "cpu", "--data", str(episodes_dir), "--work", str(tmp_path), "--out", str(out)
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    ran = report["results"]["transformers-bf16"]
    assert ran["status"] == "ok", ran
    assert ran["backend"] == "transformers+peft" and ran["dtype"] == "torch.float32"
    assert len(ran["step_seconds"]) == report["settings"]["steps"] == 2
    assert ran["median_step_seconds"] == ran["step_seconds"][1] > 0  # the first step is the warm-up
    assert ran["mean_completion_length"] > 0 and ran["completion_tokens_per_second"] > 0
    assert ran["prompt_and_completion_tokens"] > 2 * 4 * ran["mean_completion_length"]  # prompts are counted too
    assert ran["peak_gpu_memory_bytes"] is None and ran["versions"]["trl"]
    assert report["results"]["unsloth"]["status"].startswith("skipped: no CUDA")
    assert report["results"]["transformers-4bit"]["status"].startswith("skipped: no CUDA")
    assert report["ratios"] == {}
    assert report["model"]["parameters"] > 0 and report["model"]["vocab_rows"] == report["model"]["tokenizer_size"]
    assert "| transformers-bf16 | ok |" in done.stdout


def test_cuda_asked_without_cuda_fails_at_once(tmp_path):
    done = bench("--device", "cuda", "--out", str(tmp_path / "x.json"), timeout=120)
    assert done.returncode == 2
    assert "--device cuda, but torch sees no CUDA device" in done.stderr
    assert not (tmp_path / "x.json").exists()


def test_batch_must_hold_whole_groups(tmp_path):
    done = bench("--device", "cpu", "--num-generations", "4", "--batch", "6", "--out", str(tmp_path / "x.json"))
    assert done.returncode == 2 and "multiple of --num-generations" in done.stderr


def test_a_training_run_imports_none_of_the_build_libraries():
    """The device image has neither polars, DuckDB nor Faker, and `--prepare` does not carry them (the first GPU run
    found `train.config` reaching polars through the shard plan's module)."""
    modules = "train.backend, train.config, train.data, train.prompts, train.rewards, train.tiny, train.trainer"
    probe = f"import json, sys, {modules}; print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run([sys.executable, "-c", probe], env=NO_CUDA, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    imported = set(json.loads(done.stdout))
    assert "train" in imported and {"polars", "duckdb", "faker"}.isdisjoint(imported)

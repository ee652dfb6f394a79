"""Stream benchmark: episodes read with `datasets` streaming → GRPO chat prompts → token ids, on one core.

    .venv/bin/python benchmarks/stream.py --data data/episodes --rows 20000 --out benchmarks/results/stream.json

Three rates over the same rows, each in one pass from the start of the split: the raw stream, the stream mapped
to chat prompts (train.data.grpo_rows, what GRPOTrainer consumes), and those prompts rendered with the chat
template and tokenized. The tokenizer is a byte-level BPE built offline (train.tiny; no weights can be
downloaded here), with Qwen2.5's chat template. The target compares the tokenized rate with a deliberately
fast GPU: one GRPO step per second at the spec's batch (4 × 4 completions, 8 per prompt = 2 prompts a step).
"""

from __future__ import annotations

import os

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # one core: no tokenizer thread pool
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from itertools import islice  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script from this checkout

from train.data import close_early, grpo_rows, head, stream_episodes  # noqa: E402
from train.prompts import episode_text  # noqa: E402

GPU_PROMPTS_PER_S = 2.0  # 1 step/s × (per_device_train_batch_size 4 × gradient_accumulation_steps 4) / 8 generations
TARGET_RATIO = 100.0


def rate(stream, limit: int, work) -> dict[str, float]:
    """Rows per CPU second of reading `limit` rows from a fresh stream (opening it included) and doing `work`."""
    started = time.process_time()
    rows = iter(stream)
    count = 0
    try:
        for row in islice(rows, limit):
            work(row)
            count += 1
    finally:
        close_early(rows)
    cpu = time.process_time() - started
    return {"rows": count, "cpu_s": round(cpu, 3), "rows_per_cpu_s": round(count / cpu, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="data/episodes", help="dataset folder or Hub repo id")
    parser.add_argument("--split", default="train")
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    from train.tiny import build_tokenizer

    sample = head(stream_episodes(args.data, args.split), 500)
    tokenizer = build_tokenizer([episode_text(r["question"], r["documents"]) for r in sample], 4096)
    raw = rate(stream_episodes(args.data, args.split), args.rows, lambda row: None)
    prompts = rate(grpo_rows(stream_episodes(args.data, args.split), "oneshot"), args.rows, lambda row: None)
    tokens: list[int] = []

    def tokenize(row: dict) -> None:
        ids = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=True)["input_ids"]
        tokens.append(len(ids))

    tokenized = rate(grpo_rows(stream_episodes(args.data, args.split), "oneshot"), args.rows, tokenize)
    report = {
        "data": args.data,
        "split": args.split,
        "raw_stream": raw,
        "chat_prompts": prompts,
        "chat_prompts_tokenized": {**tokenized, "mean_prompt_tokens": round(sum(tokens) / len(tokens), 1)},
        "gpu_prompts_per_s_assumed": GPU_PROMPTS_PER_S,
        "ratio_tokenized_vs_gpu": round(tokenized["rows_per_cpu_s"] / GPU_PROMPTS_PER_S, 1),
        "target_ratio": TARGET_RATIO,
    }
    report["meets_target"] = report["ratio_tokenized_vs_gpu"] >= TARGET_RATIO
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0 if report["meets_target"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

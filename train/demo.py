"""`python -m train.demo`: evidence that the training loop learns, at a scale that fits a CPU.

No weights can be downloaded here, so a small Qwen2 model and its tokenizer are built from a config,
warm-started by supervised fine-tuning on submissions from the train split (the oracle's, and with
`--hedge-share` some that give the answer alone at confidence 0), then trained with GRPO through
`python -m train.grpo` on the same streamed episodes. Validation reward is measured before and after
GRPO, greedily and over sampled replies (what GRPO raises); `learning.json` and `learning.png` hold
the figures.

    python -m train.demo --data data/episodes --out reports/learning
    python -m train.demo --build-data --out reports/learning   # on its own small build (<out>/dataset)
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pipeline.console import TIMED, log_to_console
from pipeline.problems import Location, dotted, one_line
from train.agents import Sampling, load_model, oneshot_agent, oracle, submission
from train.evaluate import evaluate, read_rows
from train.prompts import episode_text, oneshot_prompt

logger = logging.getLogger("train.demo")


class DemoParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    data: str = "data/episodes"
    train_rows: int = Field(1600, gt=0, description="Train episodes for the tokenizer and the warm start")
    eval_rows: int = Field(64, gt=0, description="Validation episodes scored before and after GRPO")
    vocab_size: int = Field(4096, gt=0)
    hidden_size: int = Field(64, gt=0)
    num_hidden_layers: int = Field(2, gt=0)
    sft_steps: int = Field(400, gt=0)
    sft_batch_size: int = Field(2, gt=0)
    sft_learning_rate: float = Field(3e-3, gt=0)
    hedge_share: float = Field(
        0.0, ge=0, le=1, description="Share of warm-start targets that hedge: the answer alone, at confidence 0"
    )
    grpo_steps: int = Field(30, gt=0)
    grpo_prompts: int = Field(1, gt=0, description="Episodes per GRPO step, each replied to num_generations times")
    grpo_learning_rate: float = Field(1e-3, gt=0)
    format_reward_weight: float = Field(
        0.0, ge=0, description="Weight of the format reward in GRPO; 0 trains on the reward alone"
    )
    num_generations: int = Field(8, ge=2)
    max_completion_length: int = Field(64, gt=0)
    eval_samples: int = Field(8, ge=0, description="Sampled replies per validation episode (0: greedy only)")

    @model_validator(mode="after")
    def _runs(self) -> DemoParams:
        """What the tiny model and the GRPO run accept, known before any work (`--build-data` takes minutes)."""
        from train.config import TrainParams

        for what, check in (("model", self.tiny), ("GRPO", lambda: TrainParams(**grpo_section(self, Path(), Path())))):
            try:
                check()
            except ValidationError as err:
                raise ValueError(f"the {what} it makes: {one_line(err)}") from None
        return self

    def tiny(self) -> Any:
        """The TinyConfig of the base model."""
        from train.tiny import TinyConfig

        return TinyConfig(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            intermediate_size=2 * self.hidden_size,
            num_hidden_layers=self.num_hidden_layers,
        )


def _flag(loc: Location) -> str:
    return f"--{dotted(loc).replace('_', '-')}" if loc else ""


def warm_targets(rows: list[dict[str, Any]], hedge_share: float) -> list[str]:
    """The oracle's submissions, and for a seeded `hedge_share` of the episodes the right answer alone at
    confidence 0. Copying the oracle teaches full confidence and flags a small model cannot back; the hedged reply
    scores the empty submission plus 0.4 per right answer, so GRPO has a reply to move towards that pays whatever
    the model's skill."""
    hedged = np.random.default_rng(0x4ED6E).random(len(rows)) < hedge_share
    return [submission(r["answer"], [], 0.0) if h else t for r, t, h in zip(rows, oracle(rows), hedged, strict=True)]


def sft(base: Path, rows: list[dict[str, Any]], targets: list[str], params: DemoParams, out: Path) -> Path:
    """Supervised warm start on each row's target reply (`warm_targets`; the completion only is learned)."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    from train.backend import load_tokenizer

    examples = [
        {"prompt": oneshot_prompt(r["question"], r["documents"]), "completion": [{"role": "assistant", "content": t}]}
        for r, t in zip(rows, targets, strict=True)
    ]
    config = SFTConfig(
        output_dir=str(out / "sft_run"),
        max_steps=params.sft_steps,
        per_device_train_batch_size=params.sft_batch_size,
        learning_rate=params.sft_learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=max(1, params.sft_steps // 20),
        max_length=None,
        logging_steps=10,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
    )
    trainer = SFTTrainer(
        model=AutoModelForCausalLM.from_pretrained(base),
        args=config,
        train_dataset=Dataset.from_list(examples),
        processing_class=load_tokenizer(str(base)),
    )
    trainer.train()
    trainer.save_model(str(out / "sft"))
    (out / "sft_log_history.json").write_text(json.dumps(trainer.state.log_history, indent=1))
    return out / "sft"


def grpo_section(params: DemoParams, model: Path, out: Path) -> dict[str, Any]:
    """The `train:` section of the demo's GRPO run."""
    return {
        "model": str(model),
        "data": params.data,
        "max_steps": params.grpo_steps,
        "output_dir": str(out / "grpo"),
        "learning_rate": params.grpo_learning_rate,
        "num_generations": params.num_generations,
        "per_device_train_batch_size": params.num_generations * params.grpo_prompts,
        "gradient_accumulation_steps": 1,
        "max_completion_length": params.max_completion_length,
        "logging_steps": 1,
        "save_steps": params.grpo_steps,
        "lora": {"r": 16, "lora_alpha": 32},
        "format_reward_weight": params.format_reward_weight,
    }


def grpo(model: Path, params: DemoParams, out: Path) -> Path:
    """GRPO from the warm-started model, through the product's own entry point and params file. An earlier demo's
    GRPO output is removed first: its checkpoints belong to another warm start, and train.grpo would refuse them."""
    from train.grpo import main

    shutil.rmtree(out / "grpo", ignore_errors=True)

    section = grpo_section(params, model, out)
    path = out / "grpo_params.yaml"
    path.write_text(yaml.safe_dump({"train": section}, sort_keys=False))
    if main(["--params", str(path)]) != 0:
        raise RuntimeError("GRPO run failed")
    return out / "grpo"


def validation(model: Path, params: DemoParams, rows: list[dict[str, Any]]) -> dict[str, dict]:
    """Greedy, and (with eval_samples) over sampled replies: GRPO raises the mean reward of its samples, which can
    move while the greedy reply stays put."""
    loaded = load_model(str(model))
    results = {"greedy": evaluate(oneshot_agent(*loaded, params.max_completion_length), rows)}
    if params.eval_samples:
        agent = oneshot_agent(*loaded, params.max_completion_length, sampling=Sampling(params.eval_samples))
        results["sampled"] = evaluate(agent, rows, params.eval_samples)
    for decoding, result in results.items():
        logger.info("validation reward (%s): %s", decoding, result["reward"])
    return results


def run(params: DemoParams, out: Path, train_rows: list[dict[str, Any]], eval_rows: list[dict[str, Any]]) -> dict:
    """Warm start on `train_rows`, GRPO on the stream of params.data's train split; `eval_rows` scored before and
    after GRPO."""
    from train.plots import write_learning
    from train.tiny import build_tiny

    started = time.monotonic()
    tiny = params.tiny()
    targets = warm_targets(train_rows, params.hedge_share)
    texts = [episode_text(r["question"], r["documents"]) for r in train_rows]
    base = build_tiny(out / "base", texts + targets, tiny)
    warm = sft(base, train_rows, targets, params, out)
    before = validation(warm, params, eval_rows)
    tuned = grpo(warm, params, out)
    after = validation(tuned, params, eval_rows)
    report = {
        "params": params.model_dump(),
        "validation": {"after_sft": before, "after_grpo": after},
        "minutes": round((time.monotonic() - started) / 60, 1),
    }
    (out / "learning.json").write_text(json.dumps(report, indent=1))
    history = json.loads((tuned / "log_history.json").read_text())
    write_learning(history, before, after, out / "learning.png")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.demo", description=__doc__.splitlines()[0])
    for name, field in DemoParams.model_fields.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(field.default), default=field.default)
    parser.add_argument("--out", type=Path, default=Path("reports/learning"))
    parser.add_argument("--build-data", action="store_true", help="build a small dataset in <out>/dataset and use it")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 is fastest on a shared machine)")
    args = vars(parser.parse_args(argv))
    out, threads, build_data = args.pop("out"), args.pop("threads"), args.pop("build_data")
    try:  # before any work: --build-data takes minutes
        params = DemoParams(**args)
    except ValidationError as err:
        parser.error(one_line(err, _flag))
    if threads < 1:
        parser.error(f"--threads must be >= 1, got {threads}")
    if out.exists() and not out.is_dir():
        parser.error(f"--out {out}: a file, not a folder")
    import torch

    torch.set_num_threads(threads)
    log_to_console(TIMED)
    if build_data:
        from train.demo_data import build_demo_dataset

        params = params.model_copy(update={"data": str(build_demo_dataset(out / "dataset"))})
    train_rows = read_rows(parser, params.data, "train", params.train_rows)
    eval_rows = read_rows(parser, params.data, "validation", params.eval_rows)
    out.mkdir(parents=True, exist_ok=True)
    report = run(params, out, train_rows, eval_rows)
    for decoding in report["validation"]["after_sft"]:
        before, after = (report["validation"][k][decoding]["reward"]["mean"] for k in ("after_sft", "after_grpo"))
        logger.info("validation reward (%s) %.4f -> %.4f", decoding, before, after)
    logger.info("%.1f min; see %s", report["minutes"], out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

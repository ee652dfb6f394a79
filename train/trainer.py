"""GRPO on streamed episodes: builds TRL's trainer from the typed params, trains, writes the outputs.

Imports TRL, so `train.grpo` imports this module only after Unsloth had its chance to patch.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

from datasets import IterableDataset
from transformers.trainer import TRAINER_STATE_NAME
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, get_last_checkpoint
from trl import GRPOConfig, GRPOTrainer
from trl.chat_template_utils import qwen2_5_chat_template, supports_tool_calling

from train.backend import Policy
from train.config import ParamsError, TrainParams
from train.data import grpo_rows
from train.plots import write_curves
from train.rewards import environment_reward, episode_reward, format_reward
from train.toolplay import training_template, with_response_parser
from train.tools import ContextCorruptionEnv

logger = logging.getLogger(__name__)
_CHECKPOINT = re.compile(rf"{PREFIX_CHECKPOINT_DIR}-(\d+)")  # as transformers names them

_GRPO_KEYS = (
    "learning_rate",
    "num_generations",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "max_completion_length",
    "max_tool_calling_iterations",
    "temperature",
    "logging_steps",
    "save_steps",
    "seed",
    "max_steps",
    "output_dir",
    "report_to",
)


def grpo_config(params: TrainParams, overrides: dict[str, Any]) -> GRPOConfig:
    settings = {key: getattr(params, key) for key in _GRPO_KEYS}
    if params.mode == "oneshot":
        settings["reward_weights"] = [1.0, params.format_reward_weight]
    # Rows are stored pre-shuffled: a shuffle buffer would only add memory and the stream-end sleep.
    return GRPOConfig(**settings, shuffle_dataset=False, logging_first_step=True, **overrides)


def ensure_tool_template(tokenizer: Any) -> None:
    """Tool mode needs a template that renders tool calls (ChatML models without one get TRL's Qwen2.5 template),
    whose replies TRL can parse, and that it can train multi-turn: prefix-preserving, or with a training version."""
    if not supports_tool_calling(tokenizer):
        if "<|im_start|>" not in (tokenizer.chat_template or ""):
            raise ValueError("mode tools: the model's chat template cannot render tool calls and is not ChatML")
        logger.warning("chat template cannot render tool calls: using TRL's Qwen2.5 (ChatML) tool template")
        tokenizer.chat_template = qwen2_5_chat_template
    try:  # the checks GRPOTrainer makes of a tool-mode template, before training (else a traceback after loading)
        training_template(with_response_parser(tokenizer))
    except ValueError as err:
        raise ValueError(f"mode tools: {err}") from err


def build_trainer(params: TrainParams, policy: Policy, stream: IterableDataset) -> GRPOTrainer:
    """`stream`: the raw episodes (`train.data.stream_episodes`), opened before the model is loaded; in tool mode
    the policy's tokenizer has passed `ensure_tool_template`."""
    if params.mode == "tools":
        kwargs: dict[str, Any] = {"environment_factory": ContextCorruptionEnv, "reward_funcs": [environment_reward]}
    else:
        kwargs = {"reward_funcs": [episode_reward, format_reward]}
    return GRPOTrainer(
        model=policy.model,
        args=grpo_config(params, policy.config_overrides),
        train_dataset=grpo_rows(stream, params.mode),
        processing_class=policy.tokenizer,
        peft_config=policy.peft_config,
        **kwargs,
    )


def checkpoint_to_resume(params: TrainParams) -> str | None:
    """The checkpoint `train.resume_from_checkpoint` names (true: the latest in output_dir), None for a fresh run.

    A fresh run over an output_dir that holds checkpoints is refused: it would restart at step 1 and overwrite them.
    """
    out, resume = params.output_dir, params.resume_from_checkpoint
    above = next(path for path in (Path(out), *Path(out).parents) if path.exists())  # "." or "/" at the latest
    if not above.is_dir():
        where = "is a file" if above == Path(out) else f"lies under {above}, a file"
        raise ParamsError(f"train.output_dir {out} {where}: it must be a folder (new or holding this run's outputs)")
    latest = get_last_checkpoint(out) if Path(out).is_dir() else None
    if resume is True:
        if not latest:
            raise ParamsError(f"train.resume_from_checkpoint: true, but train.output_dir {out} holds no checkpoint-*")
        return _last_complete(Path(out), latest)
    if resume:
        if not (Path(resume) / TRAINER_STATE_NAME).is_file():
            raise ParamsError(f"train.resume_from_checkpoint: {resume} is not a checkpoint (no {TRAINER_STATE_NAME})")
        return resume
    if latest:
        raise ParamsError(
            f"train.output_dir {out} already holds checkpoints (latest {latest}): set train.resume_from_checkpoint: "
            "true to continue that run, or choose another train.output_dir"
        )
    return None


def _last_complete(out: Path, latest: str) -> str:
    """The highest-numbered checkpoint holding trainer_state.json, which transformers writes after the weights and
    optimizer: a run killed while saving leaves a later one without it, from which no run can resume."""
    complete = [
        (int(match[1]), path)
        for path in out.iterdir()
        if (match := _CHECKPOINT.fullmatch(path.name)) and (path / TRAINER_STATE_NAME).is_file()
    ]
    if not complete:
        raise ParamsError(
            f"train.resume_from_checkpoint: true, but no checkpoint in {out} is complete (none holds "
            f"{TRAINER_STATE_NAME}: a run killed while saving); remove them to start afresh"
        )
    chosen = str(max(complete)[1])
    if Path(chosen) != Path(latest):  # get_last_checkpoint keeps a leading "./"
        logger.warning("resuming from %s: %s was left incomplete (no %s)", chosen, latest, TRAINER_STATE_NAME)
    return chosen


def train(params: TrainParams, policy: Policy, stream: IterableDataset, resume: str | None = None) -> list[dict]:
    """Train (from the `resume` checkpoint if given), then save the adapter, `log_history.json` and the curves in
    `output_dir`; returns the log history."""
    trainer = build_trainer(params, policy, stream)
    trainer.train(resume_from_checkpoint=resume)
    out = Path(params.output_dir)
    trainer.save_model(str(out))
    history = trainer.state.log_history
    if trainer.is_world_process_zero():
        (out / "log_history.json").write_text(json.dumps(history, indent=1))
        write_curves(history, out)
    return history

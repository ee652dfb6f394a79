"""The `train:` section of params.yaml, typed: keys are named as TRL (GRPOConfig) and peft (LoraConfig) name them.

Defaults are the original spec's values; `max_steps` has none (a streamed dataset has no length, so
the run length must be chosen). A missing or invalid key fails before any model is loaded, with a
message naming the key.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pipeline.params import DEFAULT_PARAMS, ParamsError, read_params, section
from pipeline.schema import SPLITS

__all__ = ["LoraParams", "ParamsError", "TrainParams", "load_train_params", "world_size"]


# The packages transformers looks for before it reports to each tracker (any one of them will do).
TRACKER_PACKAGES = {"wandb": ("wandb",), "tensorboard": ("tensorboard", "tensorboardX"), "trackio": ("trackio",)}
REPORT_TO = ("none", *TRACKER_PACKAGES)


class _Section(BaseModel):
    # strict as pipeline.params: YAML gives typed values, so `"500"`, `yes` or `off` where a number or a
    # bool belongs is a mistake; and a float such as learning_rate: .inf would only fail mid-run.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class LoraParams(_Section):
    """peft.LoraConfig keys."""

    r: int = Field(16, gt=0)
    lora_alpha: int = Field(16, gt=0)
    lora_dropout: float = Field(0.0, ge=0.0, lt=1.0)
    target_modules: list[str] = Field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"], min_length=1)

    @field_validator("target_modules")
    @classmethod
    def _module_names(cls, value: list[str]) -> list[str]:
        """peft matches a module by its name's last parts: an empty or blank name matches none, silently."""
        if not all(re.fullmatch(r"\S+", name) for name in value):
            raise ValueError("each must be a module name such as q_proj: not empty, no spaces")
        return value


class TrainParams(_Section):
    model: str = Field("unsloth/Qwen2-1.5B-Instruct", min_length=1, description="Local path or Hub model id")
    data: str = Field("data/episodes", min_length=1, description="Dataset folder or Hub dataset repo id")
    revision: str | None = Field(None, description="Hub revision (tag) of the dataset; ignored for a local folder")
    split: Literal[SPLITS] = "train"  # type: ignore[valid-type]
    mode: Literal["oneshot", "tools"] = "oneshot"
    max_steps: int = Field(gt=0, description="Optimizer steps; required because a stream has no length")
    output_dir: str = Field("models/grpo", min_length=1)
    resume_from_checkpoint: bool | Annotated[str, Field(min_length=1)] = Field(
        False, description="true: continue from the latest checkpoint-* in output_dir; or a checkpoint folder"
    )
    report_to: Literal[REPORT_TO] = "none"  # type: ignore[valid-type]
    load_in_4bit: bool = True
    max_seq_length: int = Field(
        4096, gt=0, description="Unsloth only: the context length (prompt + completion) it loads the model for"
    )
    lora: LoraParams = Field(default_factory=LoraParams)
    learning_rate: float = Field(5e-5, gt=0)
    num_generations: int = Field(8, ge=2)
    per_device_train_batch_size: int = Field(4, gt=0)
    gradient_accumulation_steps: int = Field(4, gt=0)
    max_completion_length: int = Field(512, gt=0)
    max_tool_calling_iterations: int = Field(12, gt=0, description="Tool mode: tool rounds per rollout")
    temperature: float = Field(1.0, gt=0)
    logging_steps: int = Field(10, gt=0)
    save_steps: int = Field(50, gt=0)
    seed: int = Field(42, ge=0, lt=2**32, description="numpy's seed range (transformers seeds numpy too)")
    format_reward_weight: float = Field(
        0.0, ge=0.0, description="Weight of the format reward in the total; it is logged even at 0"
    )

    @field_validator("report_to")
    @classmethod
    def _tracker_installed(cls, value: str) -> str:
        """transformers would fail only once the model is loaded, with a traceback."""
        packages = TRACKER_PACKAGES.get(value, ())
        if packages and not any(importlib.util.find_spec(name) for name in packages):
            raise ValueError(f"{value} is not installed (pip install {packages[0]}), or set it to none")
        return value

    @model_validator(mode="after")
    def _groups_fit(self) -> TrainParams:
        # Each process generates for its slice of every generation batch (`train.data.grpo_rows`), and TRL groups the
        # gathered rewards by num_generations in process order: a process's slice must hold whole groups, or a group
        # would span two processes and two episodes. With one process this is TRL's own rule.
        batch = self.per_device_train_batch_size * self.gradient_accumulation_steps
        if batch % self.num_generations:
            raise ValueError(
                f"per_device_train_batch_size × gradient_accumulation_steps = {batch} must be a multiple of "
                f"num_generations ({self.num_generations}): each process (WORLD_SIZE {world_size()}) generates "
                "whole groups for its slice of each generation batch"
            )
        if self.max_completion_length >= self.max_seq_length:
            raise ValueError(
                f"max_completion_length ({self.max_completion_length}) must be less than max_seq_length "
                f"({self.max_seq_length}), which also holds the prompt"
            )
        if self.mode == "tools" and self.format_reward_weight:
            raise ValueError("format_reward_weight applies to mode oneshot only (tool calls have no reply format)")
        return self


def world_size() -> int:
    """The process count that accelerate launch and torchrun set (1 when unset)."""
    value = os.environ.get("WORLD_SIZE", "1")
    if not re.fullmatch(r"[0-9]+", value) or int(value) < 1:
        raise ParamsError(f"WORLD_SIZE: must be a whole number >= 1 (the process count), got {value!r}")
    return int(value)


def load_train_params(path: Path = DEFAULT_PARAMS) -> TrainParams:
    """Read and validate `train:` from a params file; errors are ParamsError naming `train.<key>` or WORLD_SIZE."""
    world_size()  # the environment's error names WORLD_SIZE, not the section that reads it
    return section(read_params(path), "train", TrainParams, path)

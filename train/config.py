"""The `train:` section of params.yaml, typed: keys are named as TRL (GRPOConfig) and peft (LoraConfig) name them.

Defaults are the original spec's values; `max_steps` has none (a streamed dataset has no length, so
the run length must be chosen). A missing or invalid key fails before any model is loaded, with a
message naming the key.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pipeline.params import DEFAULT_PARAMS, ParamsError, read_params, section
from pipeline.schema import SPLITS

__all__ = ["LoraParams", "ParamsError", "TrainParams", "load_train_params"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LoraParams(_Section):
    """peft.LoraConfig keys."""

    r: int = Field(16, gt=0)
    lora_alpha: int = Field(16, gt=0)
    lora_dropout: float = Field(0.0, ge=0.0, lt=1.0)
    target_modules: list[str] = Field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"], min_length=1)


class TrainParams(_Section):
    model: str = Field("unsloth/Qwen2-1.5B-Instruct", min_length=1, description="Local path or Hub model id")
    data: str = Field("data/episodes", min_length=1, description="Dataset folder or Hub dataset repo id")
    revision: str | None = Field(None, description="Hub revision (tag) of the dataset; ignored for a local folder")
    split: Literal[SPLITS] = "train"  # type: ignore[valid-type]
    mode: Literal["oneshot", "tools"] = "oneshot"
    max_steps: int = Field(gt=0, description="Optimizer steps; required because a stream has no length")
    output_dir: str = Field("models/grpo", min_length=1)
    report_to: Literal["none", "wandb", "tensorboard", "trackio"] = "none"
    load_in_4bit: bool = True
    max_seq_length: int = Field(4096, gt=0, description="Unsloth context length (prompt + completion)")
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
    seed: int = Field(42, ge=0)
    format_reward_weight: float = Field(
        0.0, ge=0.0, description="Weight of the format reward in the total; it is logged even at 0"
    )

    @model_validator(mode="after")
    def _groups_fit(self) -> TrainParams:
        # TRL's rule, checked before any model loads: a generation batch (every process's) holds whole groups.
        # WORLD_SIZE is the process count that accelerate launch and torchrun set.
        processes = int(os.environ.get("WORLD_SIZE", "1"))
        batch = self.per_device_train_batch_size * self.gradient_accumulation_steps * processes
        if batch % self.num_generations:
            raise ValueError(
                f"per_device_train_batch_size × gradient_accumulation_steps × processes (WORLD_SIZE {processes}) "
                f"= {batch} must be a multiple of num_generations ({self.num_generations})"
            )
        if self.mode == "tools" and self.format_reward_weight:
            raise ValueError("format_reward_weight applies to mode oneshot only (tool calls have no reply format)")
        return self


def load_train_params(path: Path = DEFAULT_PARAMS) -> TrainParams:
    """Read and validate `train:` from a params file; errors are ParamsError naming `train.<key>`."""
    return section(read_params(path), "train", TrainParams, path)

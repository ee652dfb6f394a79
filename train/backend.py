"""Model loading: Unsloth (4-bit + LoRA, its gradient checkpointing) on CUDA if installed, else transformers + peft.

Unsloth patches transformers and TRL when it is imported, so `import_unsloth_first` must run before
anything imports them; `train.grpo` calls it before importing the trainer.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from train.config import ParamsError, TrainParams

logger = logging.getLogger(__name__)
# How transformers 5 records a tokenizer saved from a bare `tokenizers` object.
_PLAIN_TOKENIZERS = ("TokenizersBackend", "PreTrainedTokenizerFast")


def unsloth_usable() -> bool:
    return torch.cuda.is_available() and importlib.util.find_spec("unsloth") is not None


def import_unsloth_first() -> bool:
    """Import Unsloth when it will be used; True if it was."""
    if not unsloth_usable():
        return False
    import unsloth  # noqa: F401  (patches transformers/trl/peft on import)

    return True


@dataclass
class Policy:
    model: Any
    tokenizer: Any
    peft_config: Any = None
    config_overrides: dict[str, Any] = field(default_factory=dict)
    backend: str = "transformers"


def _built_locally(path: str) -> bool:
    """A tokenizer saved from a bare `tokenizers` object (train.tiny), not a model family's own."""
    config = Path(path) / "tokenizer_config.json"
    return config.is_file() and json.loads(config.read_text()).get("tokenizer_class") in _PLAIN_TOKENIZERS


def load_tokenizer(path: str) -> Any:
    """A locally built tokenizer must load as saved (AutoTokenizer may swap a known model type's pre-tokenizer)."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    if _built_locally(path):
        return PreTrainedTokenizerFast.from_pretrained(path)
    return AutoTokenizer.from_pretrained(path)


def load_policy(params: TrainParams) -> Policy:
    if unsloth_usable():
        return _unsloth_policy(params)
    return _peft_policy(params)


def _unsloth_policy(params: TrainParams) -> Policy:
    from unsloth import FastLanguageModel, is_bfloat16_supported

    model, tokenizer = FastLanguageModel.from_pretrained(
        model_name=params.model, max_seq_length=params.max_seq_length, load_in_4bit=params.load_in_4bit
    )
    if _built_locally(params.model):  # Unsloth loads it as the model type's tokenizer, which splits text otherwise
        tokenizer = load_tokenizer(params.model)
    check_lora_targets(model, params)
    model = FastLanguageModel.get_peft_model(
        model, **params.lora.model_dump(), use_gradient_checkpointing="unsloth", random_state=params.seed
    )
    bf16 = is_bfloat16_supported()
    overrides = {"bf16": bf16, "fp16": not bf16, "gradient_checkpointing": False}
    return Policy(model, tokenizer, None, overrides, backend="unsloth")


def _peft_policy(params: TrainParams) -> Policy:
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM

    cuda = torch.cuda.is_available()
    kwargs: dict[str, Any] = {"dtype": torch.bfloat16 if cuda else torch.float32}
    if cuda and params.load_in_4bit:
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16)
        # A quantized model cannot be moved after loading: each rank loads onto its own GPU, not all onto GPU 0.
        kwargs["device_map"] = {"": int(os.environ.get("LOCAL_RANK", "0"))}
    elif params.load_in_4bit:
        logger.info("load_in_4bit needs CUDA: loading the model in float32 on CPU")
    model = AutoModelForCausalLM.from_pretrained(params.model, **kwargs)
    check_lora_targets(model, params)
    peft_config = LoraConfig(task_type="CAUSAL_LM", **params.lora.model_dump())
    overrides = {"bf16": cuda, "use_cpu": not cuda, "gradient_checkpointing": cuda}
    return Policy(model, load_tokenizer(params.model), peft_config, overrides, backend="transformers+peft")


def check_lora_targets(model: Any, params: TrainParams) -> None:
    """peft finds a target that matches no module only when the trainer wraps the model: refused here, at load."""
    names = [name for name, _ in model.named_modules()]
    missing = [t for t in params.lora.target_modules if not any(n == t or n.endswith(f".{t}") for n in names)]
    if missing:
        linear = sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)})
        raise ParamsError(
            f"train.lora.target_modules: {missing} match no module of train.model {params.model!r} "
            f"(its linear layers: {', '.join(linear)})"
        )

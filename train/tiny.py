"""A tiny Qwen2-architecture model and a byte-level BPE tokenizer, built offline from a config.

No weights can be downloaded here, so tests, the learning demo and the benchmark build their own:
a tokenizer trained on episode text with the ChatML tokens and TRL's Qwen2.5 chat template (which
renders tool calls and has a known response parser), and a randomly initialised Qwen2 model.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
from trl.chat_template_utils import qwen2_5_chat_template

from train.prompts import ONESHOT_SYSTEM_PROMPT, TOOLS_SYSTEM_PROMPT

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# The one-shot submission's fixed syntax as whole tokens, so that a small model learns the format in a
# few hundred steps and what it must learn is the content (answer, flags, confidence).
SYNTAX_TOKENS = ('{"answer": "', '", "flagged_ids": [', '], "confidence": ')


class TinyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    vocab_size: int = Field(2048, gt=len(SPECIAL_TOKENS) + 256)
    hidden_size: int = Field(64, gt=0)
    intermediate_size: int = Field(128, gt=0)
    num_hidden_layers: int = Field(2, gt=0)
    num_attention_heads: int = Field(4, gt=0)
    num_key_value_heads: int = Field(2, gt=0)
    max_position_embeddings: int = Field(8192, gt=0)
    seed: int = 0

    @model_validator(mode="after")
    def _heads_divide(self) -> TinyConfig:
        if self.hidden_size % self.num_attention_heads or self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) must be a multiple of num_attention_heads "
                f"({self.num_attention_heads}), and that of num_key_value_heads ({self.num_key_value_heads})"
            )
        return self


def build_tokenizer(texts: Iterable[str], vocab_size: int) -> PreTrainedTokenizerFast:
    """Byte-level BPE trained on `texts` plus the prompts and the JSON/tool-call syntax the model must write."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_with_fixed_text(texts), trainer=trainer)
    tok.add_tokens([AddedToken(text, normalized=False) for text in SYNTAX_TOKENS])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=qwen2_5_chat_template,
        padding_side="left",
    )


def _with_fixed_text(texts: Iterable[str]) -> Iterator[str]:
    yield from (ONESHOT_SYSTEM_PROMPT, TOOLS_SYSTEM_PROMPT)
    yield '<tool_call>\n{"name": "flag_suspicious", "arguments": {"doc_id": 3}}\n</tool_call>'
    yield from texts


def build_model(config: TinyConfig, tokenizer: PreTrainedTokenizerFast) -> Qwen2ForCausalLM:
    torch.manual_seed(config.seed)
    model_config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads,
        num_key_value_heads=config.num_key_value_heads,
        max_position_embeddings=config.max_position_embeddings,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = Qwen2ForCausalLM(model_config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def build_tiny(out: Path, texts: Iterable[str], config: TinyConfig | None = None) -> Path:
    """Write tokenizer + model to `out` (a folder usable as `train.model`); load the tokenizer with
    `PreTrainedTokenizerFast.from_pretrained`, as AutoTokenizer may swap a known model type's pre-tokenizer."""
    config = config or TinyConfig()
    tokenizer = build_tokenizer(texts, config.vocab_size)
    model = build_model(config, tokenizer)
    tokenizer.save_pretrained(out)
    model.save_pretrained(out)
    return out

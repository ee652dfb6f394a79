"""Agents for evaluation: a model (greedy or sampled; one-shot or through the tools) and reference baselines.

Every one-shot agent maps a batch of episode rows to completion texts, which go through the same parser
and reward as training; a tool agent (`train.toolplay.ToolAgent`) replies turn by turn in token ids.
The baselines are reference points on the reward scale, not agents a model could be: `oracle`,
`majority` and `follower` read hidden columns to act out a behaviour (perfect, trusting the majority of
documents, trusting one random document), and `empty` always abstains.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from train.prompts import oneshot_prompt
from train.rewards import parse_completion
from train.toolplay import ToolAgent

Agent = Callable[[Sequence[dict[str, Any]]], list[str]]


def submission(answer: str, flagged_ids: Sequence[int], confidence: float) -> str:
    return json.dumps({"answer": answer, "flagged_ids": [int(i) for i in flagged_ids], "confidence": confidence})


def oracle(rows: Sequence[dict[str, Any]]) -> list[str]:
    return [submission(r["answer"], r["corrupt_ids"], 1.0) for r in rows]


def majority(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Flag nothing and answer what most documents claim, fully confident."""
    return [submission(Counter(c for c in r["doc_claims"] if c).most_common(1)[0][0], [], 1.0) for r in rows]


def follower(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Trust one document drawn at random (seeded by the episode id), flag nothing, fully confident."""
    out = []
    for r in rows:
        claims = [c for c in r["doc_claims"] if c]
        pick = int(np.random.default_rng([0xF011, r["episode_id"]]).integers(len(claims)))
        out.append(submission(claims[pick], [], 1.0))
    return out


def empty(rows: Sequence[dict[str, Any]]) -> list[str]:
    return ["" for _ in rows]


BASELINES: dict[str, Agent] = {"oracle": oracle, "majority": majority, "follower": follower, "empty": empty}


class ModelLoadError(Exception):
    """A model, adapter or tokenizer that cannot be loaded (a folder that holds none, a Hub id out of reach)."""


@contextmanager
def _loading(path: str) -> Iterator[None]:
    try:
        yield
    except (OSError, ValueError) as err:  # transformers' and peft's errors for what is not a model of theirs
        raise ModelLoadError(f"{path}: {' '.join(str(err).split())}") from err


def load_model(path: str, base: str | None = None) -> tuple[Any, Any]:
    """A saved model, or a LoRA adapter on `base` (default: the base recorded in the adapter), in eval mode on the
    GPU when there is one (bf16), with its tokenizer (the adapter's own when it saved one)."""
    import torch
    from transformers import AutoModelForCausalLM

    from train.backend import load_tokenizer

    kwargs = {"dtype": torch.bfloat16, "device_map": {"": 0}} if torch.cuda.is_available() else {}
    with _loading(path):
        if (Path(path) / "adapter_config.json").is_file():
            from peft import PeftConfig, PeftModel

            base = base or PeftConfig.from_pretrained(path).base_model_name_or_path
            model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base, **kwargs), path)
            tokenizer = load_tokenizer(path if (Path(path) / "tokenizer_config.json").is_file() else base)
        else:
            model, tokenizer = AutoModelForCausalLM.from_pretrained(path, **kwargs), load_tokenizer(path)
    model.eval()
    return model, tokenizer


@dataclass(frozen=True)
class Sampling:
    """Replies drawn from the policy as GRPO draws them (TRL's defaults: no top-k, top-p or repetition penalty,
    whatever the model's generation config says) instead of one greedy reply: what GRPO raises is the mean reward of
    its samples, and the greedy reply can stay put while that moves. Seeded, so an evaluation on a CPU repeats
    exactly."""

    samples: int
    temperature: float = 1.0
    seed: int = 0


def generate(
    model: Any,
    tokenizer: Any,
    contexts: Sequence[list[int]],
    max_new_tokens: int,
    batch_size: int = 8,
    sampling: Sampling | None = None,
) -> list[list[int]]:
    """Continuations of token-id contexts (greedy, or `sampling.samples` per context, context by context), each cut
    after its first end token (kept, as TRL does): the tokenizer's EOS or any the generation config lists
    (Qwen2.5-Instruct's `<|endoftext|>` beside `<|im_end|>`; a row ended on one was padded on to the batch's
    longest)."""
    import torch

    listed = getattr(model.generation_config, "eos_token_id", None)
    ends = {tokenizer.eos_token_id, *(listed if isinstance(listed, list) else [listed])} - {None}
    decoding: dict[str, Any] = {"do_sample": False}
    if sampling:
        torch.manual_seed(sampling.seed)
        decoding = {
            "do_sample": True,
            "temperature": sampling.temperature,
            "top_k": 0,
            "top_p": 1.0,
            "repetition_penalty": 1.0,
            "num_return_sequences": sampling.samples,
        }
    out: list[list[int]] = []
    for start in range(0, len(contexts), batch_size):
        batch = [list(c) for c in contexts[start : start + batch_size]]
        width = max(map(len, batch))
        # A base model may ship without a pad token (Llama 3, Mistral): padding is masked, so EOS serves, as in TRL.
        pad = tokenizer.eos_token_id if tokenizer.pad_token_id is None else tokenizer.pad_token_id
        ids = torch.tensor([[pad] * (width - len(c)) + c for c in batch], device=model.device)
        mask = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in batch], device=model.device)
        with torch.inference_mode():
            generated = model.generate(
                input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens, pad_token_id=pad, **decoding
            )
        for row in generated[:, width:].tolist():
            out.append(row[: next((i + 1 for i, token in enumerate(row) if token in ends), len(row))])
    return out


def model_agent(
    path: str, max_new_tokens: int = 96, batch_size: int = 8, base: str | None = None, sampling: Sampling | None = None
) -> Agent:
    """One-shot generation from a saved model or LoRA adapter folder: one greedy reply per episode, or
    `sampling.samples` sampled ones, an episode's replies side by side."""
    return oneshot_agent(*load_model(path, base), max_new_tokens, batch_size, sampling)


def oneshot_agent(
    model: Any, tokenizer: Any, max_new_tokens: int = 96, batch_size: int = 8, sampling: Sampling | None = None
) -> Agent:
    """`model_agent` on a model already loaded (`load_model`): one load serves several decodings."""

    def reply(rows: Sequence[dict[str, Any]]) -> list[str]:
        chats = [oneshot_prompt(r["question"], r["documents"]) for r in rows]
        prompts = [
            tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=True)["input_ids"] for c in chats
        ]
        new = generate(model, tokenizer, prompts, max_new_tokens, batch_size, sampling)
        return tokenizer.batch_decode(new, skip_special_tokens=True)

    return reply


def model_tool_agent(path: str, base: str | None = None, batch_size: int = 8) -> tuple[ToolAgent, Any]:
    """Greedy tool-mode play from a saved model or adapter, and its tokenizer (tool template as in training)."""
    from train.trainer import ensure_tool_template

    model, tokenizer = load_model(path, base)
    with _loading(path):
        ensure_tool_template(tokenizer)

    def agent(rows: Sequence[dict[str, Any]], contexts: Sequence[list[int]], turn: int, max_new_tokens: int):
        return generate(model, tokenizer, contexts, max_new_tokens, batch_size)

    return agent, tokenizer


def tool_tokenizer(path: str) -> Any:
    """A saved tokenizer, given TRL's Qwen2.5 tool template if its own cannot render tool calls (as training does)."""
    from train.backend import load_tokenizer
    from train.trainer import ensure_tool_template

    with _loading(path):
        tokenizer = load_tokenizer(path)
        ensure_tool_template(tokenizer)
    return tokenizer


def tool_call_text(name: str, **arguments: Any) -> str:
    """One tool call as the Qwen2.5 (ChatML) tool template writes it."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def scripted_tool_agent(baseline: Agent, tokenizer: Any) -> ToolAgent:
    """A baseline played through the tools: its first reply flags each id of its one-shot submission, then
    submits (an agent that submits nothing makes no call); later replies end the rollout."""

    def agent(rows: Sequence[dict[str, Any]], contexts: Sequence[list[int]], turn: int, max_new_tokens: int):
        texts = [""] * len(rows) if turn else baseline(rows)
        replies = []
        for text in texts:
            submission, _ = parse_completion(text)
            calls = [tool_call_text("flag_suspicious", doc_id=i) for i in submission.flagged_ids]
            if text:
                submit = {"answer": submission.answer, "confidence": submission.confidence}
                calls.append(tool_call_text("submit_answer", **submit))
            replies.append(tokenizer("\n".join(calls) + tokenizer.eos_token, add_special_tokens=False)["input_ids"])
        return replies

    return agent

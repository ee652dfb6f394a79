"""Agents for evaluation: a model (greedy, one-shot prompt) and reference baselines.

Every agent maps a batch of episode rows to completion texts, which go through the same parser and
reward as training. The baselines are reference points on the reward scale, not agents a model could
be: `oracle`, `majority` and `follower` read hidden columns to act out a behaviour (perfect, trusting
the majority of documents, trusting one random document), and `empty` always abstains.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from train.prompts import oneshot_prompt

Agent = Callable[[Sequence[dict[str, Any]]], list[str]]


def _submission(answer: str, flagged_ids: Sequence[int], confidence: float) -> str:
    return json.dumps({"answer": answer, "flagged_ids": [int(i) for i in flagged_ids], "confidence": confidence})


def oracle(rows: Sequence[dict[str, Any]]) -> list[str]:
    return [_submission(r["answer"], r["corrupt_ids"], 1.0) for r in rows]


def majority(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Flag nothing and answer what most documents claim, fully confident."""
    return [_submission(Counter(c for c in r["doc_claims"] if c).most_common(1)[0][0], [], 1.0) for r in rows]


def follower(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Trust one document drawn at random (seeded by the episode id), flag nothing, fully confident."""
    out = []
    for r in rows:
        claims = [c for c in r["doc_claims"] if c]
        pick = int(np.random.default_rng([0xF011, r["episode_id"]]).integers(len(claims)))
        out.append(_submission(claims[pick], [], 1.0))
    return out


def empty(rows: Sequence[dict[str, Any]]) -> list[str]:
    return ["" for _ in rows]


BASELINES: dict[str, Agent] = {"oracle": oracle, "majority": majority, "follower": follower, "empty": empty}


def model_agent(path: str, max_new_tokens: int = 96, batch_size: int = 8) -> Agent:
    """Greedy one-shot generation from a saved model or LoRA adapter folder."""
    import torch
    from transformers import AutoModelForCausalLM

    from train.backend import load_tokenizer

    if (Path(path) / "adapter_config.json").is_file():
        from peft import AutoPeftModelForCausalLM

        model = AutoPeftModelForCausalLM.from_pretrained(path)
    else:
        model = AutoModelForCausalLM.from_pretrained(path)
    model.eval()
    tokenizer = load_tokenizer(path)
    tokenizer.padding_side = "left"

    def generate(rows: Sequence[dict[str, Any]]) -> list[str]:
        texts: list[str] = []
        for start in range(0, len(rows), batch_size):
            chats = [oneshot_prompt(r["question"], r["documents"]) for r in rows[start : start + batch_size]]
            prompts = [tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in chats]
            batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
            with torch.inference_mode():
                out = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False)
            new = out[:, batch["input_ids"].shape[1] :]
            texts.extend(tokenizer.batch_decode(new, skip_special_tokens=True))
        return texts

    return generate

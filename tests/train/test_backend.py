"""Model loading without Unsloth (transformers + peft): what is asked of transformers on a GPU machine, checked
with its loader recording the request (no GPU here), and LoRA targets checked against the loaded model."""

from __future__ import annotations

import pytest
import torch
import transformers

from train import backend
from train.config import LoraParams, ParamsError, TrainParams


@pytest.mark.parametrize("rank", [None, "3"])
def test_a_4bit_model_loads_onto_its_own_ranks_gpu(tiny_model, monkeypatch, rank):
    """A quantized model cannot be moved after loading: every rank loaded it onto GPU 0 and the trainer refused it."""
    requests = []
    load = transformers.AutoModelForCausalLM.from_pretrained

    def recording(path, **kwargs):
        requests.append(kwargs)
        return load(path)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", recording)
    if rank is None:
        monkeypatch.delenv("LOCAL_RANK", raising=False)
    else:
        monkeypatch.setenv("LOCAL_RANK", rank)
    backend._peft_policy(TrainParams(model=str(tiny_model), max_steps=1, load_in_4bit=True))
    (kwargs,) = requests
    assert kwargs["device_map"] == {"": int(rank or 0)} and kwargs["quantization_config"].load_in_4bit
    requests.clear()
    backend._peft_policy(TrainParams(model=str(tiny_model), max_steps=1, load_in_4bit=False))
    assert "device_map" not in requests[0] and requests[0]["dtype"] == torch.bfloat16


def test_lora_targets_are_matched_as_peft_matches_them(tiny_model):
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model)
    for good in (["q_proj", "down_proj"], ["self_attn.q_proj"], ["model.layers.0.mlp.up_proj"]):
        backend.check_lora_targets(model, TrainParams(model="m", max_steps=1, lora=LoraParams(target_modules=good)))
    for bad in (["proj"], ["attn.q_proj"], ["q_proj", "c_attn"]):
        with pytest.raises(ParamsError, match=r"train.lora.target_modules: \['(proj|attn.q_proj|c_attn)'\] match no"):
            backend.check_lora_targets(model, TrainParams(model="m", max_steps=1, lora=LoraParams(target_modules=bad)))

"""`train:` params: defaults from the spec, and bad keys fail naming the key, in-process and on the command line."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType

import pytest

from pipeline.params import DEFAULT_PARAMS, read_params
from train.config import ParamsError, load_train_params
from train.grpo import main as grpo_main


def test_defaults_are_the_spec_values(write_params):
    params = load_train_params(write_params({"max_steps": 10}))
    assert params.model == "unsloth/Qwen2-1.5B-Instruct" and params.load_in_4bit
    assert (params.lora.r, params.lora.lora_dropout) == (16, 0.0)
    assert params.lora.target_modules == ["q_proj", "k_proj", "v_proj", "o_proj"]
    assert (params.learning_rate, params.num_generations, params.per_device_train_batch_size) == (5e-5, 8, 4)
    assert (params.gradient_accumulation_steps, params.max_completion_length) == (4, 512)
    assert (params.logging_steps, params.save_steps, params.report_to, params.mode) == (10, 50, "none", "oneshot")


def test_a_float_without_a_dot_is_a_number(tmp_path):
    """YAML 1.1 (PyYAML) read 5e-5 as a string; params are read as DVC reads them, YAML 1.2, where it is a float."""
    path = tmp_path / "params.yaml"
    path.write_text("seed: 1\ntrain:\n  max_steps: 5\n  learning_rate: 5e-5\n  lora: {lora_dropout: 1e-1}\n")
    params = load_train_params(path)
    assert (params.learning_rate, params.lora.lora_dropout) == (5e-5, 0.1)


def test_the_repository_params_file_is_valid():
    params = load_train_params()
    assert params.model_dump(exclude_unset=True) == read_params(DEFAULT_PARAMS)["train"]


@pytest.mark.parametrize(
    ("section", "named"),
    [
        ({}, "train.max_steps: Field required"),
        ({"max_steps": 0}, "train.max_steps: Input should be greater than 0"),
        ({"max_steps": 5, "learning_rate": "fast"}, "train.learning_rate"),
        ({"max_steps": 5, "mode": "multi"}, "train.mode"),
        ({"max_steps": 5, "lr": 0.1}, "train.lr: Extra inputs are not permitted"),
        ({"max_steps": 5, "lora": {"r": 16, "alpha": 2}}, "train.lora.alpha"),
        ({"max_steps": 5, "report_to": "mlflow"}, "train.report_to"),
        ({"max_steps": 5, "num_generations": 3}, "must be a multiple of num_generations (3)"),
        (
            {"max_steps": 5, "max_completion_length": 4096},
            "train: max_completion_length (4096) must be less than max_seq_length (4096)",
        ),
        (
            {"max_steps": 5, "max_seq_length": 512},
            "max_completion_length (512) must be less than max_seq_length (512)",
        ),
        (
            {"max_steps": 5, "resume_from_checkpoint": ""},
            "train.resume_from_checkpoint.constrained-str: String should",
        ),
        ({"max_steps": 5, "resume_from_checkpoint": 1}, "train.resume_from_checkpoint.bool: Input should be a valid"),
        ({"max_steps": 5, "mode": "tools", "format_reward_weight": 1.0}, "format_reward_weight applies to mode one"),
        # strict, finite: YAML's typed values are taken as written, and a float is a finite number
        ({"max_steps": 5, "learning_rate": float("inf")}, "train.learning_rate: Input should be a finite number"),
        ({"max_steps": 5, "temperature": float("inf")}, "train.temperature: Input should be a finite number"),
        ({"max_steps": 5, "format_reward_weight": float("inf")}, "train.format_reward_weight: Input should be a fin"),
        ({"max_steps": 5, "lora": {"lora_dropout": float("nan")}}, "train.lora.lora_dropout: Input should be a fin"),
        ({"max_steps": 5, "seed": True}, "train.seed: Input should be a valid integer (got True)"),
        ({"max_steps": 5, "seed": 2**32}, "train.seed: Input should be less than 4294967296"),
        ({"max_steps": 5, "load_in_4bit": "off"}, "train.load_in_4bit: Input should be a valid boolean (got 'off')"),
        ({"max_steps": "500"}, "train.max_steps: Input should be a valid integer (got '500')"),
        ({"max_steps": 5, "lora": {"target_modules": [""]}}, "train.lora.target_modules: each must be"),
        (
            {"max_steps": 5, "lora": {"target_modules": ["q_proj", " "]}},
            "train.lora.target_modules: each must be a module name such",
        ),
    ],
)
def test_bad_keys_fail_naming_the_key(write_params, section, named):
    with pytest.raises(ParamsError, match=named.replace("(", r"\(").replace(")", r"\)")):
        load_train_params(write_params(section))


@pytest.mark.parametrize("processes", ["1", "2"])
def test_each_process_generation_batch_holds_whole_groups(write_params, monkeypatch, processes):
    """2 processes × 2 × 1 = 4 passes TRL's own check (num_generations 4), but each process generates for its
    slice of each generation batch, 2 completions: a group of 4 would span two processes and two episodes."""
    monkeypatch.setenv("WORLD_SIZE", processes)
    section = {"max_steps": 5, "num_generations": 4, "per_device_train_batch_size": 2}
    section["gradient_accumulation_steps"] = 1
    message = (
        "train: per_device_train_batch_size × gradient_accumulation_steps = 2 must be a multiple of "
        f"num_generations (4): each process (WORLD_SIZE {processes}) generates whole groups"
    )
    with pytest.raises(ParamsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_train_params(write_params(section))
    assert load_train_params(write_params({**section, "gradient_accumulation_steps": 2})).num_generations == 4


@pytest.mark.parametrize(
    ("tracker", "packages"), [("wandb", ["wandb"]), ("tensorboard", ["tensorboard", "tensorboardX"])]
)
def test_a_tracker_that_is_not_installed_fails_naming_report_to(write_params, monkeypatch, tracker, packages):
    """Checked when the params load, not by transformers once the model is loaded."""
    for name in packages:
        monkeypatch.setitem(sys.modules, name, None)  # what importlib finds for a package that is not installed
    with pytest.raises(ParamsError, match=f"train.report_to: {tracker} is not installed"):
        load_train_params(write_params({"max_steps": 5, "report_to": tracker}))
    installed = ModuleType(packages[-1])
    installed.__spec__ = ModuleSpec(packages[-1], None)
    monkeypatch.setitem(sys.modules, packages[-1], installed)
    assert load_train_params(write_params({"max_steps": 5, "report_to": tracker})).report_to == tracker


@pytest.mark.parametrize("value", ["two", "0", "-2", "", "2.0"])
def test_a_bad_world_size_fails_naming_world_size(write_params, monkeypatch, capsys, value):
    """WORLD_SIZE comes from the launcher's environment, not from train:, so its error names it alone."""
    path = write_params({"max_steps": 5, "num_generations": 2, "per_device_train_batch_size": 2})
    monkeypatch.setenv("WORLD_SIZE", value)
    message = f"WORLD_SIZE: must be a whole number >= 1 (the process count), got {value!r}"
    with pytest.raises(ParamsError) as err:
        load_train_params(path)
    assert str(err.value) == message
    with pytest.raises(SystemExit) as exit_:
        grpo_main(["--params", str(path)])
    assert exit_.value.code == 2 and capsys.readouterr().err == f"error: {message}\n"


def test_missing_section_and_file(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("seed: 1\n")
    with pytest.raises(ParamsError, match="missing section 'train'"):
        load_train_params(path)
    with pytest.raises(ParamsError, match="file not found"):
        load_train_params(tmp_path / "absent.yaml")


def test_command_line_exits_2_naming_the_key_before_loading_a_model(write_params):
    path = write_params({"max_steps": 5, "per_device_train_batch_size": -1})
    cmd = [sys.executable, "-m", "train.grpo", "--params", str(path)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2
    assert "train.per_device_train_batch_size: Input should be greater than 0" in run.stderr
    assert "Traceback" not in run.stderr


def test_command_line_refuses_missing_data_or_model_in_one_line(write_params, episodes_dir, tmp_path):
    """The data is opened before the model loads; a model that cannot load is one line, not a traceback."""
    cases = [
        ({"data": str(tmp_path / "absent")}, "error: train.data"),
        ({"data": str(episodes_dir), "split": "test", "model": str(tmp_path / "no-model")}, "error: train.model"),
    ]
    for (change, message), model_loaded in zip(cases, (False, True), strict=True):
        path = write_params({"max_steps": 5, "num_generations": 2, "per_device_train_batch_size": 2, **change})
        env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
        cmd = [sys.executable, "-m", "train.grpo", "--params", str(path)]
        run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        assert run.returncode == 2 and message in run.stderr, run.stderr[-2000:]
        assert "Traceback" not in run.stderr
        assert ("train.backend" in run.stderr) == model_loaded  # bad data is refused before the model loads

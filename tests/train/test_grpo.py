"""End to end on a CPU: `python -m train.grpo` streams the episode folder, trains 2 steps, writes its outputs
and exits 0 even though the stream is left half-read; tool mode runs the same loop in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from trl.chat_template_utils import qwen3_chat_template

from train.grpo import main

SMALL = {
    "num_generations": 2,
    "per_device_train_batch_size": 2,
    "gradient_accumulation_steps": 1,
    "max_completion_length": 16,
    "max_steps": 2,
    "logging_steps": 1,
    "save_steps": 100,
    "lora": {"r": 4, "lora_alpha": 8},
}


def _check_outputs(out, reward_key):
    history = json.loads((out / "log_history.json").read_text())
    steps = [h for h in history if "reward" in h]
    assert [h["step"] for h in steps] == [1, 2]
    assert all(-0.2 <= h[reward_key] <= 1.05 and "loss" in h and "reward_std" in h for h in steps)
    for name in ("reward_curve.png", "loss_curve.png", "adapter_model.safetensors", "adapter_config.json"):
        assert (out / name).stat().st_size > 0
    return steps


def test_oneshot_trains_streaming_and_exits_cleanly(tmp_path, write_params, episodes_dir, tiny_model):
    out = tmp_path / "run"
    path = write_params({**SMALL, "model": str(tiny_model), "data": str(episodes_dir), "output_dir": str(out)})
    run = subprocess.run(
        [sys.executable, "-m", "train.grpo", "--params", str(path)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    for noise in ("Traceback", "terminate called", "Exception ignored"):
        assert noise not in run.stderr
    steps = _check_outputs(out, "rewards/episode_reward/mean")
    assert all("rewards/format_reward/mean" in h and "reward_parts/efficiency" in h for h in steps)


def test_tool_mode_trains_with_the_environment(tmp_path, write_params, episodes_dir, tiny_model, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    out = tmp_path / "run"
    section = {**SMALL, "model": str(tiny_model), "data": str(episodes_dir), "output_dir": str(out), "mode": "tools"}
    assert main(["--params", str(write_params(section))]) == 0
    steps = _check_outputs(out, "rewards/environment_reward/mean")
    assert all("tools/call_frequency" in h for h in steps)
    # One reward source, the environment's total, logged with its parts as in one-shot.
    parts = ("answer_correctness", "corruption_detection", "false_positive_penalty", "confidence_calibration")
    for h in steps:
        assert h["reward"] == h["rewards/environment_reward/mean"]
        assert h["reward"] == pytest.approx(sum(h[f"reward_parts/{p}"] for p in (*parts, "efficiency")), abs=1e-4)


def test_unreachable_hub_data_is_one_line_naming_train_data(tmp_path, write_params):
    """Hub data that cannot be reached (offline here) exits 2 with one line, before any model loads."""
    section = {**SMALL, "data": "someone/nonexistent-ds", "model": str(tmp_path / "no-model")}
    path = write_params(section)
    run = subprocess.run(
        [sys.executable, "-m", "train.grpo", "--params", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    errors = [line for line in run.stderr.splitlines() if "error" in line.lower()]
    assert run.returncode == 2, run.stderr[-2000:]
    assert errors == [run.stderr.splitlines()[-1]], run.stderr[-2000:]
    assert errors[0].startswith("error: train.data 'someone/nonexistent-ds', split 'train': Couldn't reach")
    assert "Traceback" not in run.stderr and "train.backend" not in run.stderr


@pytest.mark.parametrize("failing", ["data", "model"])
def test_a_library_error_over_several_lines_is_reported_in_one(write_params, monkeypatch, capsys, failing):
    """Library messages (datasets, transformers) can span lines; the error line stays one line."""
    import train.backend
    import train.data

    def fail(*args, **kwargs):
        raise OSError("line one\nline two")

    monkeypatch.setattr(train.data, "stream_episodes", fail if failing == "data" else lambda *a, **k: iter(()))
    monkeypatch.setattr(train.backend, "load_policy", fail)
    with pytest.raises(SystemExit) as exit_:
        main(["--params", str(write_params(SMALL))])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: train.{failing} ") and err[0].endswith(": line one line two"), err


def _one_line_refusal(write_params, capsys, section: dict) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(["--params", str(write_params({**SMALL, **section}))])
    err = capsys.readouterr().err  # after transformers' progress bar, when the model loaded
    errors = [line for line in err.splitlines() if "error" in line.lower()]
    assert exit_.value.code == 2 and errors == [err.splitlines()[-1]] and "Traceback" not in err, err
    return errors[0]


def test_a_lora_target_the_model_lacks_is_one_line_naming_the_key(
    tmp_path, write_params, episodes_dir, tiny_model, capsys
):
    """peft would raise it only inside the trainer, with a traceback; the layers the model has are listed."""
    section = {"model": str(tiny_model), "data": str(episodes_dir), "output_dir": str(tmp_path / "run")}
    err = _one_line_refusal(
        write_params, capsys, section | {"lora": {"r": 4, "target_modules": ["q_proj", "foo_proj"]}}
    )
    assert err.startswith(
        f"error: train.lora.target_modules: ['foo_proj'] match no module of train.model '{tiny_model}'"
    )
    assert "q_proj" in err.split("its linear layers: ")[1]
    assert not (tmp_path / "run").exists()


def test_a_folder_without_a_model_is_one_line_naming_train_model(tmp_path, write_params, episodes_dir, capsys):
    (tmp_path / "empty-model").mkdir()
    section = {"model": str(tmp_path / "empty-model"), "data": str(episodes_dir), "output_dir": str(tmp_path / "run")}
    err = _one_line_refusal(write_params, capsys, section)
    assert err.startswith(f"error: train.model '{tmp_path / 'empty-model'}': "), err


_PLAIN = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"


@pytest.mark.parametrize(
    ("template", "says"),
    [
        (lambda: _PLAIN, "not ChatML"),
        (lambda: qwen3_chat_template + "{#- edited #}", "failed to add response schema"),
    ],
    ids=["no-tool-calls", "unparsed"],
)
def test_tool_mode_with_a_template_it_cannot_train_is_one_line(
    tmp_path, write_params, episodes_dir, tiny_model, capsys, template, says
):
    """A chat template that is not ChatML cannot be given TRL's tool template, and TRL cannot parse the tool calls
    of one it does not know (Qwen3's, edited): refused after loading, not by the trainer with a traceback."""
    import shutil

    model = tmp_path / "template"
    shutil.copytree(tiny_model, model)
    config = json.loads((model / "tokenizer_config.json").read_text())
    config["chat_template"] = template()
    (model / "tokenizer_config.json").write_text(json.dumps(config))
    (model / "chat_template.jinja").unlink(missing_ok=True)
    section = {"model": str(model), "data": str(episodes_dir), "output_dir": str(tmp_path / "run"), "mode": "tools"}
    err = _one_line_refusal(write_params, capsys, section)
    assert err.startswith(f"error: train.model '{model}': mode tools: ") and says in err, err


def test_tool_mode_refuses_a_template_trl_cannot_train_multi_turn(tiny_model):
    """A tokenizer that parses its own replies, but whose template re-renders earlier turns (Qwen3's, edited, so
    TRL has no training version of it): the tool results would not extend the rollout's tokens."""
    from trl.chat_template_utils import qwen3_template

    from train.agents import tool_tokenizer
    from train.trainer import ensure_tool_template

    tokenizer = tool_tokenizer(str(tiny_model))
    tokenizer.chat_template, tokenizer.response_template = qwen3_chat_template + "{#- edited #}", qwen3_template
    with pytest.raises(ValueError, match="^mode tools: The chat template is not training-compatible"):
        ensure_tool_template(tokenizer)

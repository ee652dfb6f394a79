"""The learning demo end to end at toy size: its own dataset builds and validates, and `python -m train.demo`
warm-starts a model, trains it through `python -m train.grpo`, and writes its before/after figures and chart."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from pipeline.validate import validate, violation_message
from train.agents import oracle, submission
from train.demo import main, warm_targets
from train.demo_data import DEMO_EPISODES, build_demo_dataset


def test_the_demo_dataset_builds_and_passes_every_invariant(tmp_path):
    episodes = build_demo_dataset(tmp_path)
    metrics = validate(episodes)
    assert violation_message(metrics) == ""
    counts = json.loads((episodes / "manifest.json").read_text())["splits"]
    assert {split: info["num_rows"] for split, info in counts.items()} == DEMO_EPISODES.counts()


def test_a_seeded_share_of_warm_start_targets_hedges(episode_rows):
    """The oracle's reply, or the right answer alone at confidence 0: both parse, and the share is near the asked."""
    rows = episode_rows * (400 // len(episode_rows) + 1)
    targets = warm_targets(rows, 0.3)
    assert targets == warm_targets(rows, 0.3) and warm_targets(rows, 0.0) == oracle(rows)
    hedged = [json.loads(t) for t in targets if json.loads(t)["confidence"] == 0.0]
    assert 0.2 * len(rows) < len(hedged) < 0.4 * len(rows)
    assert all(h["flagged_ids"] == [] for h in hedged)
    assert {t for t in warm_targets(rows, 1.0)} == {submission(r["answer"], [], 0.0) for r in rows}


def test_the_demo_trains_and_reports_before_and_after(tmp_path, episodes_dir):
    out = tmp_path / "demo"
    toy = ["--train-rows", "16", "--eval-rows", "4", "--vocab-size", "300", "--hidden-size", "16"]
    toy += ["--num-hidden-layers", "1", "--sft-steps", "2", "--grpo-steps", "1", "--num-generations", "2"]
    toy += ["--max-completion-length", "8", "--hedge-share", "0.5", "--grpo-prompts", "2", "--eval-samples", "3"]
    run = subprocess.run(
        [sys.executable, "-m", "train.demo", "--data", str(episodes_dir), *toy, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads((out / "learning.json").read_text())
    for stage in ("after_sft", "after_grpo"):
        greedy, sampled = (report["validation"][stage][decoding] for decoding in ("greedy", "sampled"))
        assert greedy["episodes"] == sampled["episodes"] == 4 and (greedy["replies"], sampled["replies"]) == (4, 12)
        assert -0.2 <= greedy["reward"]["mean"] <= 1.05 and -0.2 <= sampled["reward"]["mean"] <= 1.05
    assert report["params"]["grpo_steps"] == 1 and report["params"]["hedge_share"] == 0.5
    history = json.loads((out / "grpo" / "log_history.json").read_text())
    assert [h["step"] for h in history if "reward" in h] == [1]
    assert yaml.safe_load((out / "grpo_params.yaml").read_text())["train"]["per_device_train_batch_size"] == 4
    assert (out / "learning.png").read_bytes().startswith(b"\x89PNG")
    assert (out / "sft" / "config.json").is_file() and (out / "grpo" / "adapter_config.json").is_file()


@pytest.mark.parametrize(
    ("flags", "refusal"),
    [
        (
            ["--grpo-steps", "0", "--num-generations", "1"],
            "--grpo-steps: Input should be greater than 0 (got 0); "
            "--num-generations: Input should be greater than or equal to 2 (got 1)",
        ),
        (["--vocab-size", "100"], "the model it makes: vocab_size: Input should be greater than 259"),
        (["--hidden-size", "6"], "the model it makes: hidden_size (6) must be a multiple of num_attention_heads (4)"),
        (["--max-completion-length", "5000"], "the GRPO it makes: max_completion_length (5000) must be less than"),
        (["--sft-learning-rate", "inf"], "--sft-learning-rate: Input should be a finite number"),
        (["--threads", "0"], "--threads must be >= 1, got 0"),  # torch's RuntimeError, once set
    ],
)
def test_a_bad_flag_is_refused_in_one_line_before_any_work(tmp_path, capsys, flags, refusal):
    """A pydantic traceback, and with --build-data only after the dataset was built (or the warm start ran)."""
    out = tmp_path / "demo"
    with pytest.raises(SystemExit) as exit_:
        main([*flags, "--build-data", "--out", str(out)])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith(f"python -m train.demo: error: {refusal}")
    assert not out.exists()


def test_data_it_cannot_read_or_an_out_that_is_a_file_is_refused_in_one_line(tmp_path, capsys):
    """Tracebacks: FileNotFoundError from `datasets` once the output folder was made, FileExistsError making it."""
    out, missing = tmp_path / "demo", tmp_path / "no-such-episodes"
    with pytest.raises(SystemExit) as exit_:
        main(["--data", str(missing), "--out", str(out)])
    assert exit_.value.code == 2 and not out.exists()
    assert capsys.readouterr().err.startswith(f"error: --data {str(missing)!r}, --split 'train': ")
    out.write_text("a file")
    with pytest.raises(SystemExit) as exit_:
        main(["--out", str(out)])
    assert exit_.value.code == 2
    refusal = capsys.readouterr().err.splitlines()[-1]
    assert refusal == f"python -m train.demo: error: --out {out}: a file, not a folder"

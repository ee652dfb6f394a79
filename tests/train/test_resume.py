"""Resuming: `train.resume_from_checkpoint` continues a run where its checkpoint left it, and a fresh run never
restarts at step 1 over an output_dir that holds checkpoints."""

from __future__ import annotations

import functools
import json

import numpy as np
import pyarrow.parquet as pq
import pytest

import train.trainer
from reward_api.scoring import EpisodeKey, score_submission_key
from tests.train.test_grpo import SMALL
from train.data import head, stream_episodes
from train.grpo import main
from train.rewards import completion_text, parse_completion


@pytest.fixture
def scored_episodes(monkeypatch) -> list[tuple[list[int], list[str]]]:
    """The episode ids and completion texts of each reward call (one per step here), recorded around the real
    reward function."""
    calls: list[tuple[list[int], list[str]]] = []
    original = train.trainer.episode_reward

    @functools.wraps(original)
    def recording(completions, **columns):
        calls.append((list(columns["episode_id"]), [completion_text(c) for c in completions]))
        return original(completions, **columns)

    monkeypatch.setattr(train.trainer, "episode_reward", recording)
    return calls


def test_a_resumed_run_continues_at_the_next_step(tmp_path, write_params, episodes_dir, tiny_model, scored_episodes):
    out = tmp_path / "run"
    section = {**SMALL, "model": str(tiny_model), "data": str(episodes_dir), "output_dir": str(out), "save_steps": 2}
    assert main(["--params", str(write_params(section))]) == 0
    checkpoint_2 = (out / "checkpoint-2" / "trainer_state.json").read_bytes()
    first = list(scored_episodes)
    scored_episodes.clear()
    # A run killed while saving leaves a later checkpoint without its trainer_state.json: not one to resume from.
    (out / "checkpoint-3").mkdir()
    (out / "checkpoint-3" / "model.safetensors").write_bytes(b"half")

    resumed = {**section, "max_steps": 4, "resume_from_checkpoint": True}
    assert main(["--params", str(write_params(resumed))]) == 0
    state = json.loads((out / "checkpoint-4" / "trainer_state.json").read_text())
    assert state["global_step"] == 4
    assert [h["step"] for h in state["log_history"] if "reward" in h] == [1, 2, 3, 4]
    # Steps 3 and 4 only were trained again, on the episodes an uninterrupted run reads there (the stream goes on
    # where the checkpoint left it, front to back, one episode × num_generations a step); checkpoint-2 is kept.
    stream = [row["episode_id"] for row in head(stream_episodes(str(episodes_dir), "train"), 4)]
    calls = first + scored_episodes
    assert [ids for ids, _ in calls] == [[i] * SMALL["num_generations"] for i in stream]
    assert (out / "checkpoint-2" / "trainer_state.json").read_bytes() == checkpoint_2
    history = json.loads((out / "log_history.json").read_text())
    steps = [h for h in history if "reward" in h]
    assert [h["step"] for h in steps] == [1, 2, 3, 4]
    # Each step's logged reward is its completions scored against their own rows, read here from the Parquet files.
    rows = {r["episode_id"]: r for r in pq.read_table(sorted(episodes_dir.glob("data/train-*.parquet"))).to_pylist()}
    for logged, (ids, texts) in zip(steps, calls, strict=True):
        totals = []
        for episode_id, text in zip(ids, texts, strict=True):
            row, submission = rows[episode_id], parse_completion(text)[0]
            key = EpisodeKey.from_row(row["answer"], row["answer_aliases"], row["corrupt_ids"], row["max_budget"])
            totals.append(score_submission_key(submission.answer, submission.flagged_ids, submission.confidence, key))
        assert logged["rewards/episode_reward/mean"] == pytest.approx(np.mean([t["total"] for t in totals]), abs=1e-6)
        parts = [k for k in totals[0] if k != "total"]
        assert logged["reward"] == pytest.approx(sum(logged[f"reward_parts/{k}"] for k in parts), abs=1e-4)


def test_an_explicit_checkpoint_folder_is_resumed(tmp_path, write_params, episodes_dir, tiny_model):
    out = tmp_path / "run"
    section = {**SMALL, "model": str(tiny_model), "data": str(episodes_dir), "output_dir": str(out), "save_steps": 1}
    assert main(["--params", str(write_params(section))]) == 0
    resumed = {**section, "max_steps": 3, "resume_from_checkpoint": str(out / "checkpoint-1")}
    assert main(["--params", str(write_params(resumed))]) == 0
    state = json.loads((out / "checkpoint-3" / "trainer_state.json").read_text())
    assert [h["step"] for h in state["log_history"] if "reward" in h] == [1, 2, 3]


def _refusal(write_params, capsys, section: dict) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(["--params", str(write_params({**SMALL, **section}))])
    assert exit_.value.code == 2
    return capsys.readouterr().err


def test_a_fresh_run_over_checkpoints_is_refused_in_one_line(tmp_path, write_params, capsys):
    """Before the data is opened or a model loaded (neither exists here)."""
    out = tmp_path / "run"
    (out / "checkpoint-2").mkdir(parents=True)
    (out / "checkpoint-10").mkdir()
    section = {"output_dir": str(out), "data": str(tmp_path / "no-data"), "model": str(tmp_path / "no-model")}
    assert _refusal(write_params, capsys, section) == (
        f"error: train.output_dir {out} already holds checkpoints (latest {out / 'checkpoint-10'}): set "
        "train.resume_from_checkpoint: true to continue that run, or choose another train.output_dir\n"
    )


@pytest.mark.parametrize(
    ("resume", "message"),
    [
        (True, "error: train.resume_from_checkpoint: true, but train.output_dir {out} holds no checkpoint-*\n"),
        ("{out}", "error: train.resume_from_checkpoint: {out} is not a checkpoint (no trainer_state.json)\n"),
    ],
)
def test_resuming_without_a_checkpoint_is_refused(tmp_path, write_params, capsys, resume, message):
    out = tmp_path / "run"
    out.mkdir()
    resume = resume.format(out=out) if isinstance(resume, str) else resume
    section = {"output_dir": str(out), "resume_from_checkpoint": resume, "data": str(tmp_path / "no-data")}
    assert _refusal(write_params, capsys, section) == message.format(out=out)


@pytest.mark.parametrize("below", ["", "run"])
def test_an_output_dir_that_is_a_file_is_refused_in_one_line(tmp_path, write_params, capsys, below):
    """Before the data is opened or a model loaded: the trainer would fail on it only after loading."""
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    out = afile / below if below else afile
    section = {"output_dir": str(out), "data": str(tmp_path / "no-data"), "model": str(tmp_path / "no-model")}
    where = f"lies under {afile}, a file" if below else "is a file"
    assert _refusal(write_params, capsys, section) == (
        f"error: train.output_dir {out} {where}: it must be a folder (new or holding this run's outputs)\n"
    )


def test_resuming_where_no_checkpoint_is_complete_is_refused(tmp_path, write_params, capsys):
    out = tmp_path / "run"
    (out / "checkpoint-5").mkdir(parents=True)  # killed while saving: no trainer_state.json
    section = {"output_dir": str(out), "resume_from_checkpoint": True, "data": str(tmp_path / "no-data")}
    assert _refusal(write_params, capsys, section) == (
        f"error: train.resume_from_checkpoint: true, but no checkpoint in {out} is complete (none holds "
        "trainer_state.json: a run killed while saving); remove them to start afresh\n"
    )

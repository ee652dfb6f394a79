"""Streaming episodes into GRPO rows: agent-visible prompts, every row once, ranks reading disjoint shards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from itertools import islice
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from accelerate.data_loader import prepare_data_loader
from torch.utils.data import DataLoader
from trl.trainer.utils import repeat_iterable_dataset

from pipeline.schema import VISIBLE_COLUMNS
from tests.hubstandin import hub_standin, publish
from train.data import SETTLE_S, grpo_rows, head, stream_episodes
from train.evaluate import take_rows
from train.prompts import ONESHOT_SYSTEM_PROMPT, TOOLS_SYSTEM_PROMPT

ROOT = Path(__file__).resolve().parents[2]


def test_oneshot_rows_carry_the_prompt_and_the_ground_truth(episodes_dir, episode_rows):
    rows = take_rows(str(episodes_dir), "validation", 3)
    assert [r["episode_id"] for r in rows] == [r["episode_id"] for r in episode_rows[:3]]
    (row,) = head(grpo_rows(stream_episodes(str(episodes_dir), "validation"), "oneshot"), 1)
    system, user = row["prompt"]
    assert system == {"role": "system", "content": ONESHOT_SYSTEM_PROMPT}
    assert user["role"] == "user" and row["question"] in user["content"]
    assert all(f"[{d['doc_id']}] {d['title']}\n{d['content']}" in user["content"] for d in row["documents"])
    assert row["answer"] == episode_rows[0]["answer"] and row["corrupt_ids"] == episode_rows[0]["corrupt_ids"]
    # Nothing hidden reaches the prompt.
    text = json.dumps(row["prompt"])
    assert "corrupt" not in text.replace("corrupted", "") and row["fact_id"] not in text


def test_tool_rows_leave_the_observation_to_the_environment(episodes_dir):
    (row,) = head(grpo_rows(stream_episodes(str(episodes_dir), "test"), "tools"), 1)
    assert row["prompt"] == [{"role": "system", "content": TOOLS_SYSTEM_PROMPT}, {"role": "user", "content": ""}]


def test_files_without_the_hidden_columns_are_refused_naming_them(episodes_dir, tmp_path):
    """A hidden split's published files copied out without their card: evaluation ended in KeyError 'answer'."""
    shard = next((episodes_dir / "data").glob("validation-*.parquet"))
    (tmp_path / "data").mkdir()
    visible = pq.read_table(shard, columns=list(VISIBLE_COLUMNS))
    pq.write_table(visible, tmp_path / "data" / shard.name)
    with pytest.raises(ValueError, match=r"its files lack the columns \['fact_id', 'source', 'answer_type', 'answer'"):
        stream_episodes(str(tmp_path), "validation")


@pytest.mark.parametrize("processes", [1, 2, 3])
def test_each_generation_batch_gives_every_rank_its_own_episodes_in_stream_order(episodes_dir, processes):
    """What GRPOTrainer does with the rows on several processes, with gradient accumulation: TRL repeats the stream in
    blocks sized for all ranks' generation batch (`repeat_iterable_dataset`) and generates on the first of each
    `steps_per_generation` batches; accelerate hands each rank its part. Split by file (the suite's build has 3
    train files), a rank generated for its first episodes `processes` times and never for others."""
    per_device, accumulation, generations = 4, 4, 2
    unique = per_device * accumulation // generations  # episodes a rank generates for at once
    stream = [row["episode_id"] for row in head(stream_episodes(str(episodes_dir), "train"), 4 * processes * unique)]
    for rank in range(processes):
        rows = repeat_iterable_dataset(
            grpo_rows(stream_episodes(str(episodes_dir), "train"), "oneshot"),
            mini_repeat_count=generations,
            batch_size=processes * unique,
            repeat_count=accumulation,
        )
        loader = DataLoader(rows, per_device * accumulation, collate_fn=list)
        loader = prepare_data_loader(loader, num_processes=processes, process_index=rank, dispatch_batches=False)
        generated = [batch for i, batch in enumerate(islice(loader, 4 * accumulation)) if i % accumulation == 0]
        assert [[row["episode_id"] for row in batch[::generations]] for batch in generated] == [
            stream[(step * processes + rank) * unique : (step * processes + rank + 1) * unique] for step in range(4)
        ]


def test_a_file_is_not_a_dataset(tmp_path):
    path = tmp_path / "episodes.parquet"
    path.write_bytes(b"x")
    with pytest.raises(ValueError, match="is a file"):
        stream_episodes(str(path), "train")


# The program's last atexit handler (registered first) says how long after the stream's first rows its exit came.
EXIT_AFTER_HEAD = """
import atexit, sys, time
atexit.register(lambda: print(f"{time.monotonic() - read:.3f}"))
from train.data import head, stream_episodes
read = time.monotonic()
if sys.argv[2] == "head":
    rows = head(stream_episodes(sys.argv[1], "validation"), 5)
    read = time.monotonic()
"""


def test_a_program_that_exits_right_after_head_waits_for_the_scans_last_work(episodes_dir):
    """Arrow's threads may still be decoding the next row group of a stream `head` closed, and one that frees its
    Python buffer as the interpreter finalizes aborts it (`train.data._hold_exit`): the exit waits SETTLE_S after the
    close; a program that streamed nothing does not wait."""

    def exit_after(mode: str) -> float:
        code = [sys.executable, "-c", EXIT_AFTER_HEAD, str(episodes_dir), mode]
        run = subprocess.run(code, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-2000:]
        return float(run.stdout)

    assert exit_after("head") >= SETTLE_S * 0.95
    assert exit_after("nothing") < SETTLE_S / 2


def test_streams_a_hub_repo_by_id_and_revision(tmp_path, episodes_dir, episode_rows):
    """Published with huggingface_hub to a loopback Hub stand-in, then streamed by repo id and tag; main has moved
    on past the tag: its validation shard holds the test split's rows."""
    token, repo = "hf_train_test", "org/episodes"
    (validation,) = (episodes_dir / "data").glob("validation-*.parquet")
    (test,) = (episodes_dir / "data").glob("test-*.parquet")
    with hub_standin(token=token) as hub:
        api = publish(hub, episodes_dir, repo, private=True)
        shard = validation.relative_to(episodes_dir).as_posix()
        api.upload_file(path_or_fileobj=test, path_in_repo=shard, repo_id=repo, repo_type="dataset")
        assert hub.files(repo)[shard] == test.read_bytes() != hub.files(repo, "v1")[shard]
        env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
        env |= {"HF_ENDPOINT": hub.endpoint, "HF_HOME": str(tmp_path / "hf"), "HF_TOKEN": token}
        code = (
            "import json, sys\nfrom train.data import head, stream_episodes\n"
            "rows = {rev: head(stream_episodes(sys.argv[1], 'validation', revision=rev), 5) for rev in ('v1', None)}\n"
            "print(json.dumps({rev or 'main': [r['episode_id'] for r in got] for rev, got in rows.items()}))"
        )
        run = subprocess.run(
            [sys.executable, "-c", code, repo], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300
        )
    assert run.returncode == 0, run.stderr[-2000:]
    streamed = json.loads(run.stdout)
    assert streamed["v1"] == [r["episode_id"] for r in episode_rows[:5]], "the tag's validation rows"
    assert streamed["main"] == pq.read_table(test, columns=["episode_id"])["episode_id"].to_pylist()[:5], "main's"

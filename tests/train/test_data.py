"""Streaming episodes into GRPO rows: agent-visible prompts, every row once, ranks reading disjoint shards."""

from __future__ import annotations

import json

import pytest

from train.data import grpo_rows, head, stream_episodes
from train.evaluate import take_rows
from train.prompts import ONESHOT_SYSTEM_PROMPT, TOOLS_SYSTEM_PROMPT


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


def test_ranks_read_disjoint_shards_covering_the_split(episodes_dir, episode_rows):
    ids = [
        [r["episode_id"] for r in stream_episodes(str(episodes_dir), "validation", rank=rank, world_size=2)]
        for rank in range(2)
    ]
    assert ids[0] and ids[1] and not set(ids[0]) & set(ids[1])
    assert sorted(ids[0] + ids[1]) == [r["episode_id"] for r in episode_rows]


def test_a_file_is_not_a_dataset(tmp_path):
    path = tmp_path / "episodes.parquet"
    path.write_bytes(b"x")
    with pytest.raises(ValueError, match="is a file"):
        stream_episodes(str(path), "train")

"""Episodes streamed from a dataset folder or a Hub repo, turned into GRPO rows on the fly.

Rows are stored in a random order already (every episode is an independent draw), so the stream
is read front to back with no shuffle buffer. On several processes GRPOTrainer's accelerate splits
the stream itself: with at least as many shards as processes each rank reads its own shard files
(`IterableDataset.shard`, what `split_dataset_by_node` does for a divisible shard count), otherwise
each rank takes its slice of every batch. Splitting here as well would split twice, so the stream
handed to the trainer is the whole split; a shard count that is a multiple of the GPU count streams
evenly.
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Any

from datasets import IterableDataset, load_dataset

from train.prompts import oneshot_prompt, tools_prompt


def stream_episodes(data: str, split: str, *, revision: str | None = None) -> IterableDataset:
    """The raw episode rows of one split; `data` is a local dataset folder or a Hub dataset repo id."""
    if Path(data).exists() and not Path(data).is_dir():
        raise ValueError(f"data: {data} is a file; expected a dataset folder or a Hub repo id")
    local = Path(data).is_dir()
    return load_dataset(data, split=split, streaming=True, revision=None if local else revision)


def add_prompt(row: dict[str, Any], mode: str) -> dict[str, Any]:
    """The chat prompt of one episode; the other columns stay for the reward functions and the environment."""
    if mode == "tools":
        return {"prompt": tools_prompt()}
    return {"prompt": oneshot_prompt(row["question"], row["documents"])}


def grpo_rows(stream: IterableDataset, mode: str) -> IterableDataset:
    return stream.map(add_prompt, fn_kwargs={"mode": mode})


def head(stream: IterableDataset, n: int) -> list[dict[str, Any]]:
    """The first `n` rows; the stream is closed at once rather than left half-read until interpreter exit,
    where `datasets` may log an ignored error or abort."""
    rows = iter(stream)
    try:
        return list(islice(rows, n))
    finally:
        rows.close()

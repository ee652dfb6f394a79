"""Episodes streamed from a dataset folder or a Hub repo, turned into GRPO rows on the fly.

Rows are stored in a random order already (every episode is an independent draw), so the stream
is read front to back with no shuffle buffer. On several processes each rank reads its own shards
(`split_dataset_by_node`); a shard count that is a multiple of the world size streams evenly.
"""

from __future__ import annotations

import logging
from itertools import islice
from pathlib import Path
from typing import Any

from datasets import IterableDataset, load_dataset
from datasets.distributed import split_dataset_by_node

from train.prompts import oneshot_prompt, tools_prompt

logger = logging.getLogger(__name__)


def stream_episodes(
    data: str, split: str, *, revision: str | None = None, rank: int = 0, world_size: int = 1
) -> IterableDataset:
    """The raw episode rows of one split; `data` is a local dataset folder or a Hub dataset repo id."""
    if Path(data).exists() and not Path(data).is_dir():
        raise ValueError(f"data: {data} is a file; expected a dataset folder or a Hub repo id")
    local = Path(data).is_dir()
    stream = load_dataset(data, split=split, streaming=True, revision=None if local else revision)
    if world_size > 1:
        if stream.num_shards % world_size:
            logger.warning(
                "%d shards do not divide over %d ranks: every rank reads all rows", stream.num_shards, world_size
            )
        stream = split_dataset_by_node(stream, rank=rank, world_size=world_size)
    return stream


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

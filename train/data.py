"""Episodes streamed from a dataset folder or a Hub repo, turned into GRPO rows on the fly.

Rows are stored in a random order already (every episode is an independent draw), so the stream
is read front to back with no shuffle buffer. On several processes every rank reads the whole split and keeps
its slice of each generation batch (`grpo_rows`), so one rank's generation batch must hold whole GRPO groups
(`train.config` checks it).
"""

from __future__ import annotations

import atexit
import gc
import time
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from datasets import IterableDataset, get_dataset_config_names, load_dataset

from pipeline.schema import EPISODE_SCHEMA, hidden_config
from train.prompts import oneshot_prompt, tools_prompt


def stream_episodes(data: str, split: str, *, revision: str | None = None) -> IterableDataset:
    """The raw episode rows of one split; `data` is a local dataset folder or a Hub dataset repo id."""
    if Path(data).exists() and not Path(data).is_dir():
        raise ValueError(f"data: {data} is a file; expected a dataset folder or a Hub repo id")
    revision = None if Path(data).is_dir() else revision
    if hidden_config(split) in get_dataset_config_names(data, revision=revision):
        published = load_dataset(data, hidden_config(split), split=split, streaming=True, revision=revision).features
        raise ValueError(
            f"split {split!r} of {data} is hidden: its files lack the columns {_missing(published)} that training and "
            "evaluation need (its ground truth is kept by the reward server, which scores it through POST /score)"
        )
    stream = load_dataset(data, split=split, streaming=True, revision=revision)
    if missing := _missing(stream.features):  # a hidden split's files copied out without their card, say
        raise ValueError(f"split {split!r} of {data}: its files lack the columns {missing} that training needs")
    return stream


def _missing(features: Any) -> list[str]:
    """The episode columns the features lack; none when the features are unknown (the stream says at its first row)."""
    return [] if features is None else [name for name in EPISODE_SCHEMA.names if name not in features]


def add_prompt(row: dict[str, Any], mode: str) -> dict[str, Any]:
    """The chat prompt of one episode; the other columns stay for the reward functions and the environment."""
    if mode == "tools":
        return {"prompt": tools_prompt()}
    return {"prompt": oneshot_prompt(row["question"], row["documents"])}


def grpo_rows(stream: IterableDataset, mode: str) -> IterableDataset:
    """The GRPO rows of a stream, as one shard: on several processes accelerate then hands each rank its slice of
    every batch of the whole stream (`IterableDatasetShard`), the order TRL's repeat of a stream
    (`repeat_iterable_dataset`, blocks sized for all ranks' generation batch) is made for. A stream of at least as
    many files as processes accelerate splits by file instead, and each rank repeated its own episodes in blocks
    sized for all ranks: with gradient accumulation it generated for the same episodes several times and never for
    half or more of its own. Every rank parses every row (about 11k rows a second, far more than training takes)."""
    whole = IterableDataset.from_generator(_rows, features=stream.features, gen_kwargs={"stream": stream})
    return whole.map(add_prompt, fn_kwargs={"mode": mode})


def _rows(stream: IterableDataset) -> Iterator[dict[str, Any]]:
    yield from stream


def head(stream: IterableDataset, n: int) -> list[dict[str, Any]]:
    """The first `n` rows; the stream is closed at once rather than left half-read until interpreter exit,
    where `datasets` may log an ignored error or abort: pyarrow's half-read Parquet scanner sits in a reference
    cycle, and collected only at shutdown, after Arrow's runtime, it aborts the process (apache/arrow#45214).
    Arrow's threads may still be at work on the next row group after the close; the program's exit waits for
    them (`close_early`)."""
    rows = iter(stream)
    try:
        return list(islice(rows, n))
    finally:
        close_early(rows)


def close_early(rows: Iterator[dict[str, Any]]) -> None:
    """Close an iterator over a stream stopped before its end, collect its scanner while Arrow's runtime is alive,
    and hold the program's exit for the scan's last work (`_hold_exit`)."""
    rows.close()
    gc.collect()
    _hold_exit()


SETTLE_S = 1.0  # how long, at most, a program's exit waits for Arrow's last work on a stream it closed early
_closed_at: list[float] = []  # when this process last closed a stream early (empty: never)


def _hold_exit() -> None:
    """Hold the interpreter's exit until SETTLE_S after now. An Arrow thread that finishes decoding a row group
    drops its column readers, and the last one frees the Python buffer the file's bytes came in, which takes the GIL
    (gdb: `arrow::py::PyBuffer::~PyBuffer`); Python ends a thread that asks for it while the interpreter finalizes,
    and inside Arrow's C++ code that aborts the process ("terminate called without an active exception"; 1 of 6 runs
    of the suite, from a program that exited right after streaming from a Hub). Waiting at exit lets that work end
    while Python is alive; a read slower than SETTLE_S (a slow Hub) can still abort."""
    if not _closed_at:
        atexit.register(_settle)
    _closed_at[:] = [time.monotonic()]


def _settle() -> None:
    time.sleep(max(0.0, _closed_at[0] + SETTLE_S - time.monotonic()))

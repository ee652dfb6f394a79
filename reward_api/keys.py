"""The answer key of every episode in memory: what scoring needs (~30 bytes an episode, ~30 MB per 1M).

Scoring a random episode from its row group costs a Parquet read (~0.3-1 ms); with these few columns
in memory it costs a few microseconds. They are read shard by shard in a background thread, through
handles of their own, so start-up and other requests do not wait;
until a shard is loaded, the store falls back to reading the row group.

A shard of a hidden split keeps its answer columns in the answers folder (same path, same row groups) and only
`max_budget` in the published file; without the answers folder its episodes get a `SealedKey`.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

log = logging.getLogger(__name__)

KEY_COLUMNS = ("answer", "answer_aliases", "corrupt_ids", "max_budget")
# What a hidden split's answers file adds to its published file's max_budget.
ANSWER_KEY_COLUMNS = ("answer", "answer_aliases", "corrupt_ids")


class GroundTruthMissing(RuntimeError):
    """Scoring an episode of a hidden split on a server that does not hold its ground truth (a 403)."""


class SealedKey:
    """The key of an episode whose ground truth is not on this server: the budget rules apply (reads and flags
    play as usual), and whatever needs the answer or the corrupt ids raises GroundTruthMissing."""

    __slots__ = ("max_budget", "_message")

    def __init__(self, max_budget: int, message: str) -> None:
        self.max_budget = max_budget
        self._message = message

    @property
    def accepted(self) -> frozenset[str]:
        raise GroundTruthMissing(self._message)

    @property
    def corrupt(self) -> frozenset[int]:
        raise GroundTruthMissing(self._message)


@dataclass(frozen=True)
class KeySource:
    """Key columns of one shard held by one file."""

    path: Path
    columns: tuple[str, ...]


class KeyIndex:
    """Key columns per shard, filled by `load` (normally in the background thread started by `start`).

    `sources[i]` lists the files that together hold shard i's KEY_COLUMNS; empty: nothing to load for it.
    """

    def __init__(self, sources: list[tuple[KeySource, ...]]) -> None:
        self._sources = sources
        self._shards: list[dict[str, pa.Array] | None] = [None] * len(sources)
        self.ready = threading.Event()  # set when `load` ends: done, failed or stopped
        self._stop = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> threading.Thread:
        self.thread = threading.Thread(target=self.load, name="answer-keys")
        self.thread.start()
        return self.thread

    def stop(self, timeout: float = 30.0) -> None:
        """Stop loading after the shard being read (the loaded ones stay in use) and wait for the thread: at
        server shutdown, so that no thread is inside pyarrow while the interpreter finalizes."""
        self._stop.set()
        if self.thread is not None:
            self.thread.join(timeout)

    def load(self) -> None:
        started = time.monotonic()
        try:
            for index, sources in enumerate(self._sources):
                if self._stop.is_set():
                    log.info("answer keys: loading stopped after %d of %d shards", index, len(self._sources))
                    return
                if sources:
                    self._shards[index] = {
                        name: column.combine_chunks() for source in sources for name, column in _read(source).items()
                    }
        except (pa.ArrowException, OSError) as exc:
            log.error("answer keys not preloaded (scoring reads row groups instead): %s", exc)
            return
        finally:
            self.ready.set()
        size = sum(col.nbytes for shard in self._shards if shard for col in shard.values())
        log.info("answer keys in memory: %.1f MB after %.1f s", size / 2**20, time.monotonic() - started)

    def row(self, shard: int, offset: int) -> dict | None:
        """The key columns of one row, or None while its shard is not loaded."""
        columns = self._shards[shard]
        if columns is None:
            return None
        return {name: columns[name][offset].as_py() for name in KEY_COLUMNS}


def _read(source: KeySource) -> dict[str, pa.ChunkedArray]:
    with pq.ParquetFile(source.path, memory_map=False) as handle:
        table = handle.read(columns=list(source.columns), use_threads=False)
    return {name: table.column(name) for name in source.columns}

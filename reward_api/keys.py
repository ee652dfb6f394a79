"""The answer key of every episode in memory: what scoring needs (~30 bytes an episode, ~30 MB per 1M).

Scoring a random episode from its row group costs a Parquet read (~0.3-1 ms); with these few columns
in memory it costs a few microseconds. They are read shard by shard in a background thread, through
handles of their own (sharing the already parsed footers), so start-up and other requests do not wait;
until a shard is loaded, the store falls back to reading the row group.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

log = logging.getLogger(__name__)

KEY_COLUMNS = ("answer", "answer_aliases", "corrupt_ids", "max_budget")


class KeyIndex:
    """Key columns per shard, filled by `load` (normally in the background thread started by `start`)."""

    def __init__(self, paths: list[Path], footers: list[pq.FileMetaData]) -> None:
        self._paths = paths
        self._footers = footers
        self._shards: list[dict[str, pa.Array] | None] = [None] * len(paths)
        self.ready = threading.Event()

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.load, name="answer-keys")
        thread.start()
        return thread

    def load(self) -> None:
        started = time.monotonic()
        try:
            for index, (path, footer) in enumerate(zip(self._paths, self._footers, strict=True)):
                table = pq.ParquetFile(path, metadata=footer).read(columns=list(KEY_COLUMNS), use_threads=False)
                self._shards[index] = {name: table.column(name).combine_chunks() for name in KEY_COLUMNS}
        except (pa.ArrowException, OSError) as exc:
            log.error("answer keys not preloaded (scoring reads row groups instead): %s", exc)
            return
        finally:
            self.ready.set()
        size = sum(col.nbytes for shard in self._shards for col in shard.values())
        log.info("answer keys in memory: %.1f MB after %.1f s", size / 2**20, time.monotonic() - started)

    def row(self, shard: int, offset: int) -> dict | None:
        """The key columns of one row, or None while its shard is not loaded."""
        columns = self._shards[shard]
        if columns is None:
            return None
        return {name: columns[name][offset].as_py() for name in KEY_COLUMNS}

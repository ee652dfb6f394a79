"""Episode store: finds an episode by id in a Hub-layout dataset folder without loading the dataset.

The manifest says which shard holds an id and the row groups have a fixed size, so an id maps to
(shard, row group, offset) by arithmetic. Row groups are read on demand, only the columns a caller
needs, and kept in an LRU cache bounded in bytes; parsed footers are kept for a few shards only. Scoring needs
only the answer key, which `keys.KeyIndex` holds for every episode (~27 MB per 1M); agent views are
also cached per episode, so a game's steps after its reset read nothing. Start-up checks every
shard's footer against the manifest and refuses a missing or broken file by name.

A hidden split (manifest `hidden_splits`) is published without its hidden columns; its ground truth comes from
the build's answers folder (`answers=`), checked at start-up against the manifest's `answers_sha256` and
shard by shard. Without it the split's episodes are served and played, and scoring them raises
GroundTruthMissing (`keys.SealedKey`).

Cost of a random agent view (measured, 1M episodes, zstd): one row-group read, ~3 ms at 256 rows per
group, ~1 ms at 64; the pipeline's row_group_rows sets it.
"""

from __future__ import annotations

import bisect
import functools
import logging
import os
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.schema import ANSWERS_SCHEMA, EPISODE_SCHEMA, TASKS, VISIBLE_COLUMNS, VISIBLE_SCHEMA
from reward_api.heap import release_freed_memory
from reward_api.keys import ANSWER_KEY_COLUMNS, KEY_COLUMNS, KeyIndex, KeySource, SealedKey
from reward_api.scoring import EpisodeKey
from reward_api.shards import StoreError as StoreError  # where the server's callers have always found it
from reward_api.shards import check_answers, open_shard, read_manifest

log = logging.getLogger(__name__)

# Random ids over a large dataset almost never hit the row-group cache, and games hit the view cache:
# a small group cache keeps the RSS down (a decoded group of 256 episodes is ~2 MB).
DEFAULT_CACHE_MB = 16
DEFAULT_CACHE_KEYS = 16384
# Agent views kept per episode (~10 KB each as Python objects) for the games in flight: a /step after its /reset
# is a hit. Once the views cache (reward_api.views) serves a shard a miss costs one small read, not a row group,
# so a few hundred suffice (2,048 held ~20 MB more of the RSS).
DEFAULT_CACHE_VIEWS = 256
# Row groups decoded at once: more threads than cores only add decode buffers to the RSS.
MAX_PARALLEL_READS = max(2, os.cpu_count() or 2)
# Files whose parsed footer stays in memory. A parsed footer costs ~15 KB of RSS per row group (7 MB for a default
# train shard): holding all 32 default shards' took 119 MB, growing with the dataset. Once the agent views and the
# answer keys are cached nothing hot reads a row group; a miss re-opens the file in ~10 ms.
FOOTERS_KEPT = 8


def sealed_message(split: str) -> str:
    return (
        f"ground truth of split {split} is not on this server: its episodes can be played but not scored here; "
        "start the server with --answers (the answers folder of this build)"
    )


class EpisodeNotFound(LookupError):
    """No episode has this id; the message gives the valid range."""


@dataclass(frozen=True, slots=True)
class Location:
    shard: int
    group: int
    offset: int


class _Lru:
    """A thread-safe LRU map bounded by the summed weight of its values.

    The lock guards the map only: a missing value is loaded outside it, so slow loads run in parallel
    (two threads may load the same entry; they get equal values).
    """

    def __init__(self, capacity: int, weigh: Callable[[object], int] = lambda _: 1) -> None:
        self.capacity = capacity
        self.weigh = weigh
        self.weight = 0
        self.items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def peek(self, key):
        """The cached value or None, without loading."""
        with self._lock:
            value = self.items.get(key)
            if value is not None:
                self.items.move_to_end(key)
            return value

    def get(self, key, load: Callable):
        with self._lock:
            value = self.items.get(key)
            if value is not None:
                self.items.move_to_end(key)
                return value
        value = load()
        with self._lock:
            if key not in self.items:
                self.items[key] = value
                self.weight += self.weigh(value)
                while self.weight > self.capacity and len(self.items) > 1:
                    self.weight -= self.weigh(self.items.popitem(last=False)[1])
        return value


class _Readers:
    """Readers of one file sharing its parsed footer: a Parquet reader is not shared between threads."""

    def __init__(self, path: Path, handle: pq.ParquetFile) -> None:
        self._path = path
        self._footer = handle.metadata
        self._idle: queue.SimpleQueue[pq.ParquetFile] = queue.SimpleQueue()
        self._idle.put(handle)

    @contextmanager
    def reader(self) -> Iterator[pq.ParquetFile]:
        try:
            handle = self._idle.get_nowait()
        except queue.Empty:
            handle = pq.ParquetFile(self._path, metadata=self._footer, memory_map=False)
        try:
            yield handle
        finally:
            self._idle.put(handle)


class EpisodeStore:
    """Read-only access to one dataset folder; safe to share between threads, which read in parallel."""

    def __init__(
        self,
        root: Path,
        cache_mb: float = DEFAULT_CACHE_MB,
        cache_keys: int = DEFAULT_CACHE_KEYS,
        preload_keys: bool = True,
        answers: Path | None = None,
    ):
        self.root = Path(root)
        self.manifest = read_manifest(self.root)
        self.shards = sorted(self.manifest.shards, key=lambda s: s.first_id)
        self.hidden = frozenset(self.manifest.hidden_splits)
        self.answers_root = None if answers is None else Path(answers)
        self._readers = _Lru(FOOTERS_KEPT)  # (shard, answers file?) -> _Readers
        for shard in range(len(self.shards)):  # every footer is checked here; the last few stay parsed
            self._readers.get((shard, False), functools.partial(self._open, shard, False))
        release_freed_memory()  # what the footers not kept took
        by_path = {} if answers is None else check_answers(self.answers_root, self.manifest)
        # The answers file of each shard of a hidden split (None elsewhere, and for all of them without answers).
        self._answer_shards = [by_path.get(info.path) for info in self.shards]
        self._starts = [s.first_id for s in self.shards]
        self.num_episodes = sum(s.num_rows for s in self.shards)
        self._task_lock = threading.Lock()
        self._reads = threading.BoundedSemaphore(MAX_PARALLEL_READS)
        self._groups = _Lru(int(cache_mb * 2**20), weigh=lambda table: table.nbytes)
        self._keys = _Lru(cache_keys)
        self._views = _Lru(DEFAULT_CACHE_VIEWS)
        self._task_ids: dict[tuple[str, str], np.ndarray] = {}
        # Stored agent-view bodies (the server's views cache, set by the server): a view found there costs no
        # row-group read. Under benchmarks/soak.py those reads (a 128-row group decoded per /reset) kept one
        # worker's RSS 5-17% above its idle baseline and drifting; without them it holds within 2%.
        self.view_bodies: Callable[[int], bytes | None] | None = None
        self.key_index = KeyIndex([self._key_sources(shard) for shard in range(len(self.shards))])
        if preload_keys:
            self.key_index.start()
        log.info(
            "serving %s episodes from %d shards in %s (reward %s)",
            f"{self.num_episodes:,}",
            len(self.shards),
            self.root,
            self.manifest.reward_version,
        )

    def _path(self, shard: int, answers: bool) -> Path:
        return (self.answers_root if answers else self.root) / self.shards[shard].path

    def _key_sources(self, shard: int) -> tuple[KeySource, ...]:
        """The files holding a shard's key columns: a hidden split's answers sit in their own file."""
        if self.shards[shard].split not in self.hidden:
            return (KeySource(self._path(shard, False), KEY_COLUMNS),)
        if self._answer_shards[shard] is None:
            return ()
        return (
            KeySource(self._path(shard, False), ("max_budget",)),
            KeySource(self._path(shard, True), ANSWER_KEY_COLUMNS),
        )

    def locate(self, episode_id: int) -> Location:
        """(shard, row group, offset) of an id, by arithmetic on the manifest."""
        shard = bisect.bisect_right(self._starts, episode_id) - 1
        if episode_id < 0 or shard < 0 or episode_id >= self._starts[shard] + self.shards[shard].num_rows:
            raise EpisodeNotFound(self._range_message(episode_id))
        group, offset = divmod(episode_id - self._starts[shard], self.manifest.row_group_rows)
        return Location(shard, group, offset)

    def _range_message(self, episode_id: int) -> str:
        ranges = ", ".join(
            f"{name} {info.first_id}..{info.first_id + info.num_rows - 1}" if info.num_rows else f"{name} none"
            for name, info in self.manifest.splits.items()
        )
        digits = str(episode_id)  # up to 4,300 of them: echoed whole, a 404 ran to 4 KB
        shown = digits if len(digits) <= 40 else f"{digits[:20]}...{digits[-20:]} ({len(digits):,} digits)"
        return f"no episode {shown}; ids are {ranges}"

    def _open(self, shard: int, answers: bool) -> _Readers:
        """The file's readers, its footer parsed and checked against the manifest again (StoreError if it changed)."""
        rows, info = self.manifest.row_group_rows, self.shards[shard]
        if answers:
            handle = open_shard(self.answers_root, self._answer_shards[shard], rows, ANSWERS_SCHEMA)
        else:
            handle = open_shard(self.root, info, rows, VISIBLE_SCHEMA if info.split in self.hidden else EPISODE_SCHEMA)
        return _Readers(self._path(shard, answers), handle)

    @contextmanager
    def _reader(self, shard: int, answers: bool) -> Iterator[pq.ParquetFile]:
        """A shard's reader for one read. A file removed, cut short or replaced since start-up fails there (an OSError
        or Arrow error mid-read): a StoreError naming it, which the server answers with a 503, not a bare 500."""
        readers = self._readers.get((shard, answers), functools.partial(self._open, shard, answers))
        try:
            with readers.reader() as handle:
                yield handle
        except (OSError, pa.ArrowException) as exc:
            raise StoreError(
                f"{self._path(shard, answers)}: cannot be read ({exc}); the dataset changed after the server started: "
                "restart it on an intact build"
            ) from exc

    def _group(self, loc: Location, columns: tuple[str, ...], answers: bool = False) -> pa.Table:
        def load() -> pa.Table:
            with self._reads, self._reader(loc.shard, answers) as handle:
                return handle.read_row_group(loc.group, columns=list(columns), use_threads=False)

        return self._groups.get((loc.shard, loc.group, columns, answers), load)

    def _row(self, loc: Location, columns: tuple[str, ...], answers: bool = False) -> dict:
        return self._group(loc, columns, answers).slice(loc.offset, 1).to_pylist()[0]

    def view(self, episode_id: int) -> dict:
        """The agent view: the visible columns only (README: The episode). Cached and shared: do not mutate it."""
        loc = self.locate(episode_id)

        def load() -> dict:
            body = None if self.view_bodies is None else self.view_bodies(episode_id)
            return self._row(loc, VISIBLE_COLUMNS) if body is None else orjson.loads(body)

        return self._views.get(episode_id, load)

    def cached_view(self, episode_id: int) -> dict | None:
        """The agent view if it is in memory (no I/O): lets an event loop skip the thread pool on a hit."""
        self.locate(episode_id)
        return self._views.peek(episode_id)

    def key(self, episode_id: int) -> EpisodeKey | SealedKey:
        """What scoring needs about an episode (answers, corrupt ids, budget), cached per episode.

        A SealedKey for a hidden split's episode on a server without its answers: scoring it raises
        GroundTruthMissing."""
        loc = self.locate(episode_id)

        def load() -> EpisodeKey | SealedKey:
            split = self.shards[loc.shard].split
            if split in self.hidden and self._answer_shards[loc.shard] is None:
                return SealedKey(self._row(loc, ("max_budget",))["max_budget"], sealed_message(split))
            row = self.key_index.row(loc.shard, episode_id - self._starts[loc.shard]) or self._key_row(loc, split)
            return EpisodeKey.from_row(row["answer"], row["answer_aliases"], row["corrupt_ids"], row["max_budget"])

        return self._keys.get(episode_id, load)

    def _key_row(self, loc: Location, split: str) -> dict:
        if split not in self.hidden:
            return self._row(loc, KEY_COLUMNS)
        return self._row(loc, ("max_budget",)) | self._row(loc, ANSWER_KEY_COLUMNS, answers=True)

    def keys(self, episode_ids: Iterable[int]) -> dict[int, EpisodeKey | SealedKey]:
        """Keys of many episodes, each distinct id looked up once (a GRPO group shares one episode)."""
        return {episode_id: self.key(episode_id) for episode_id in dict.fromkeys(episode_ids)}

    def ids_of(self, split: str, task: str | None) -> np.ndarray | range:
        """Episode ids of a split, optionally of one task; the task index is read once, one byte per episode."""
        info = self.manifest.splits.get(split)
        if info is None:
            raise EpisodeNotFound(f"unknown split {split!r}; splits are {sorted(self.manifest.splits)}")
        if task is None:
            return range(info.first_id, info.first_id + info.num_rows)
        if task not in TASKS:
            raise EpisodeNotFound(f"unknown task {task!r}; tasks are {list(TASKS)}")
        with self._task_lock:
            if (split, task) not in self._task_ids:
                self._index_tasks(split)
        return self._task_ids[split, task]

    def _index_tasks(self, split: str) -> None:
        parts = []
        for shard, info in enumerate(self.shards):
            if info.split == split:
                with self._reader(shard, False) as handle:
                    tasks = handle.read(columns=["task"], use_threads=False).column("task")
                parts.append((info.first_id, tasks.to_numpy(zero_copy_only=False)))
        for task in TASKS:
            self._task_ids[split, task] = np.concatenate(
                [first + np.flatnonzero(tasks == task) for first, tasks in parts] or [np.empty(0, np.int64)]
            )

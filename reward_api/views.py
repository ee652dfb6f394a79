"""Agent views precomputed per shard, so `GET /episodes/{id}` is one pread and one small zstd frame.

A random id over a large dataset misses the store's row-group cache, and decoding a row group (mostly the
nested `documents` column) costs ~1-1.5 ms of CPU. Here every episode's response body (the exact JSON
bytes the route's store path returns) is written once per dataset content, each compressed on its own
with a zstd dictionary trained on the shard: ~525 bytes for a ~3.7 KB body on the default build (measured
on 2.7 KB bodies: 350 with the dictionary, 870 per-frame zstd without one, 1,220 lz4; ~5 us to decompress).
One file per shard, in a folder keyed by the manifest's shard checksums:

    [dictionary][frames][frame offsets: int64 little-endian x (rows + 1)][footer: magic, rows, sizes, crc32]

A file is written under a temporary name and renamed when complete, while its builder holds the shard's
lock (flock), so several workers build each shard once and never read a half-written file; one whose size,
offsets or checksum do not match, or whose first body differs from the store's, is rebuilt, never served.
Lookups read with pread (no mmap growing the RSS); the offsets stay in memory (8 bytes an episode).
Each build of a dataset gets its own folder; reward_api.viewfolders keeps old ones from piling up.
"""

from __future__ import annotations

import array
import fcntl
import hashlib
import itertools
import json
import logging
import os
import struct
import threading
import time
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

from pipeline.schema import VISIBLE_COLUMNS, ShardInfo
from reward_api.heap import release_freed_memory
from reward_api.store import EpisodeStore
from reward_api.viewfolders import hold, prune

log = logging.getLogger(__name__)

CACHE_ENV = "CONTEXTCORRUPTION_VIEW_CACHE"
FORMAT = 1  # part of the cache key: bump it whenever the file layout or the bodies' encoding changes
MAGIC = b"CCVIEWS1"
FOOTER = struct.Struct("<8sQQQI")  # magic, rows, dictionary bytes, frames bytes, crc32 of all that precedes
LEVEL = 3  # level 9 saves ~20% more bytes at 3-5x the build time
DICT_BYTES, DICT_SAMPLES = 32 * 1024, 512  # measured: larger dictionaries or samples gain ~1%, cost memory
CHUNK = 1 << 20
LOCK_POLL_S = 0.1  # how often a shard built by another process is looked at again (and a close noticed)


class ViewCacheError(RuntimeError):
    """A views file that must not be served; the message names the file and what is wrong with it."""


class _Stopped(Exception):
    """The cache was closed while a shard was being built."""


def cache_folder(shards: Iterable[ShardInfo], base: Path | None = None) -> Path:
    """<base>/<key of the dataset content>; base is $CONTEXTCORRUPTION_VIEW_CACHE or the user's cache dir."""
    if base is None:
        user_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        base = Path(os.environ.get(CACHE_ENV) or user_cache / "contextcorruption" / "views")
    content = json.dumps([FORMAT, VISIBLE_COLUMNS, [[s.path, s.sha256, s.num_rows] for s in shards]])
    return base / hashlib.sha256(content.encode()).hexdigest()[:24]


def shard_bodies(path: Path, stop: threading.Event) -> Iterator[bytes]:
    """The route's body for every episode of a shard, in id order: the store's columns, the route's encoder."""
    with pq.ParquetFile(path, memory_map=False) as handle:
        for group in range(handle.metadata.num_row_groups):
            if stop.is_set():
                raise _Stopped
            rows = handle.read_row_group(group, columns=list(VISIBLE_COLUMNS), use_threads=False).to_pylist()
            yield from map(orjson.dumps, rows)


def _dictionary(data: bytes) -> zstandard.ZstdCompressionDict | None:
    return zstandard.ZstdCompressionDict(data) if data else None


def train_dictionary(samples: list[bytes]) -> bytes:
    """A zstd dictionary for one shard's frames; b"" when the samples are too few to train one."""
    try:
        return zstandard.train_dictionary(DICT_BYTES, samples, k=256, d=8, level=LEVEL).as_bytes()
    except zstandard.ZstdError:
        return b""


def write_views(bodies: Iterable[bytes], out: BinaryIO) -> int:
    """Write a views file of `bodies` (in id order) to `out`; returns how many it holds."""
    bodies = iter(bodies)
    head = list(itertools.islice(bodies, DICT_SAMPLES))
    dictionary = train_dictionary(head)
    compressor = zstandard.ZstdCompressor(level=LEVEL, dict_data=_dictionary(dictionary), write_dict_id=False)
    crc = zlib.crc32(dictionary)
    out.write(dictionary)
    offsets = array.array("q", [0])
    for body in itertools.chain(head, bodies):
        frame = compressor.compress(body)
        out.write(frame)
        crc = zlib.crc32(frame, crc)
        offsets.append(offsets[-1] + len(frame))
    table = np.frombuffer(offsets, dtype=np.int64).astype("<i8").tobytes()
    out.write(table)
    out.write(FOOTER.pack(MAGIC, len(offsets) - 1, len(dictionary), offsets[-1], zlib.crc32(table, crc)))
    return len(offsets) - 1


class ShardViews:
    """One checked views file, open for lookups from any thread."""

    def __init__(self, path: Path, rows: int) -> None:
        self._fd = os.open(path, os.O_RDONLY)
        try:
            self.nbytes = os.fstat(self._fd).st_size
            self._base, self._offsets = self._check(path, rows)
        except BaseException:
            os.close(self._fd)
            raise
        self._decompressor = zstandard.ZstdDecompressor(dict_data=_dictionary(os.pread(self._fd, self._base, 0)))
        self._lock = threading.Lock()  # a decompressor is not shared between threads; close() waits for readers

    def _check(self, path: Path, rows: int) -> tuple[int, np.ndarray]:
        if self.nbytes < FOOTER.size:
            raise ViewCacheError(f"{path}: {self.nbytes} bytes, too short for a views file")
        magic, count, dict_len, frames_len, crc = FOOTER.unpack(
            os.pread(self._fd, FOOTER.size, self.nbytes - FOOTER.size)
        )
        expected = dict_len + frames_len + 8 * (count + 1) + FOOTER.size
        if magic != MAGIC or count != rows or expected != self.nbytes:
            raise ViewCacheError(
                f"{path}: {self.nbytes} bytes holding {count} views (magic {magic!r}); expected {expected} bytes "
                f"holding {rows} (truncated, or written by another format)"
            )
        offsets = np.frombuffer(os.pread(self._fd, 8 * (count + 1), dict_len + frames_len), dtype="<i8")
        if offsets[0] != 0 or offsets[-1] != frames_len or np.any(np.diff(offsets) <= 0):
            raise ViewCacheError(f"{path}: frame offsets are not increasing from 0 to {frames_len}")
        actual = 0
        for start in range(0, self.nbytes - FOOTER.size, CHUNK):
            actual = zlib.crc32(os.pread(self._fd, min(CHUNK, self.nbytes - FOOTER.size - start), start), actual)
        if actual != crc:
            raise ViewCacheError(f"{path}: checksum {actual:08x}, footer says {crc:08x} (corrupted)")
        return dict_len, offsets

    def get(self, index: int) -> bytes:
        """The body of the shard's `index`-th episode."""
        start, end = self._offsets[index : index + 2].tolist()
        with self._lock:
            return self._decompressor.decompress(os.pread(self._fd, end - start, self._base + start))

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


@contextmanager
def _flock(path: Path) -> Iterator[bool]:
    """Hold an exclusive lock on `path` (True), or False at once when another holder has it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held = True
        except BlockingIOError:
            held = False
        yield held
    finally:
        os.close(fd)  # releases the lock, as does the holder's death


class ViewCache:
    """Agent-view bodies of a store's episodes, from views files opened or built by `start`'s thread.

    `body` answers None for a shard that is not ready yet: the caller then reads the store.
    """

    def __init__(self, store: EpisodeStore, base: Path | None = None) -> None:
        self._store = store
        self._group_rows = store.manifest.row_group_rows
        self.folder = cache_folder(store.shards, base)
        self._shards: list[ShardViews | None] = [None] * len(store.shards)
        self.ready = threading.Event()
        self._stop = threading.Event()
        self._checked = False
        self._in_use = -1  # fd of the folder's in-use lock, taken by ensure
        self.thread: threading.Thread | None = None

    def start(self) -> threading.Thread:
        self.thread = threading.Thread(target=self._run, name="agent-views", daemon=True)
        self.thread.start()
        return self.thread

    def body(self, episode_id: int) -> bytes | None:
        """The response body of `episode_id`, or None while its shard is not ready; EpisodeNotFound if unknown."""
        loc = self._store.locate(episode_id)
        views = self._shards[loc.shard]
        if views is None:
            return None
        try:
            return views.get(loc.group * self._group_rows + loc.offset)
        except (OSError, zstandard.ZstdError) as exc:  # the file changed under us: stop serving it
            log.error("%s: unreadable (%s); shard %d is served from the store", self._file(loc.shard), exc, loc.shard)
            self._shards[loc.shard] = None
            return None

    def ensure(self) -> list[int]:
        """Open every shard's views, building the missing or broken ones; returns the shards built by this call.

        A shard being built elsewhere is skipped for another while there is one, then looked at again every
        LOCK_POLL_S until it is built; a close stops the wait (_Stopped), as it stops a build.
        """
        if self._in_use < 0:
            self._in_use = hold(self.folder)
        pending = [index for index, views in enumerate(self._shards) if views is None and not self._open(index)]
        built = []
        while pending:
            claimed = False
            for index in list(pending):
                with _flock(self._file(index).with_suffix(".lock")) as held:
                    if held:
                        if not self._open(index):
                            self._build(index)
                            built.append(index)
                        pending.remove(index)
                        claimed = True
            if not claimed and self._stop.wait(LOCK_POLL_S):
                raise _Stopped
        self.ready.set()
        return built

    def close(self, timeout: float = 30.0) -> None:
        """Stop a build in progress (its temporary file is removed), wait for `start`'s thread, close the files.

        The server calls it at shutdown: a thread still inside pyarrow while the interpreter finalizes aborts it.
        """
        self._stop.set()
        if self.thread is not None:
            self.thread.join(timeout)
        for index, views in enumerate(self._shards):
            self._shards[index] = None
            if views is not None:
                views.close()
        if self._in_use >= 0:
            os.close(self._in_use)
            self._in_use = -1

    @property
    def nbytes(self) -> int:
        return sum(views.nbytes for views in self._shards if views is not None)

    def _file(self, index: int) -> Path:
        return self.folder / f"{index:05d}-{Path(self._store.shards[index].path).stem}.views"

    def _run(self) -> None:
        started = time.monotonic()
        try:
            built = self.ensure()
        except _Stopped:
            return
        except (OSError, ViewCacheError, pa.ArrowException, zstandard.ZstdError) as exc:
            log.error("agent views not cached, /episodes reads row groups: %s", exc)
            return
        log.info(
            "agent views ready: %d shards (%d built here), %.1f MB in %s after %.1f s",
            len(self._shards),
            len(built),
            self.nbytes / 2**20,
            self.folder,
            time.monotonic() - started,
        )
        for folder in prune(self.folder.parent):
            log.info("removed %s: the agent views of another build, unused", folder)

    def _open(self, index: int) -> bool:
        """Serve the shard's views file if it exists and is sound; False if it must be (re)built."""
        try:
            views = ShardViews(self._file(index), self._store.shards[index].num_rows)
        except FileNotFoundError:
            return False
        except ViewCacheError as exc:
            log.warning("%s; rebuilding it", exc)
            return False
        return self._serve(index, views)

    def _serve(self, index: int, views: ShardViews) -> bool:
        """Serve `views`; the first one is checked against the store's view (a guard against a stale FORMAT).

        One episode for the whole cache: each store read leaves ~1 MB of decode buffers in the RSS.
        """
        first_id = self._store.shards[index].first_id
        if not self._checked and views.get(0) != orjson.dumps(self._store.view(first_id)):
            views.close()
            log.warning("%s: episode %d differs from the store's view", self._file(index), first_id)
            return False
        self._checked = True
        self._shards[index] = views
        return True

    def _build(self, index: int) -> None:
        """Write the shard's views file under a temporary name, check it, rename it; the caller holds its lock."""
        info, final = self._store.shards[index], self._file(index)
        for stale in self.folder.glob(f".{final.name}.*.tmp"):  # left by a killed build: it no longer holds the lock
            stale.unlink(missing_ok=True)
        temp = final.with_name(f".{final.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        started = time.monotonic()
        try:
            with open(temp, "wb") as out:
                write_views(shard_bodies(self._store.root / info.path, self._stop), out)
            views = ShardViews(temp, info.num_rows)
            if not self._serve(index, views):
                raise ViewCacheError(f"{final}: built views differ from the store's (is FORMAT stale?)")
            os.replace(temp, final)
        finally:
            temp.unlink(missing_ok=True)
            release_freed_memory()
        log.info(
            "%s: %d views, %.1f MB, built in %.1f s",
            final,
            info.num_rows,
            views.nbytes / 2**20,
            time.monotonic() - started,
        )

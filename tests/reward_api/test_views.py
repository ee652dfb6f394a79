"""The agent-views cache: byte-identical to the store path, rebuilt when damaged, built once by concurrent builders."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import threading
import time
from pathlib import Path

import httpx
import orjson
import pytest

from pipeline.schema import VISIBLE_COLUMNS
from reward_api import views
from reward_api.localserver import local_server
from reward_api.store import EpisodeNotFound, EpisodeStore
from reward_api.views import (
    CACHE_ENV,
    FOOTER,
    ShardViews,
    ViewCache,
    ViewCacheError,
    cache_folder,
    write_views,
)
from tests.hiddenbuild import build_hidden
from tests.reward_api.test_viewfolders import old_cache


@pytest.fixture(scope="module")
def store(dataset_dir) -> EpisodeStore:
    return EpisodeStore(dataset_dir, preload_keys=False)


@pytest.fixture
def cache(store, tmp_path):
    cache = ViewCache(store, tmp_path)
    yield cache
    cache.close()


def slow_body(store: EpisodeStore, episode_id: int) -> bytes:
    """What /episodes answers from the store (the route encodes the view with orjson)."""
    return orjson.dumps(store.view(episode_id))


def files(folder: Path, pattern: str) -> list[Path]:
    return sorted(folder.glob(pattern))


def test_every_cached_body_is_the_store_paths_bytes_and_only_visible_columns(store, cache):
    assert cache.body(0) is None  # nothing served before the shard is ready
    assert cache.ensure() == list(range(len(store.shards)))
    assert cache.ready.is_set() and len(files(cache.folder, "*.views")) == len(store.shards)
    assert not files(cache.folder, ".*.tmp")
    for episode_id in range(store.num_episodes):
        body = cache.body(episode_id)
        assert body == slow_body(store, episode_id), episode_id
        view = json.loads(body)
        assert list(view) == list(VISIBLE_COLUMNS)
        assert all(list(doc) == ["doc_id", "title", "content"] for doc in view["documents"])
    with pytest.raises(EpisodeNotFound):
        cache.body(store.num_episodes)


def test_a_hidden_split_published_without_its_hidden_columns_is_cached_alike(
    tmp_path_factory, hidden_facts_dir, tmp_path
):
    episodes, _answers = build_hidden(tmp_path_factory.mktemp("hidden"), hidden_facts_dir)
    store = EpisodeStore(episodes, preload_keys=False)
    hidden = [index for index, info in enumerate(store.shards) if info.split in store.manifest.hidden_splits]
    cache = ViewCache(store, tmp_path)
    try:
        assert hidden and cache.ensure() == list(range(len(store.shards)))
        for index in hidden:
            info = store.shards[index]
            for episode_id in range(info.first_id, info.first_id + info.num_rows):
                assert cache.body(episode_id) == slow_body(store, episode_id), episode_id
    finally:
        cache.close()


def test_a_built_cache_is_reused_by_the_next_server(store, cache, tmp_path):
    cache.ensure()
    again = ViewCache(store, tmp_path)
    try:
        assert again.folder == cache.folder and again.ensure() == []
        last_ids = [info.first_id + info.num_rows - 1 for info in store.shards]
        assert [again.body(i) for i in last_ids] == [slow_body(store, i) for i in last_ids]
    finally:
        again.close()


def test_the_cache_folder_is_keyed_by_the_shard_checksums(store, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "env"))
    folder = ViewCache(store).folder
    assert folder.parent == tmp_path / "env"
    changed = [store.shards[0].model_copy(update={"sha256": "0" * 64}), *store.shards[1:]]
    assert cache_folder(store.shards) == folder and cache_folder(changed) != folder
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert ViewCache(store).folder.parent == tmp_path / "xdg" / "contextcorruption" / "views"


def test_a_server_prunes_other_builds_once_its_views_are_ready(store, cache, tmp_path):
    olds = [old_cache(tmp_path, f"{n:024x}", 1_000_000 + n) for n in range(4)]
    cache.start().join(timeout=120)
    assert cache.ready.is_set()
    assert sorted(tmp_path.iterdir()) == sorted([cache.folder, olds[2], olds[3]])


def _truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size - 7)


def _flip_frame_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0x40
    path.write_bytes(bytes(data))


def _scramble_offsets(path: Path) -> None:
    data = bytearray(path.read_bytes())
    rows = FOOTER.unpack(data[-FOOTER.size :])[1]
    start = len(data) - FOOTER.size - 8 * (rows + 1)
    data[start + 8 : start + 16] = (10**12).to_bytes(8, "little")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "damage",
    [_truncate, _flip_frame_byte, _scramble_offsets, lambda path: path.write_bytes(b"")],
    ids=["truncated", "byte flipped", "offsets", "empty"],
)
def test_a_damaged_file_is_detected_and_rebuilt(store, cache, tmp_path, damage):
    cache.ensure()
    victim = files(cache.folder, "*.views")[1]
    damage(victim)
    with pytest.raises(ViewCacheError, match=victim.name):
        ShardViews(victim, store.shards[1].num_rows)
    again = ViewCache(store, tmp_path)
    try:
        assert again.ensure() == [1]
        info = store.shards[1]
        ids = range(info.first_id, info.first_id + info.num_rows)
        assert [again.body(i) for i in ids] == [slow_body(store, i) for i in ids]
    finally:
        again.close()


def test_a_valid_file_with_other_bodies_is_rebuilt(store, cache):
    cache.folder.mkdir(parents=True)
    target = cache.folder / f"00000-{Path(store.shards[0].path).stem}.views"
    with open(target, "wb") as out:
        write_views((b"{}" for _ in range(store.shards[0].num_rows)), out)
    assert cache.ensure() == list(range(len(store.shards)))
    assert cache.body(0) == slow_body(store, 0)


def test_a_killed_build_is_not_served_and_its_leftovers_are_removed(store, cache, tmp_path):
    cache.ensure()
    final = files(cache.folder, "*.views")[2]
    left = final.with_name(f".{final.name}.999999.1.tmp")
    final.rename(left)  # a whole file that was never renamed: its builder died first
    (final.with_name(f".{final.name}.999998.1.tmp")).write_bytes(b"half a file")
    again = ViewCache(store, tmp_path)
    try:
        first = store.shards[2].first_id
        assert again.body(first) is None
        assert again.ensure() == [2]
        assert again.body(first) == slow_body(store, first)
        assert final.is_file() and not files(cache.folder, ".*.tmp")
    finally:
        again.close()


def _build_in_process(root: Path, base: Path, barrier, results) -> None:
    cache = ViewCache(EpisodeStore(root, preload_keys=False), base)
    barrier.wait(timeout=120)
    try:
        results.put(cache.ensure())
    finally:
        cache.close()


def _assert_built_once(store: EpisodeStore, base: Path, built: list[list[int]]) -> None:
    """Each shard built by exactly one builder, and the result a complete cache that a new server only opens."""
    assert sorted(i for shards in built for i in shards) == list(range(len(store.shards)))
    check = ViewCache(store, base)
    try:
        assert check.ensure() == [] and not files(check.folder, ".*.tmp")
        assert all(check.body(i) == slow_body(store, i) for i in range(0, store.num_episodes, 7))
    finally:
        check.close()


def test_two_builder_processes_build_each_shard_once(store, dataset_dir, tmp_path):
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(2), context.Queue()
    procs = [context.Process(target=_build_in_process, args=(dataset_dir, tmp_path, barrier, results)) for _ in "ab"]
    for proc in procs:
        proc.start()
    built = [results.get(timeout=300) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    _assert_built_once(store, tmp_path, built)


def test_two_builder_threads_build_each_shard_once(store, tmp_path):
    caches = [ViewCache(store, tmp_path) for _ in "ab"]
    built: list[list[int]] = []
    threads = [threading.Thread(target=lambda c=c: built.append(c.ensure())) for c in caches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert all(c.ready.is_set() for c in caches)
    for cache in caches:
        cache.close()
    _assert_built_once(store, tmp_path, built)


def test_a_cache_closed_before_it_starts_builds_nothing(store, cache):
    cache.close()
    cache.start().join(timeout=60)
    assert not cache.ready.is_set()
    assert not files(cache.folder, "*.views") and not files(cache.folder, ".*.tmp")


def test_closing_stops_a_build_in_progress_without_leaving_files(store, cache, monkeypatch):
    """Shutdown while the first shard's views are half read: the build stops at its next row group."""
    writing = threading.Event()
    shard_bodies = views.shard_bodies

    def held_after_one(path, stop):
        for count, body in enumerate(shard_bodies(path, stop)):
            if count == 1:
                writing.set()
                assert stop.wait(60)  # until the close: the rest of the row group, then _Stopped
            yield body

    monkeypatch.setattr(views, "shard_bodies", held_after_one)
    thread = cache.start()
    assert writing.wait(60)
    assert len(files(cache.folder, ".*.tmp")) == 1
    cache.close()
    assert not thread.is_alive() and not cache.ready.is_set()
    assert not files(cache.folder, "*.views") and not files(cache.folder, ".*.tmp")


def test_an_unusable_cache_folder_leaves_the_store_path(store, tmp_path, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    cache = ViewCache(store, blocker)
    cache.start().join(timeout=60)
    assert not cache.ready.is_set() and cache.body(3) is None
    assert "agent views not cached" in caplog.text


def test_a_shard_too_small_for_a_dictionary_round_trips(tmp_path):
    bodies = [b'{"episode_id":1}', b'{"episode_id":2,"x":"\\u00e9"}', b"{}"]
    path = tmp_path / "tiny.views"
    out = io.BytesIO()
    assert write_views(bodies, out) == 3
    assert FOOTER.unpack(out.getvalue()[-FOOTER.size :])[2] == 0  # no dictionary: frames compressed alone
    path.write_bytes(out.getvalue())
    views = ShardViews(path, 3)
    try:
        assert [views.get(i) for i in range(3)] == bodies
    finally:
        views.close()
    with pytest.raises(ViewCacheError, match="holding 3 views"):
        ShardViews(path, 4)


def _open_views(pid: int) -> set[str]:
    names = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            names.add(os.readlink(fd))
        except OSError:
            continue
    return {Path(name).name for name in names if name.endswith(".views")}


def _workers(pid: int) -> list[int]:
    """uvicorn's worker processes under its supervisor `pid` (not multiprocessing's resource tracker)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(c) for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]


def test_the_real_server_serves_episodes_from_the_cache_with_the_same_bytes(store, dataset_dir, tmp_path, monkeypatch):
    """`python -m reward_api --workers 2`: both workers serve every shard from one cache, with the store's bytes."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    folder = ViewCache(store).folder
    with local_server(dataset_dir, extra_args=("--workers", "2")) as served:
        deadline = time.monotonic() + 120
        while len(pids := _workers(served.pid)) < 2 or any(len(_open_views(p)) < len(store.shards) for p in pids):
            assert time.monotonic() < deadline, "the workers did not open their views files"
            time.sleep(0.1)
        names = {path.name for path in files(folder, "*.views")}
        assert len(names) == len(store.shards) and all(_open_views(p) == names for p in pids)
        assert not files(folder, ".*.tmp")
        edges = [i for info in store.shards for i in (info.first_id, info.first_id + info.num_rows - 1)]
        with httpx.Client(base_url=served.url, timeout=30) as client:
            for episode_id in sorted({*range(0, store.num_episodes, 5), *edges}):
                reply = client.get(f"/episodes/{episode_id}")
                assert reply.status_code == 200 and reply.headers["content-type"] == "application/json"
                assert reply.content == slow_body(store, episode_id), episode_id
            missing = client.get(f"/episodes/{store.num_episodes}")
            assert missing.status_code == 404 and "no episode" in missing.json()["detail"]

"""Once the views cache is ready, a game's views come from it: /reset and /step read no row group.

Row-group reads on random ids were where a loaded server's RSS kept growing (benchmarks/soak.py): their
decode buffers, freed in whichever pool thread had read them, stayed with the allocator.
"""

from __future__ import annotations

import httpx

from reward_api.env import Backend
from reward_api.server import build_app
from reward_api.store import EpisodeStore
from reward_api.tokens import TokenSigner
from reward_api.views import CACHE_ENV, ViewCache
from tests.reward_api.conftest import SECRET, serve


def middle_ids(store: EpisodeStore) -> list[int]:
    """Train ids outside each shard's first and last row group (those the views check reads)."""
    rows = store.manifest.row_group_rows
    return [
        info.first_id + offset
        for info in store.shards
        if info.split == "train"
        for offset in range(rows, info.num_rows - rows, 7)
    ]


def test_store_views_from_the_cache_equal_the_row_groups_and_read_none(dataset_dir, tmp_path):
    plain = EpisodeStore(dataset_dir, preload_keys=False)
    store = EpisodeStore(dataset_dir, preload_keys=False)
    cache = ViewCache(store, tmp_path)
    cache.ensure()
    store.view_bodies = cache.body
    groups = set(store._groups.items)
    ids = middle_ids(store)
    assert ids
    for episode_id in ids:
        assert store.view(episode_id) == plain.view(episode_id), episode_id
    assert set(store._groups.items) == groups
    cache.close()
    assert store.view(ids[-1] + 1) == plain.view(ids[-1] + 1)  # a closed cache: read from the row group again


def test_the_server_plays_games_from_its_views_cache(dataset_dir, rows, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    store = EpisodeStore(dataset_dir)
    app = build_app(Backend(store, TokenSigner(SECRET, store.manifest.params_hash)))
    server, thread, url = serve(app)
    try:
        assert app.state.views.ready.wait(60) and store.key_index.ready.wait(60)
        with httpx.Client(base_url=url, timeout=30) as client:
            assert client.get("/tasks").status_code == 200  # its thresholds thread reads validation row groups
            groups = set(store._groups.items)
            ids = middle_ids(store)[::5]
            assert ids
            for episode_id in ids:
                reset = client.post("/reset", json={"episode_id": episode_id})
                assert reset.status_code == 200, reset.text
                token = reset.json()["observation"]["state_token"]
                action = {"action_type": "read_doc", "doc_id": 1, "state_token": token}
                step = client.post("/step", json={"action": action})
                assert step.status_code == 200, step.text
                documents = step.json()["observation"]["documents"]
                expected = rows[episode_id]["documents"]
                assert [(d["doc_id"], d["title"], d["content"]) for d in documents] == [
                    (d["doc_id"], d["title"], d["content"]) for d in expected
                ]
        assert set(store._groups.items) == groups
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_before_the_cache_is_ready_views_come_from_the_row_groups(dataset_dir, tmp_path):
    store = EpisodeStore(dataset_dir, preload_keys=False)
    cache = ViewCache(store, tmp_path)
    store.view_bodies = cache.body
    assert not cache.ready.is_set()
    plain = EpisodeStore(dataset_dir, preload_keys=False)
    assert store.view(store.num_episodes - 1) == plain.view(store.num_episodes - 1)
    assert store._groups.items

"""Episode store: O(1) location, agent views without hidden columns, keys, start-up refusals, Hub download."""

from __future__ import annotations

import gc
import json
import logging
import random
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.schema import EPISODE_SCHEMA, HIDDEN_COLUMNS, REWARD_VERSION, TASKS, VISIBLE_COLUMNS, VISIBLE_SCHEMA
from reward_api.env import seeded_episode
from reward_api.shards import open_shard, read_manifest
from reward_api.source import dataset_folder
from reward_api.store import EpisodeNotFound, EpisodeStore, StoreError
from tests.reward_api.conftest import truth_key


def test_location_is_arithmetic_on_the_manifest(backend):
    store = backend.store
    rg = store.manifest.row_group_rows
    for shard_index, shard in enumerate(store.shards):
        for offset in {0, rg - 1, rg, shard.num_rows - 1} & set(range(shard.num_rows)):
            loc = store.locate(shard.first_id + offset)
            assert (loc.shard, loc.group, loc.offset) == (shard_index, offset // rg, offset % rg)


@pytest.mark.parametrize("bad", [-1, 10**9])
def test_unknown_ids_name_the_valid_ranges(backend, bad):
    with pytest.raises(EpisodeNotFound, match=r"no episode .*train 0\.\."):
        backend.store.view(bad)


def test_views_are_the_visible_columns_of_the_row(backend, rows):
    rg = backend.store.manifest.row_group_rows
    edges = [s.first_id + offset for s in backend.store.shards for offset in (0, rg - 1, rg, s.num_rows - 1)]
    for episode_id in sorted(set(edges) & set(rows)):
        view = backend.store.view(episode_id)
        assert set(view) == set(VISIBLE_COLUMNS)
        assert view == {name: rows[episode_id][name] for name in VISIBLE_COLUMNS}
        assert not set(HIDDEN_COLUMNS) & set(view)


def test_keys_match_the_hidden_columns(backend, rows):
    ids = [3, 3, 50, 120, 3]
    keys = backend.store.keys(ids)
    assert list(keys) == [3, 50, 120]
    for episode_id, key in keys.items():
        assert key == truth_key(rows[episode_id])


def test_keys_from_row_groups_equal_the_preloaded_ones(served_dir, backend, rows):
    """Before the background preload has a shard, keys come from its row groups: the same keys."""
    cold = EpisodeStore(served_dir, preload_keys=False)
    assert not cold.key_index.ready.is_set()
    sample = sorted(rows)[::37]
    assert cold.keys(sample) == backend.store.keys(sample) == {i: truth_key(rows[i]) for i in sample}
    assert all(backend.store.key_index.row(shard, 0) is not None for shard in range(len(backend.store.shards)))


def test_cache_stays_bounded(backend):
    for episode_id in range(0, 170, 3):
        backend.store.view(episode_id)
    groups = backend.store._groups
    assert 1 <= len(groups.items) and sum(t.nbytes for t in groups.items.values()) <= groups.capacity


def test_task_index_lists_exactly_the_ids_of_a_task(backend, rows):
    for task in TASKS:
        ids = list(backend.store.ids_of("validation", task))
        assert ids == [i for i, r in sorted(rows.items()) if r["split"] == "validation" and r["task"] == task]
    with pytest.raises(EpisodeNotFound, match="unknown split"):
        backend.store.ids_of("dev", None)


def _copy(served_dir, tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(served_dir, root)
    return root


def test_missing_shard_stops_start_up_naming_the_file(served_dir, tmp_path):
    root = _copy(served_dir, tmp_path)
    victim = sorted((root / "data").glob("*.parquet"))[1]
    victim.unlink()
    with pytest.raises(StoreError, match=f"{victim.name}: shard listed in the manifest is missing"):
        EpisodeStore(root)


def test_truncated_shard_stops_start_up_naming_the_file(served_dir, tmp_path):
    root = _copy(served_dir, tmp_path)
    victim = sorted((root / "data").glob("*.parquet"))[2]
    victim.write_bytes(victim.read_bytes()[:-100])
    with pytest.raises(StoreError, match=f"{victim.name}: .*bytes, the manifest says"):
        EpisodeStore(root)


def test_broken_shard_of_the_right_size_stops_start_up(served_dir, tmp_path):
    root = _copy(served_dir, tmp_path)
    victim = sorted((root / "data").glob("*.parquet"))[0]
    data = victim.read_bytes()
    victim.write_bytes(data[:-8] + b"\0" * 8)
    with pytest.raises(StoreError, match=f"{victim.name}: not a readable Parquet file"):
        EpisodeStore(root)


def test_a_folder_it_may_not_search_stops_start_up_in_one_line(served_dir, tmp_path, monkeypatch):
    """Python 3.11's is_dir and is_file raise for a folder on the path that may not be searched: a traceback. The
    tests run as root, so the refusal is simulated."""
    root = _copy(served_dir, tmp_path)
    shard = root / json.loads((root / "manifest.json").read_text())["shards"][0]["path"]
    checked = Path.is_file

    def refuse(self):
        if self == shard or self.name == "episodes":
            raise PermissionError(13, "Permission denied")
        return checked(self)

    monkeypatch.setattr(Path, "is_file", refuse)
    with pytest.raises(StoreError, match=f"^{re.escape(str(shard))}: cannot be read \\(Permission denied\\)$"):
        EpisodeStore(root)
    monkeypatch.setattr(Path, "is_dir", refuse)
    with pytest.raises(StoreError, match=r"^elsewhere/episodes: cannot be read \(Permission denied\)$"):
        dataset_folder("elsewhere/episodes")


def test_a_retyped_column_stops_start_up_naming_it(served_dir, tmp_path):
    """Same names, another type: the refusal says which column and how, not only the names."""
    root = _copy(served_dir, tmp_path)
    manifest = json.loads((root / "manifest.json").read_text())
    shard = manifest["shards"][0]
    path = root / shard["path"]
    table = pq.read_table(path)
    at = table.schema.get_field_index("max_budget")
    table = table.set_column(
        at, pa.field("max_budget", pa.int16(), nullable=False), table["max_budget"].cast(pa.int16())
    )
    pq.write_table(table, path, row_group_size=manifest["row_group_rows"])
    shard["bytes"] = path.stat().st_size
    (root / "manifest.json").write_text(json.dumps(manifest))
    expected = "columns differ from the schema: max_budget: int16 not null (expected int8 not null)"
    with pytest.raises(StoreError, match=f"{shard['path']}: {re.escape(expected)}"):
        EpisodeStore(root)


def test_a_split_without_episodes_is_named_so(served_dir, tmp_path):
    """A manifest may list a split of no episodes: its range read "test 164..163", a seeded reset "task None"."""
    root = _copy(served_dir, tmp_path)
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["shards"] = [s for s in manifest["shards"] if s["split"] != "test"]
    manifest["splits"]["test"]["num_rows"] = 0
    (root / "manifest.json").write_text(json.dumps(manifest))
    store = EpisodeStore(root, preload_keys=False)
    with pytest.raises(EpisodeNotFound, match=r"; ids are test none, train 0\.\.\d+, validation \d+\.\.\d+$"):
        store.view(10**9)
    with pytest.raises(EpisodeNotFound, match=r"^split 'test' has no episodes$"):
        seeded_episode(store, 1, "test", None)
    with pytest.raises(EpisodeNotFound, match=r"^split 'test' has no episodes of task 'hard'$"):
        seeded_episode(store, 1, "test", "hard")


def test_manifest_that_disagrees_with_a_footer_is_refused(served_dir, tmp_path):
    root = _copy(served_dir, tmp_path)
    manifest = json.loads((root / "manifest.json").read_text())
    last = manifest["shards"][-1]
    last["num_rows"] += 1  # the id ranges stay tiled: only the footer disagrees
    manifest["splits"][last["split"]]["num_rows"] += 1
    (root / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(StoreError, match=f"{last['path']}: .*rows, manifest says"):
        EpisodeStore(root)


def test_missing_or_invalid_manifest_is_refused(tmp_path):
    with pytest.raises(StoreError, match="manifest.json: missing"):
        EpisodeStore(tmp_path)
    (tmp_path / "manifest.json").write_text("{}")
    with pytest.raises(StoreError, match="manifest.json: not a valid manifest"):
        EpisodeStore(tmp_path)


def _edit_manifest(served_dir, tmp_path, edit) -> tuple:
    root = _copy(served_dir, tmp_path)
    manifest = json.loads((root / "manifest.json").read_text())
    edit(manifest)
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root, manifest


def _swap_first_ids(manifest: dict) -> None:
    first, second = manifest["shards"][:2]
    first["first_id"], second["first_id"] = second["first_id"], first["first_id"]


def _swap_files(manifest: dict) -> None:
    """The validation and test entries point at each other's file: same rows and row groups, ranges still tiled."""
    validation, test = (next(s for s in manifest["shards"] if s["split"] == name) for name in ("validation", "test"))
    assert (validation["num_rows"], validation["num_row_groups"]) == (test["num_rows"], test["num_row_groups"])
    for field in ("path", "bytes", "sha256"):
        validation[field], test[field] = test[field], validation[field]


@pytest.mark.parametrize(
    ("edit", "error"),
    [
        (_swap_first_ids, r"manifest.json: data/train-00000-\S+ first_id \d+ leaves ids before it unlisted"),
        (lambda m: m["shards"][-1].update(first_id=m["shards"][-1]["first_id"] - 1), "overlaps the shard before it"),
        (lambda m: m["splits"]["test"].update(num_rows=m["splits"]["test"]["num_rows"] - 1), "split test: its shards"),
        (lambda m: m["shards"][-1].update(split="dev"), "split 'dev' is not one of"),
        (lambda m: m.update(shards=[]), "manifest.json: lists no shards"),
    ],
)
def test_a_manifest_whose_id_ranges_do_not_tile_is_refused(served_dir, tmp_path, edit, error):
    root, _ = _edit_manifest(served_dir, tmp_path, edit)
    with pytest.raises(StoreError, match=error):
        EpisodeStore(root, preload_keys=False)


def test_a_shard_whose_footer_holds_other_ids_than_the_manifest_says_is_refused(served_dir, tmp_path):
    """Ranges that tile but name the wrong files: only the footers' episode_id statistics tell."""
    root, manifest = _edit_manifest(served_dir, tmp_path, _swap_files)
    validation = next(s for s in manifest["shards"] if s["split"] == "validation")  # now the test split's file
    test_ids = manifest["splits"]["test"]["first_id"]
    with pytest.raises(StoreError, match=f"{validation['path']}: row group 0 holds episode ids {test_ids}\\.\\."):
        EpisodeStore(root, preload_keys=False)


@pytest.mark.parametrize(
    "other", [{"schema_version": 999}, {"reward_version": "v999"}, {"schema_version": 2, "added_by_schema_2": 1}]
)
def test_a_build_for_another_schema_or_reward_is_refused(served_dir, tmp_path, other):
    """Served as is, its columns or its scores would mean something else than this server says; a newer schema's
    manifest is refused by its versions, not by the first field this server does not know."""
    root, manifest = _edit_manifest(served_dir, tmp_path, lambda m: m.update(other))
    versions = f"schema {manifest['schema_version']} / reward {manifest['reward_version']}"
    ours = f"schema 1 / reward {REWARD_VERSION}"
    with pytest.raises(StoreError, match=f"manifest.json: built for {versions}, this code is {ours}"):
        EpisodeStore(root, preload_keys=False)


def test_a_manifest_that_is_a_folder_is_refused(tmp_path):
    (tmp_path / "manifest.json").mkdir()
    with pytest.raises(StoreError, match=r"manifest.json: cannot be read \(Is a directory\)"):
        EpisodeStore(tmp_path)


def test_hub_repo_id_and_revision_are_downloaded_and_served(served_dir, moved_hub, tmp_path, rows):
    published = (served_dir / "manifest.json").read_bytes()
    folder = dataset_folder("acme/cc", "v1", endpoint=moved_hub.endpoint, cache_dir=tmp_path / "cache")
    with pytest.raises(StoreError, match="acme/missing@v1: Hub download failed"):
        dataset_folder("acme/missing", "v1", endpoint=moved_hub.endpoint, cache_dir=tmp_path / "cache")
    assert (folder / "manifest.json").read_bytes() == published, "v1's files, not main's"
    store = EpisodeStore(folder)
    assert store.manifest.params_hash == json.loads(published)["params_hash"]
    assert store.view(130)["question"] == rows[130]["question"]


def test_a_path_that_is_neither_folder_nor_repo_id_is_refused(tmp_path):
    with pytest.raises(StoreError, match="no such dataset folder"):
        dataset_folder(str(tmp_path / "a" / "b" / "c"))


def test_a_local_folder_is_served_whatever_the_revision(served_dir, caplog):
    """As training does: with --revision, a local folder had been taken for a Hub repo id and refused."""
    with caplog.at_level(logging.WARNING):
        assert dataset_folder(str(served_dir), "v1") == served_dir
    assert f"--revision v1 ignored: {served_dir} is a local folder" in caplog.text


def test_threads_reading_at_once_get_the_right_rows(served_dir, rows):
    """Readers are per thread (sharing the footer) and caches lock only their maps: no mixed-up rows."""
    store = EpisodeStore(served_dir, cache_mb=0.2, preload_keys=False)
    ids = sorted(rows)

    def check(seed: int) -> int:
        picks = random.Random(seed).choices(ids, k=60)
        for episode_id in picks:
            assert store.view(episode_id)["question"] == rows[episode_id]["question"]
            assert store.key(episode_id) == truth_key(rows[episode_id])
        return len(picks)

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert sum(pool.map(check, range(8))) == 480


def test_parsed_footers_are_bounded_and_reopened_on_demand(served_dir, rows, monkeypatch):
    """Only FOOTERS_KEPT files keep a parsed footer (its RSS grows with the row groups); the others re-open."""
    monkeypatch.setattr("reward_api.store.FOOTERS_KEPT", 2)
    store = EpisodeStore(served_dir, cache_mb=0, cache_keys=1, preload_keys=False)
    assert len(store.shards) > 2
    for offset in (0, -1):
        for shard in store.shards:  # round robin: every shard's read evicts a footer
            episode_id = shard.first_id + offset % shard.num_rows
            assert store.view(episode_id) == {name: rows[episode_id][name] for name in VISIBLE_COLUMNS}
            assert store.key(episode_id) == truth_key(rows[episode_id])
            assert len(store._readers.items) <= 2


def test_checking_a_shard_leaves_nothing_for_the_cyclic_collector(served_dir):
    """The footer's `schema` ties it into a reference cycle: every footer the store let go of after start-up stayed
    in memory (~110 MB of the default build's, in the supervisor and each worker) until a collection."""
    manifest = read_manifest(served_dir)
    gc.collect()
    gc.disable()
    try:
        for info in manifest.shards:
            schema = VISIBLE_SCHEMA if info.split in manifest.hidden_splits else EPISODE_SCHEMA
            open_shard(served_dir, info, manifest.row_group_rows, schema)
        assert gc.collect() == 0
    finally:
        gc.enable()

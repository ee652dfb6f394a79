"""Writer: Parquet round trip, byte-identical output, refusals, atomic staging.

Also home of `episode_rows` / `write_folder`, small hand-built datasets that satisfy every invariant of
the README's episode contract, shared with the card and validate tests.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import writer
from pipeline.schema import (
    CORRUPTION_LEVELS,
    EPISODE_SCHEMA,
    MAX_BUDGET,
    NUM_DOCS,
    SPLITS,
    TASKS,
    AnswersManifest,
    Manifest,
    SplitInfo,
)
from pipeline.shards import ShardPlan, plan_shards
from pipeline.writer import (
    MANIFEST_NAME,
    OutputError,
    output_file,
    output_folder,
    staging_all,
    write_hidden_shard,
    write_manifest,
    write_shard,
)

ANSWERS = [
    ("1887", ["1,887"], "year", "synthetic", ["1852", "1901", "1794", "1923"]),
    ("Zoë Brontë-Li", ["Zoe Bronte Li"], "person", "synthetic", ["Ana Ruiz", "Kenji Sato", "Li Wei", "Omar Haddad"]),
    ("東京", ["Tokyo"], "place", "geonames", ["大阪", "Kyoto", "Nagoya", "Sapporo"]),
    ("26", [], "quantity", "elements", ["27", "24", "62", "30"]),
]


def episode_rows(split: str, first_id: int, num_rows: int) -> list[dict]:
    """Valid episodes: task, corrupt docs, kinds and claims all consistent; one fact per episode id."""
    rows = []
    for episode_id in range(first_id, first_id + num_rows):
        answer, aliases, answer_type, source, wrong = ANSWERS[episode_id % len(ANSWERS)]
        k = 1 + episode_id % len(TASKS)
        corrupt = sorted({(episode_id + 3 * r) % NUM_DOCS for r in range(k)})
        kinds, claims, docs = [], [], []
        for doc_id in range(NUM_DOCS):
            rank = corrupt.index(doc_id) if doc_id in corrupt else None
            claim = answer if rank is None else wrong[rank]
            kind = "none" if rank is None else CORRUPTION_LEVELS[rank]
            kinds.append("entity" if kind == "number" and not answer.isdigit() else kind)  # the real fallback
            claims.append(claim)
            content = f"Source {doc_id} on fact {episode_id}: the answer is {claim}."
            docs.append({"doc_id": doc_id, "title": f"Report {doc_id}", "content": content})
        rows.append(
            {
                "episode_id": episode_id,
                "split": split,
                "task": TASKS[k - 1],
                "question": f"Question {episode_id}: what is the {answer_type}?",
                "documents": docs,
                "max_budget": MAX_BUDGET,
                "fact_id": f"{split}:{episode_id}",
                "source": source,
                "answer_type": answer_type,
                "answer": answer,
                "answer_aliases": aliases,
                "corrupt_ids": corrupt,
                "doc_corruption": kinds,
                "doc_claims": claims,
            }
        )
    return rows


def episode_table(plan: ShardPlan) -> pa.Table:
    return pa.Table.from_pylist(episode_rows(plan.split, plan.first_id, plan.num_rows), schema=EPISODE_SCHEMA)


def write_folder(root: Path, counts: dict[str, int], shard_rows: int = 16, row_group_rows: int = 4) -> Manifest:
    """A complete dataset folder (shards + manifest.json) written by the real writer."""
    plans = plan_shards(counts, shard_rows, row_group_rows)
    shards = [write_shard(episode_table(plan), root, plan, row_group_rows) for plan in plans]
    splits = {
        split: SplitInfo(first_id=min(p.first_id for p in plans if p.split == split), num_rows=counts[split])
        for split in SPLITS
    }
    manifest = Manifest(seed=7, params_hash="0" * 64, row_group_rows=row_group_rows, splits=splits, shards=shards)
    write_manifest(root, manifest)
    return manifest


def test_write_shard_round_trip(tmp_path):
    plan = ShardPlan("validation", 0, 1, 100, 10)
    table = episode_table(plan)
    info = write_shard(table, tmp_path, plan, row_group_rows=4)
    path = tmp_path / plan.path
    assert info.path == plan.path and info.bytes == path.stat().st_size and info.num_row_groups == 3
    assert pq.read_table(path).equals(table)
    meta = pq.ParquetFile(path).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [4, 4, 2]
    assert meta.row_group(0).column(0).compression == "ZSTD"
    assert meta.row_group(1).column(0).statistics.min == 104
    assert meta.row_group(0).column(0).has_offset_index and meta.row_group(0).column(0).has_column_index
    assert meta.schema.to_arrow_schema().metadata[b"schema_version"] == b"1"
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_write_shard_is_byte_identical(tmp_path):
    plan = ShardPlan("train", 0, 1, 0, 9)
    first = write_shard(episode_table(plan), tmp_path / "a", plan, row_group_rows=2)
    second = write_shard(episode_table(plan), tmp_path / "b", plan, row_group_rows=2)
    assert first == second
    data = (tmp_path / "a" / plan.path).read_bytes()
    assert data == (tmp_path / "b" / plan.path).read_bytes()
    assert str(tmp_path).encode() not in data


def test_a_shard_written_in_chunks_is_the_shard_written_whole(tmp_path):
    plan = ShardPlan("train", 0, 1, 0, 9)
    table = episode_table(plan)
    whole = write_shard(table, tmp_path / "whole", plan, row_group_rows=2)
    chunks = (table.slice(start, length) for start, length in [(0, 4), (4, 2), (6, 3)])
    chunked = write_shard(chunks, tmp_path / "chunks", plan, row_group_rows=2)
    assert chunked == whole
    assert (tmp_path / "chunks" / plan.path).read_bytes() == (tmp_path / "whole" / plan.path).read_bytes()


def test_a_hidden_shard_written_in_chunks_is_the_shard_written_whole(tmp_path):
    plan = ShardPlan("test", 0, 1, 0, 9)
    table = episode_table(plan)
    write_hidden_shard(table, tmp_path / "whole", tmp_path / "whole-answers", plan, row_group_rows=2)
    chunks = (table.slice(start, 4) for start in range(0, 9, 4))
    write_hidden_shard(chunks, tmp_path / "chunks", tmp_path / "chunks-answers", plan, row_group_rows=2)
    for folder in ("", "-answers"):
        chunked, whole = tmp_path / f"chunks{folder}" / plan.path, tmp_path / f"whole{folder}" / plan.path
        assert chunked.read_bytes() == whole.read_bytes()


def test_an_interrupt_among_the_chunks_comes_through_and_leaves_no_file(tmp_path):
    plan = ShardPlan("test", 0, 1, 0, 8)
    table = episode_table(plan)

    def chunks():
        yield table.slice(0, 4)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_hidden_shard(chunks(), tmp_path / "episodes", tmp_path / "answers", plan, row_group_rows=2)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


@pytest.mark.parametrize(
    ("lengths", "message"),
    [
        ([3, 6], "chunks but the last must hold whole row groups of 2; one ended at row 3"),
        ([4, 4], "expected 9 rows, got 8"),
        ([4, 4, 2], "expected 9 rows, got at least 10"),
        ([10], "expected 9 rows, got 10"),
        ([4, 0, 5], "a table of no rows (from row 4 on)"),
    ],
)
def test_chunks_that_break_a_row_group_or_the_count_leave_no_file(tmp_path, lengths, message):
    plan = ShardPlan("train", 0, 1, 0, 9)
    table = episode_table(ShardPlan("train", 0, 1, 0, sum(lengths)))
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    with pytest.raises(ValueError, match=re.escape(message)):
        write_shard((table.slice(s, n) for s, n in zip(starts, lengths, strict=True)), tmp_path, plan, 2)
    assert not any((tmp_path / "data").iterdir())


def test_write_shard_refuses_schema_mismatch(tmp_path):
    plan = ShardPlan("train", 0, 1, 0, 3)
    table = episode_table(plan)
    wrong = table.set_column(5, pa.field("max_budget", pa.int64(), nullable=False), pa.array([12] * 3, pa.int64()))
    with pytest.raises(ValueError, match=re.escape("max_budget: int64 not null (expected int8 not null)")):
        write_shard(wrong, tmp_path, plan, row_group_rows=2)
    with pytest.raises(ValueError, match=re.escape(f"column order {list(reversed(table.column_names))} (expected")):
        write_shard(table.select(list(reversed(table.column_names))), tmp_path, plan, row_group_rows=2)
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").iterdir())


@pytest.mark.parametrize(
    ("table_plan", "message"),
    [
        (ShardPlan("train", 0, 1, 1, 4), "episode_id must be 1..4 in order; row 0 holds 0"),
        (ShardPlan("train", 0, 1, 0, 5), "expected 5 rows, got 4"),
        (ShardPlan("test", 0, 1, 0, 4), "every row must have split 'test'"),
    ],
)
def test_write_shard_refuses_wrong_rows(tmp_path, table_plan, message):
    table = episode_table(ShardPlan("train", 0, 1, 0, 4))
    with pytest.raises(ValueError, match=message):
        write_shard(table, tmp_path, table_plan, row_group_rows=2)


def test_write_shard_refuses_unsorted_ids(tmp_path):
    plan = ShardPlan("train", 0, 1, 0, 4)
    table = episode_table(plan).take([0, 2, 1, 3])
    with pytest.raises(ValueError, match="row 1 holds 2, expected 1"):
        write_shard(table, tmp_path, plan, row_group_rows=2)


def test_write_manifest_is_canonical(tmp_path):
    manifest = write_folder(tmp_path, {"train": 5, "validation": 2, "test": 2}, shard_rows=4)
    text = (tmp_path / MANIFEST_NAME).read_text()
    data = json.loads(text)
    assert text == json.dumps(data, sort_keys=True, indent=2) + "\n"
    assert Manifest.model_validate(data) == manifest
    assert [s["path"] for s in data["shards"]][:2] == [
        "data/train-00000-of-00002.parquet",
        "data/train-00001-of-00002.parquet",
    ]


# A previous build's manifest, as staging recognises one (the answers folder's: the smallest valid manifest).
OLD_MANIFEST = AnswersManifest(params_hash="0" * 64, row_group_rows=1, shards=[]).model_dump_json()


def _old_build(out: Path, manifest: str = OLD_MANIFEST) -> None:
    out.mkdir()
    (out / "old.txt").write_text("old")
    (out / MANIFEST_NAME).write_text(manifest)


# A build by an earlier version of this code is a previous build too, though this code would not serve it.
@pytest.mark.parametrize("manifest", [OLD_MANIFEST, OLD_MANIFEST.replace('"schema_version":1', '"schema_version":0')])
def test_staging_replaces_output_on_success(tmp_path, manifest):
    assert '"schema_version":1' in OLD_MANIFEST
    out = tmp_path / "episodes"
    _old_build(out, manifest)
    with staging_all([(out, AnswersManifest)]) as (stage,):
        assert stage.parent == tmp_path and stage.name.startswith(".")
        (stage / "new.txt").write_text("new")
        assert (out / "old.txt").exists()
    assert [p.name for p in out.iterdir()] == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episodes"]


def test_staging_replaces_only_a_previous_build_or_an_empty_folder(tmp_path):
    """`--out data` replaced data/ whole, the facts and anything else in it: a folder with files and no manifest is
    no previous build."""
    out = tmp_path / "data"
    (out / "facts").mkdir(parents=True)
    (out / "notes.txt").write_text("mine")
    with (
        pytest.raises(OutputError, match="holds files but no manifest.json of a previous build"),
        staging_all([(out, Manifest)]),
    ):
        raise AssertionError("no staging folder is made")
    assert sorted(p.name for p in out.iterdir()) == ["facts", "notes.txt"]
    for manifest in ('{"name": "app"}', OLD_MANIFEST):  # anything's manifest.json; an answers folder's, as --out
        (out / MANIFEST_NAME).write_text(manifest)
        with (
            pytest.raises(OutputError, match="no manifest.json of a previous build of this kind"),
            staging_all([(out, Manifest)]),
        ):
            raise AssertionError("no staging folder is made")
    (out / MANIFEST_NAME).unlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
    empty = tmp_path / "empty"
    empty.mkdir()
    with staging_all([(empty, Manifest)]) as (stage,):
        (stage / "new.txt").write_text("new")
    assert [p.name for p in empty.iterdir()] == ["new.txt"]


def test_staging_leaves_nothing_on_error(tmp_path):
    out = tmp_path / "episodes"
    with pytest.raises(RuntimeError, match="killed"), staging_all([(out, Manifest)]) as (stage,):
        (stage / "half.parquet").write_bytes(b"x")
        raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []


def test_staging_removes_stale_temp_folders(tmp_path):
    out = tmp_path / "episodes"
    _old_build(out)
    for stale in (".episodes.partial", ".episodes.old"):  # an old folder beside its complete output is stale too
        (tmp_path / stale).mkdir()
        (tmp_path / stale / "stale.parquet").write_bytes(b"x")
    with staging_all([(out, AnswersManifest)]) as (stage,):
        assert list(stage.iterdir()) == []
        assert sorted(p.name for p in tmp_path.iterdir()) == [".episodes.lock", ".episodes.partial", "episodes"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episodes"]


def test_staging_puts_back_an_old_build_left_without_its_output(tmp_path):
    """A build killed between renaming the old output aside and the new one in: the old one is the output again."""
    _old_build(tmp_path / ".episodes.old")
    with pytest.raises(RuntimeError, match="stopped"), staging_all([(tmp_path / "episodes", AnswersManifest)]):
        assert (tmp_path / "episodes" / "old.txt").read_text() == "old"
        raise RuntimeError("stopped")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episodes"]
    assert (tmp_path / "episodes" / "old.txt").read_text() == "old"


@pytest.mark.parametrize("failing", range(4))
def test_staging_all_puts_every_old_build_back_when_any_rename_fails(tmp_path, monkeypatch, failing):
    """Outputs replaced together (the dataset and its answers): the answers were committed, their old folder deleted,
    before the dataset's rename, and a failure there left the old dataset beside the new build's answers."""
    outputs = [(tmp_path / "episodes", AnswersManifest), (tmp_path / "answers", AnswersManifest)]
    for out, _ in outputs:
        _old_build(out)
    renames = []

    def failing_one(src, dst):
        renames.append(dst)
        if len(renames) == failing + 1:
            raise OSError(16, "Device or resource busy")
        os.rename(src, dst)

    monkeypatch.setattr(writer.os, "replace", failing_one)
    with pytest.raises(OSError, match="busy"), staging_all(outputs) as stages:
        for stage in stages:
            (stage / "new.txt").write_text("new")
    for out, _ in outputs:
        assert sorted(p.name for p in out.iterdir()) == [MANIFEST_NAME, "old.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answers", "episodes"]


def test_staging_keeps_a_symlinked_output_a_link_and_fills_its_target(tmp_path):
    """data/episodes as a link to a bigger disk: the link stays and the build lands where it points, every time (the
    link used to be renamed aside, and the next build failed on it)."""
    disk, out = tmp_path / "disk", tmp_path / "project" / "episodes"
    (disk / "episodes").mkdir(parents=True)
    out.parent.mkdir()
    out.symlink_to(disk / "episodes")
    for build in ("first", "second"):
        with staging_all([(out, AnswersManifest)]) as (stage,):
            (stage / f"{build}.txt").write_text(build)
            (stage / MANIFEST_NAME).write_text(OLD_MANIFEST)
        assert out.is_symlink() and sorted(p.name for p in out.iterdir()) == sorted([f"{build}.txt", MANIFEST_NAME])
    assert sorted(p.name for p in (tmp_path / "project").iterdir()) == ["episodes"]
    assert sorted(p.name for p in disk.iterdir()) == ["episodes"]


def test_staging_refuses_a_file_or_the_working_folder_before_writing(tmp_path, monkeypatch):
    (tmp_path / "afile").write_text("mine")
    monkeypatch.chdir(tmp_path / ".")
    for out, problem in (
        ("afile", "afile: is a file, not a folder"),
        ("afile/sub", f"afile/sub: {tmp_path / 'afile'} is a file"),
        (".", ".: is the working folder or one above it"),
        ("..", "..: is the working folder or one above it"),
    ):
        with pytest.raises(OutputError, match=re.escape(problem)), staging_all([(Path(out), Manifest)]):
            raise AssertionError("no staging folder is made")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"] and (tmp_path / "afile").read_text() == "mine"


def test_a_second_build_of_the_same_folder_is_refused_and_the_first_goes_on(tmp_path):
    """Two builds of one folder removed each other's staging folder and both failed; the second is refused now, by
    name of the first's process, and the lock file goes with the build that held it."""
    out = tmp_path / "episodes"
    with staging_all([(out, AnswersManifest)]) as (first,):
        with pytest.raises(OutputError, match=f"episodes: another build \\(pid {os.getpid()}\\) is writing it"):
            with staging_all([(out, AnswersManifest)]):
                raise AssertionError("no second staging folder")
        assert first.is_dir()
        (first / MANIFEST_NAME).write_text(OLD_MANIFEST)
    assert [p.name for p in out.iterdir()] == [MANIFEST_NAME]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episodes"]
    stale = tmp_path / ".episodes.lock"
    stale.write_text("12345\n")  # a killed build's lock file: its lock went with it
    with staging_all([(out, AnswersManifest)]) as (stage,):
        (stage / MANIFEST_NAME).write_text(OLD_MANIFEST)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episodes"]


def test_an_unwritable_folder_is_refused_before_anything_is_made(tmp_path, monkeypatch):
    """A read-only file system failed only when the stage wrote (after the whole validation, for validate's
    metrics); `os.access` is what tells it, as for a folder without permission (which root, running tests, has)."""
    readonly = tmp_path / "ro"
    readonly.mkdir()
    monkeypatch.setattr(writer.os, "access", lambda path, mode: Path(path) != readonly)
    for check in (
        lambda: output_folder(readonly / "data" / "facts"),
        lambda: output_file(readonly / "metrics.json"),
        lambda: staging_all([(readonly / "episodes", Manifest)]).__enter__(),
    ):
        with pytest.raises(OutputError, match=f"{readonly} is not writable"):
            check()
    assert list(readonly.iterdir()) == []
    writable = readonly / "episodes"  # a writable output in a read-only folder: its staging folder goes beside it
    writable.mkdir()
    monkeypatch.setattr(writer.os, "access", lambda path, mode: Path(path) not in (readonly, readonly.resolve()))
    with (
        pytest.raises(OutputError, match=f"episodes: {readonly} is not writable"),
        staging_all([(writable, Manifest)]),
    ):
        raise AssertionError("no staging folder is made")
    assert list(readonly.iterdir()) == [writable]


def test_staging_puts_the_old_build_back_when_the_last_rename_fails(tmp_path, monkeypatch):
    out = tmp_path / "episodes"
    _old_build(out)
    renames = []

    def failing_second(src, dst):
        renames.append(dst)
        if len(renames) == 2:
            raise OSError(16, "Device or resource busy")
        os.rename(src, dst)

    monkeypatch.setattr(writer.os, "replace", failing_second)
    with pytest.raises(OSError, match="busy"), staging_all([(out, AnswersManifest)]) as (stage,):
        (stage / "new.txt").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST_NAME, "old.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episodes"]


def test_dictionary_encoding_only_on_repeating_columns(tmp_path):
    plan = ShardPlan("train", 0, 1, 0, 8)
    write_shard(episode_table(plan), tmp_path, plan, row_group_rows=8)
    group = pq.ParquetFile(tmp_path / plan.path).metadata.row_group(0)
    columns = [group.column(i) for i in range(group.num_columns)]
    encoded = {column.path_in_schema for column in columns if column.dictionary_page_offset is not None}
    plain = {column.path_in_schema for column in columns if column.dictionary_page_offset is None}
    # low-cardinality columns, whose values repeat within a row group
    assert encoded == {
        "split",
        "task",
        "source",
        "answer_type",
        "max_budget",
        "documents.list.element.doc_id",
        "corrupt_ids.list.element",
        "doc_corruption.list.element",
    }
    # the text and id columns: nearly every value is new, a dictionary only costs
    assert plain == {
        "episode_id",
        "question",
        "documents.list.element.title",
        "documents.list.element.content",
        "fact_id",
        "answer",
        "answer_aliases.list.element",
        "doc_claims.list.element",
    }

"""Hub-layout Parquet output (README: Build the dataset): shard files, the manifest, and atomic staging.

Every shard holds one contiguous id range of one split, sorted by id, in row groups of exactly
`row_group_rows` rows (the last may be shorter), so a reader maps an id to (shard, row group) with
arithmetic on the manifest and reads one row group. Files are written under a temporary name and
renamed, and a whole build is staged in a hidden folder: a killed build leaves nothing that a later
stage would read as output.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.atomic import write_text_atomic
from pipeline.checksums import file_sha256
from pipeline.schema import (
    ANSWERS_SCHEMA,
    EPISODE_SCHEMA,
    MANIFEST_NAME,
    VISIBLE_SCHEMA,
    AnswersManifest,
    Manifest,
    ManifestError,
    ShardInfo,
    load_manifest,
    schema_difference,
)
from pipeline.shards import ShardPlan, row_groups

log = logging.getLogger(__name__)

# Dictionary encoding only where values repeat within a row group: on the text columns it costs time and bytes
# (measured on built episodes: 4.6 % smaller files, 11 % less write CPU, 27 % less read CPU than everywhere).
DICTIONARY_COLUMNS = [
    "split",
    "task",
    "source",
    "answer_type",
    "max_budget",
    "documents.list.element.doc_id",
    "corrupt_ids.list.element",
    "doc_corruption.list.element",
]


def check_table(table: pa.Table, plan: ShardPlan, start: int = 0) -> None:
    """Refuse a table that is not exactly the planned rows from row `start` on, in EPISODE_SCHEMA: nothing is cast
    silently."""
    if difference := schema_difference(table.schema, EPISODE_SCHEMA):
        raise ValueError(f"{plan.path}: table does not match EPISODE_SCHEMA: {difference}")
    if not table.num_rows:
        raise ValueError(f"{plan.path}: a table of no rows (from row {start} on)")
    if start + table.num_rows > plan.num_rows:
        got = f"at least {start + table.num_rows}" if start else table.num_rows
        raise ValueError(f"{plan.path}: expected {plan.num_rows} rows, got {got}")
    ids = pl.from_arrow(table.column("episode_id")).to_numpy()  # not pyarrow's to_numpy: it imports pandas (0.3 s)
    expected_ids = np.arange(plan.first_id + start, plan.first_id + start + table.num_rows, dtype=np.int64)
    if not np.array_equal(ids, expected_ids):
        bad = int(np.flatnonzero(ids != expected_ids)[0])
        raise ValueError(
            f"{plan.path}: episode_id must be {plan.first_id}..{plan.first_id + plan.num_rows - 1} in order; "
            f"row {start + bad} holds {ids[bad]}, expected {expected_ids[bad]}"
        )
    if table.column("split").unique().to_pylist() != [plan.split]:  # not pc.equal, whose scalar imports pandas
        raise ValueError(f"{plan.path}: every row must have split {plan.split!r}")


Rows = pa.Table | Iterable[pa.Table]


def write_shard(rows: Rows, root: Path, plan: ShardPlan, row_group_rows: int) -> ShardInfo:
    """Write one shard (zstd, page index, content-defined chunking); byte-identical for equal input.

    `rows` is the shard's table, or its tables in order (the episodes stage streams chunks: a shard is never whole
    in memory), each but the last whole row groups of `row_group_rows`."""
    _write_files(rows, plan, row_group_rows, [(Path(root) / plan.path, EPISODE_SCHEMA)])
    return shard_info(root, plan, row_group_rows)


def write_hidden_shard(rows: Rows, root: Path, answers_root: Path, plan: ShardPlan, row_group_rows: int) -> ShardInfo:
    """A shard of a hidden split: the visible columns under `root` (what is published), episode_id and the hidden
    columns under `answers_root` at the same path, in the same row groups. Returns the published file's info."""
    files = [(Path(answers_root) / plan.path, ANSWERS_SCHEMA), (Path(root) / plan.path, VISIBLE_SCHEMA)]
    _write_files(rows, plan, row_group_rows, files)
    return shard_info(root, plan, row_group_rows)


def _write_files(rows: Rows, plan: ShardPlan, row_group_rows: int, files: list[tuple[Path, pa.Schema]]) -> None:
    """Each file holds its schema's columns of every row, checked chunk by chunk (`check_table`); they are renamed
    in only once the last chunk is written."""
    if row_group_rows < 1:
        raise ValueError(f"row_group_rows must be >= 1, got {row_group_rows}")
    written = 0
    with ExitStack() as stack:
        writers = [(stack.enter_context(_parquet_file(path, schema)), schema) for path, schema in files]
        for table in [rows] if isinstance(rows, pa.Table) else rows:
            if written % row_group_rows:
                raise ValueError(
                    f"{plan.path}: chunks but the last must hold whole row groups of {row_group_rows}; one ended at "
                    f"row {written}"
                )
            check_table(table, plan, written)
            for writer, schema in writers:
                part = table.select(schema.names).replace_schema_metadata(schema.metadata)
                writer.write_table(part, row_group_size=row_group_rows)
            written += table.num_rows
        if written != plan.num_rows:
            raise ValueError(f"{plan.path}: expected {plan.num_rows} rows, got {written}")


@contextmanager
def _parquet_file(final: Path, schema: pa.Schema) -> Iterator[pq.ParquetWriter]:
    """A writer of one Parquet file of `schema`, written beside `final` and renamed when the block completes.

    Statistics only on episode_id: readers locate rows by id, and min/max of long text columns in every
    footer of small row groups would cost the server hundreds of MB at a million episodes.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.tmp")
    try:
        with pq.ParquetWriter(
            tmp,
            schema,
            compression="zstd",
            use_dictionary=[c for c in DICTIONARY_COLUMNS if c.split(".")[0] in schema.names],
            write_statistics=["episode_id"],
            write_page_index=True,
            use_content_defined_chunking=True,
            sorting_columns=[pq.SortingColumn(0)],
        ) as writer:
            yield writer
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)


def shard_info(root: Path, plan: ShardPlan, row_group_rows: int) -> ShardInfo:
    """The manifest entry of the planned shard as written under `root`: its size and checksum."""
    path = Path(root) / plan.path
    return ShardInfo(
        path=plan.path,
        split=plan.split,
        first_id=plan.first_id,
        num_rows=plan.num_rows,
        num_row_groups=row_groups(plan.num_rows, row_group_rows),
        bytes=path.stat().st_size,
        sha256=file_sha256(path),
    )


def read_manifest(root: Path) -> Manifest:
    """The folder's manifest.json; ManifestError names the file when it is missing, unreadable, not valid, or
    written for another schema or reward version than this code's (whose invariants would not be its own)."""
    return load_manifest(Path(root) / MANIFEST_NAME, Manifest, "build the dataset (dvc repro episodes)")


def write_manifest(root: Path, manifest: Manifest | AnswersManifest) -> None:
    """manifest.json as canonical JSON (sorted keys, indent 2, trailing newline)."""
    text = json.dumps(manifest.model_dump(mode="json"), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    write_text_atomic(Path(root) / MANIFEST_NAME, text)


class OutputError(ValueError):
    """An output path no stage can write: the message names it and says why. Raised before any work."""


def output_folder(path: Path) -> Path:
    """`path` checked as a folder a stage writes into: neither it nor a folder above it may be a file."""
    path = _no_file_above(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{path}: is a file, not a folder; give a folder for the output")
    return path


def output_file(path: Path) -> Path:
    """`path` checked as a file a stage writes (`write_text_atomic`): not a folder, and no file above it."""
    path = _no_file_above(path)
    if path.is_dir():
        raise OutputError(f"{path}: is a folder; give a file name for the output")
    return path


def _no_file_above(path: Path) -> Path:
    """`path`, refused (OutputError) where a file stands above it or the folder it would be made in is not writable
    (a read-only file system found before any work, not after it)."""
    path = Path(path)
    existing = _existing_above(path)
    if not existing.is_dir():
        raise OutputError(f"{path}: {existing} is a file, so no folder can be made there")
    _writable(path, path if path.is_dir() else existing)
    return path


def _existing_above(path: Path) -> Path:
    absolute = Path(path).absolute()
    return next((parent for parent in absolute.parents if parent.exists()), absolute)  # "/" has no parent


def _writable(path: Path, folder: Path) -> None:
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{path}: {folder} is not writable (a read-only file system, or no permission)")


Kind = type[Manifest | AnswersManifest]


@contextmanager
def staging_all(outputs: Sequence[tuple[Path, Kind]], check: Callable[[], None] | None = None) -> Iterator[list[Path]]:
    """Yield a hidden folder beside each output folder; on success they replace the outputs together, on error they
    are removed. `check` (raising OutputError) sees the outputs as the last build left them, locked, before anything
    is staged.

    Together: the dataset's manifest binds its answers folder by checksum, and answers committed (and the old ones
    deleted) before the dataset's rename failed had left the old dataset beside the new build's answers. Every old
    output is renamed aside before any new one is renamed in, and the old ones are deleted only once all are in: at
    every instant each output is absent, the old build or the new one; a failed rename puts every old build back,
    and a build killed among the renames leaves old folders that the next one puts back before it starts. A
    symlinked output stays a link: its target is replaced. The checks (OutputError) come before anything is written:
    an output is no file, nor the working folder or one above it, and a folder with files in it is a previous build
    (its manifest.json is a `kind` manifest): `--out data` would have replaced data/ whole, the facts with it, and
    `--answers data/episodes` the published dataset.
    """
    targets = [_replaceable(Path(out_dir), kind) for out_dir, kind in outputs]
    olds = [target.with_name(f".{target.name}.old") for target in targets]
    partials = [target.with_name(f".{target.name}.partial") for target in targets]
    with ExitStack() as locks:
        for (out_dir, _), target in zip(outputs, targets, strict=True):
            locks.enter_context(_only_build(out_dir, target))
        _recover(targets, olds)
        if check is not None:
            check()
        for partial in partials:
            _remove(partial)
            partial.mkdir(parents=True)
        try:
            yield partials
            _swap(targets, olds, partials)
        except BaseException:
            for partial in partials:
                shutil.rmtree(partial, ignore_errors=True)
            raise
        try:
            for old in olds:
                shutil.rmtree(old, ignore_errors=True)
        except KeyboardInterrupt:  # the new outputs are in: the next build removes what is left of the old ones
            log.warning("interrupted after the new build was in place; the old one is removed by the next build")


def _replaceable(out_dir: Path, kind: Kind) -> Path:
    """The resolved output folder, refused (OutputError) unless a build may replace it whole."""
    target = output_folder(out_dir.resolve())
    if Path.cwd().is_relative_to(target):
        raise OutputError(
            f"{out_dir}: is the working folder or one above it, which the output would replace; give the output a "
            "folder of its own (e.g. data/episodes)"
        )
    _writable(out_dir, _existing_above(target))  # the staging folder is made beside the target
    if target.is_dir() and any(target.iterdir()):
        try:
            load_manifest(target / MANIFEST_NAME, kind, "", any_version=True)
        except ManifestError:
            raise OutputError(
                f"{out_dir}: holds files but no {MANIFEST_NAME} of a previous build of this kind, and the output "
                "would replace it whole; give the output an empty or new folder (e.g. data/episodes)"
            ) from None
    return target


def _swap(targets: list[Path], olds: list[Path], partials: list[Path]) -> None:
    """Rename every output aside (an absent one stands as an empty old folder, so that `_recover` knows it was part of
    the build), then every staged folder in; on a failure, the old outputs go back."""
    moved: list[int] = []
    placed: list[int] = []
    try:
        for i, (target, old) in enumerate(zip(targets, olds, strict=True)):
            if target.exists():
                os.replace(target, old)
            else:
                old.mkdir()
            moved.append(i)
        for i, (partial, target) in enumerate(zip(partials, targets, strict=True)):
            os.replace(partial, target)
            placed.append(i)
    except BaseException:
        for i in placed:
            os.replace(targets[i], partials[i])  # removed with the other staging folders
        for i in moved:
            _put_back(olds[i], targets[i])
        raise


def _recover(targets: list[Path], olds: list[Path]) -> None:
    """Before a build: old outputs left by a build killed among its renames go back, together (an output missing
    beside its old folder means not every new one was in); left beside complete new outputs, they go. The new
    outputs go first, then the old ones come back: killed midway, the next build still finds one missing."""
    pairs = list(zip(targets, olds, strict=True))
    if not any(old.exists() and not target.exists() for target, old in pairs):
        for _, old in pairs:
            _remove(old)
        return
    back = [(target, old) for target, old in pairs if old.is_dir() and not old.is_symlink()]
    for target, _ in back:
        _remove(target)
    for target, old in back:
        _put_back(old, target)


def _put_back(old: Path, target: Path) -> None:
    """The old output in place again; an empty one stood for an output that was absent."""
    if any(old.iterdir()):
        os.replace(old, target)
    else:
        old.rmdir()


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


@contextmanager
def _only_build(out_dir: Path, target: Path) -> Iterator[None]:
    """Hold the output's lock (a file beside it, naming its holder) for the whole build: a second build of the same
    folder (a stage left running by a killed `dvc repro`, and the next one) removed the first's staging folder under
    it, and both failed. The lock goes with its process, however it ends; the file goes when the build ends."""
    target.parent.mkdir(parents=True, exist_ok=True)
    path = target.with_name(f".{target.name}.lock")
    while True:
        lock = open(path, "a+")  # held open for the whole build
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "unknown"
            lock.close()
            raise OutputError(
                f"{out_dir}: another build (pid {holder}) is writing it; wait for it to end or stop it"
            ) from None
        if _same_file(path, lock):
            break
        lock.close()  # its holder removed the file as we opened it: lock the one at the path now
    try:
        lock.truncate(0)
        lock.write(f"{os.getpid()}\n")
        lock.flush()
        yield
    finally:
        if _same_file(path, lock):  # never another build's lock, had this one's been removed by hand
            path.unlink(missing_ok=True)
        lock.close()


def _same_file(path: Path, handle) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino
    except FileNotFoundError:
        return False

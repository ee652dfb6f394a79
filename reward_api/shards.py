"""Start-up checks of what the server reads: the manifest, every shard's footer, and a hidden split's answers.

Each refusal is a StoreError naming the file and what is wrong with it, so a server never starts on a missing,
truncated or foreign file, nor on a manifest whose id ranges would send a request to the wrong row: the shards must
tile the ids without gap or overlap, each split's range exactly, and each file's footer statistics must show the
episode ids the manifest places in it (no row is read for that).

The answers folder of a build (`episodes.hidden_test`) must be the one its manifest binds: its manifest.json hashes
to the episodes manifest's `answers_sha256`, it lists exactly the hidden splits' shards, and each answers file
matches its size and sha256 (the test split only: a few MB).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.checksums import file_sha256
from pipeline.schema import (
    ANSWERS_SCHEMA,
    MANIFEST_NAME,
    AnswersManifest,
    M,
    Manifest,
    ManifestError,
    ShardInfo,
    load_manifest,
    schema_difference,
)


class StoreError(RuntimeError):
    """The dataset folder cannot be served; the message names the file and what is wrong with it."""


def _load(path: Path, model: type[M], hint: str) -> M:
    try:
        return load_manifest(path, model, hint)
    except ManifestError as err:
        raise StoreError(str(err)) from None


def read_manifest(root: Path) -> Manifest:
    path = root / MANIFEST_NAME
    manifest = _load(path, Manifest, f"is {root} a dataset folder built by `dvc repro`?")
    problems = ["lists no shards: nothing to serve"] if not manifest.shards else manifest.range_problems()
    if problems:
        raise StoreError(f"{path}: " + "; ".join(problems))
    return manifest


def open_shard(root: Path, info: ShardInfo, row_group_rows: int, schema: pa.Schema) -> pq.ParquetFile:
    """Open one shard and check its footer against the manifest and `schema`; StoreError names the file."""
    path = root / info.path
    try:
        present = path.is_file()
    except OSError as err:  # a folder on the way that may not be searched (Python 3.11 raises here)
        raise StoreError(f"{path}: cannot be read ({err.strerror or err})") from None
    if not present:
        raise StoreError(f"{path}: shard listed in the manifest is missing")
    if path.stat().st_size != info.bytes:
        raise StoreError(
            f"{path}: {path.stat().st_size} bytes, the manifest says {info.bytes} (truncated or replaced?)"
        )
    try:
        # Not memory-mapped: random reads over a mapped file would pull all of it into the RSS over time.
        handle = pq.ParquetFile(path, memory_map=False)
    except (pa.ArrowException, OSError) as exc:
        raise StoreError(f"{path}: not a readable Parquet file: {exc}") from exc
    meta = handle.metadata
    problems = []
    if difference := schema_difference(handle.schema_arrow, schema):
        problems.append(f"columns differ from the schema: {difference}")
    if meta.num_rows != info.num_rows:
        problems.append(f"{meta.num_rows} rows, manifest says {info.num_rows}")
    if meta.num_row_groups != info.num_row_groups:
        problems.append(f"{meta.num_row_groups} row groups, manifest says {info.num_row_groups}")
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    if any(size != row_group_rows for size in sizes[:-1]) or (sizes and sizes[-1] > row_group_rows):
        problems.append(f"row groups must hold {row_group_rows} rows (the last may hold fewer), got {sizes[:8]}...")
    if not problems:
        problems = id_problems(meta, info, row_group_rows)
    if problems:
        raise StoreError(f"{path}: " + "; ".join(problems))
    return handle


def id_problems(meta: pq.FileMetaData, info: ShardInfo, row_group_rows: int) -> list[str]:
    """Row groups whose episode ids (min and max, from the footer's statistics) are not the ones the manifest
    places there: group g of a shard holds ids first_id + g * row_group_rows onwards. ~5 us a row group.

    The column is found in a row group's metadata: `meta.schema` ties the footer into a reference cycle (pyarrow
    26), which kept every footer the store let go of (~110 MB of the default build's) until a collection that a
    frozen or idle server never runs."""
    if not meta.num_row_groups:
        return []
    first = meta.row_group(0)
    column = [first.column(j).path_in_schema for j in range(first.num_columns)].index("episode_id")
    for group in range(meta.num_row_groups):
        chunk = meta.row_group(group)
        stats = chunk.column(column).statistics
        low = info.first_id + group * row_group_rows
        if stats is None or not stats.has_min_max:
            return [f"row group {group} has no episode_id statistics in its footer (not written by the pipeline?)"]
        if (stats.min, stats.max) != (low, low + chunk.num_rows - 1):
            return [
                f"row group {group} holds episode ids {stats.min}..{stats.max}, the manifest places "
                f"{low}..{low + chunk.num_rows - 1} there (first_id {info.first_id}: wrong shard range?)"
            ]
    return []


def check_answers(root: Path, manifest: Manifest) -> dict[str, ShardInfo]:
    """The answers files of the hidden splits (the answers manifest's entries, by shard path), after checking
    they belong to this build."""
    path = root / MANIFEST_NAME
    answers = _load(path, AnswersManifest, f"is {root} the answers folder of the build (data/answers)?")
    if answers.params_hash != manifest.params_hash or (
        manifest.hidden_splits and file_sha256(path) != manifest.answers_sha256
    ):
        raise StoreError(f"{path}: answers of another build (its params_hash or sha256 differs from the dataset's)")
    hidden = {s.path: s for s in manifest.shards if s.split in manifest.hidden_splits}
    listed = {s.path: s for s in answers.shards}
    unmatched = sorted(hidden.keys() ^ listed.keys())
    if unmatched:
        name = unmatched[0]
        raise StoreError(f"{root / name}: {'missing from' if name in hidden else 'not a shard of'} the hidden splits")
    for name, shard in hidden.items():
        info = listed[name]
        if (info.split, info.first_id, info.num_rows) != (shard.split, shard.first_id, shard.num_rows):
            raise StoreError(f"{root / name}: id range differs from the published shard's")
        open_shard(root, info, answers.row_group_rows, ANSWERS_SCHEMA)
        if file_sha256(root / name) != info.sha256:
            raise StoreError(f"{root / name}: sha256 differs from {path} (replaced or corrupted?)")
    return listed

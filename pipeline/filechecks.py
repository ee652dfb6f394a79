"""File invariants of the validate stage: the manifest's id ranges, the files against their checksums and row
groups, and a hidden split's two halves (published files without a hidden column; answers bound to this build).

Each check returns the problems as sentences that name the file, and the files that passed, which are the only
ones the SQL over the episodes reads (damaged bytes say nothing about the episodes).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.checksums import file_sha256, files_sha256
from pipeline.schema import (
    ANSWERS_SCHEMA,
    EPISODE_SCHEMA,
    HIDDEN_COLUMNS,
    MANIFEST_NAME,
    SPLITS,
    VISIBLE_SCHEMA,
    AnswersManifest,
    Manifest,
    ManifestError,
    ShardInfo,
    load_manifest,
    schema_difference,
)


def manifest_problems(manifest: Manifest) -> list[str]:
    """Splits are SPLITS, in that order by id, and the shards tile their ranges (`Manifest.range_problems`)."""
    if set(manifest.splits) != set(SPLITS):
        return [f"splits {sorted(manifest.splits)} != {sorted(SPLITS)}"]
    order = sorted(SPLITS, key=lambda split: manifest.splits[split].first_id)
    problems = [] if order == list(SPLITS) else [f"splits in id order are {order}, expected {list(SPLITS)}"]
    return problems + manifest.range_problems()


def published_schemas(manifest: Manifest) -> dict[str, pa.Schema]:
    """Each split's published schema: a hidden split's files carry only the visible columns."""
    return {split: VISIBLE_SCHEMA if split in manifest.hidden_splits else EPISODE_SCHEMA for split in SPLITS}


def check_files(
    root: Path, shards: list[ShardInfo], schemas: Mapping[str, pa.Schema]
) -> tuple[list[str], list[ShardInfo]]:
    """Files under `root`/data against the manifest's shards (presence, bytes, sha256) and each split's schema
    (`schemas`): the problems, and the shards that match. Every file there counts, not only *.parquet: the card's
    patterns hand `load_dataset` a stray `train-00000-of-00002.parquet.bak` as a shard. A schema is checked too,
    because a manifest edited to a changed file's checksum would pass a column added, dropped or retyped (DuckDB
    then reads every file as the first file's schema, or fails)."""
    on_disk = {p.relative_to(root).as_posix() for p in (root / "data").rglob("*") if not p.is_dir()}
    problems = [f"{path}: not in the manifest" for path in sorted(on_disk - {s.path for s in shards})]
    sized = [s for s in shards if s.path in on_disk and (root / s.path).stat().st_size == s.bytes]
    hashed = dict(zip((s.path for s in sized), files_sha256(root / s.path for s in sized), strict=True))
    good = []
    for shard in shards:
        if shard.path not in on_disk:
            problems.append(f"{shard.path}: missing")
        elif hashed.get(shard.path) != shard.sha256:
            problems.append(f"{shard.path}: bytes or sha256 differ from the manifest")
        elif shard.split not in schemas:  # the manifest's ranges name it too; the file has no schema to hold to
            problems.append(f"{shard.path}: split {shard.split!r} is not one of {list(schemas)}")
        elif difference := _schema_difference(root / shard.path, schemas[shard.split]):
            problems.append(f"{shard.path}: {difference}")
        else:
            good.append(shard)
    return problems, good


def _schema_difference(path: Path, expected: pa.Schema) -> str:
    """How the file's columns differ from `expected` (names, types, nullability), or "" when they do not."""
    try:
        found = pq.read_schema(path)
    except (pa.ArrowException, OSError):
        return "not a readable Parquet file"
    difference = schema_difference(found, expected)
    return difference and f"columns differ from the schema: {difference}"


def row_group_problems(root: Path, shards: list[ShardInfo], size: int) -> tuple[list[str], list[str]]:
    """Row counts against the manifest, and row groups of exactly `size` rows (the last may be shorter)."""
    groups = {}
    for shard in shards:
        meta = pq.read_metadata(root / shard.path)
        groups[shard.path] = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    rows, row_groups = [], []
    for shard in shards:
        sizes = groups[shard.path]
        if sum(sizes) != shard.num_rows:
            rows.append(f"{shard.path}: {sum(sizes)} rows, manifest says {shard.num_rows}")
        if len(sizes) != shard.num_row_groups or any(n != size for n in sizes[:-1]) or sizes[-1] > size:
            row_groups.append(f"{shard.path}: row groups {sizes}, expected groups of {size}")
    return rows, row_groups


def published_hidden_columns(root: Path, manifest: Manifest) -> list[str]:
    """Published files of a hidden split that carry a hidden column (read from each file's Parquet schema)."""
    problems = []
    for shard in manifest.shards:
        path = root / shard.path
        if shard.split in manifest.hidden_splits and path.is_file():
            try:
                leaked = [name for name in pq.read_schema(path).names if name in HIDDEN_COLUMNS]
            except (pa.ArrowException, OSError):  # truncated or not Parquet: what it holds cannot be told
                problems.append(f"{shard.path}: split {shard.split} is hidden but the file's schema cannot be read")
                continue
            if leaked:
                problems.append(f"{shard.path}: split {shard.split} is hidden but the file has columns {leaked}")
    return problems


def check_answers(answers: Path | None, manifest: Manifest) -> tuple[list[str], list[ShardInfo]]:
    """The answers folder against the episodes manifest: bound to this build (params_hash, and the manifest's
    sha256 recorded as `answers_sha256`), holding exactly the hidden splits' shards, each matching its checksum
    and row groups. The problems (paths under answers/), and the answers shards that passed."""
    if not manifest.hidden_splits:
        return [], []
    if answers is None:
        return [f"answers/{MANIFEST_NAME}: missing; splits {manifest.hidden_splits} are hidden"], []
    path = Path(answers) / MANIFEST_NAME
    try:
        listed = load_manifest(path, AnswersManifest, f"splits {manifest.hidden_splits} are hidden")
    except ManifestError as err:
        return [f"answers/{MANIFEST_NAME}: {str(err).removeprefix(f'{path}: ')}"], []  # relative, as every problem
    if listed.params_hash != manifest.params_hash or file_sha256(path) != manifest.answers_sha256:
        return [f"answers/{MANIFEST_NAME}: another build's (params_hash or sha256 differs from manifest.json)"], []
    published = {_entry(s) for s in manifest.shards if s.split in manifest.hidden_splits}
    kept = {_entry(s) for s in listed.shards}
    problems = [f"{path}: no answers for this shard" for path, *_ in sorted(published - kept)]
    problems += [f"{path}: not a shard of a hidden split" for path, *_ in sorted(kept - published)]
    files, good = check_files(Path(answers), listed.shards, dict.fromkeys(SPLITS, ANSWERS_SCHEMA))
    good = [s for s in good if _entry(s) in published]
    rows, groups = row_group_problems(Path(answers), good, manifest.row_group_rows)
    return [f"answers/{p}" for p in problems + files + rows + groups], good


def _entry(shard: ShardInfo) -> tuple[str, str, int, int]:
    return shard.path, shard.split, shard.first_id, shard.num_rows

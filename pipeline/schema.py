"""The data contract shared by every part: episode and fact schemas, hidden columns, manifest.

Schema version 1 (README: The episode). `reward_api` and `train` import from here; nothing here imports them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

SCHEMA_VERSION = 1
# The reward formula's version (README: Reward v2). Lives here so the manifest can record it without the
# pipeline importing the server; `reward_api.scoring` re-exports it.
REWARD_VERSION = "v2"

NUM_DOCS = 8
OPEN = "open"  # the relation of facts known only by their question (nq_open, FaithEval)
# Sources whose answers are invented here (a hidden split's from its key): a split's wrong claims about them come
# from its own facts alone; every other source's answers are public, shared by all splits' wrong claims.
FICTIONAL_SOURCES = ("synthetic",)
MAX_BUDGET = 12
SPLITS = ("train", "validation", "test")
# Difficulty tiers: task TASKS[k - 1] has k corrupt documents.
TASKS = ("easy", "medium", "hard", "adversarial")
# Corruption kinds by escalation level; a corrupt document of rank r (0-based) gets CORRUPTION_LEVELS[r].
CORRUPTION_LEVELS = ("number", "entity", "inversion", "coherent")
CORRUPTION_KINDS = ("none", *CORRUPTION_LEVELS)
ANSWER_TYPES = ("year", "quantity", "person", "place", "organization", "text")

DOCUMENT_TYPE = pa.struct(
    [
        pa.field("doc_id", pa.int8(), nullable=False),
        pa.field("title", pa.string(), nullable=False),
        pa.field("content", pa.string(), nullable=False),
    ]
)

EPISODE_SCHEMA = pa.schema(
    [
        pa.field("episode_id", pa.int64(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
        pa.field("task", pa.string(), nullable=False),
        pa.field("question", pa.string(), nullable=False),
        pa.field("documents", pa.list_(pa.field("element", DOCUMENT_TYPE, nullable=False)), nullable=False),
        pa.field("max_budget", pa.int8(), nullable=False),
        pa.field("fact_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("answer_type", pa.string(), nullable=False),
        pa.field("answer", pa.string(), nullable=False),
        pa.field("answer_aliases", pa.list_(pa.field("element", pa.string(), nullable=False)), nullable=False),
        pa.field("corrupt_ids", pa.list_(pa.field("element", pa.int8(), nullable=False)), nullable=False),
        pa.field("doc_corruption", pa.list_(pa.field("element", pa.string(), nullable=False)), nullable=False),
        pa.field("doc_claims", pa.list_(pa.field("element", pa.string(), nullable=True)), nullable=False),
    ],
    metadata={"schema_version": str(SCHEMA_VERSION)},
)

VISIBLE_COLUMNS = ("episode_id", "split", "task", "question", "documents", "max_budget")
HIDDEN_COLUMNS = tuple(name for name in EPISODE_SCHEMA.names if name not in VISIBLE_COLUMNS)
# A hidden split (episodes.hidden_test) is published as VISIBLE_SCHEMA; its ground truth, ANSWERS_SCHEMA, goes to a
# separate answers folder that only the reward server reads. Both files of a shard share the id range and row groups.
ANSWER_COLUMNS = ("episode_id", *HIDDEN_COLUMNS)
VISIBLE_SCHEMA = pa.schema([EPISODE_SCHEMA.field(n) for n in VISIBLE_COLUMNS], metadata=EPISODE_SCHEMA.metadata)
ANSWERS_SCHEMA = pa.schema([EPISODE_SCHEMA.field(n) for n in ANSWER_COLUMNS], metadata=EPISODE_SCHEMA.metadata)


def schema_difference(found: pa.Schema, expected: pa.Schema) -> str:
    """How `found`'s columns differ from `expected`'s (names, types, nullability; metadata aside), or "" when they do
    not: every check of a table or a file against its schema words it so."""
    if found.equals(expected, check_metadata=False):
        return ""
    counts = Counter(found.names)
    extra = [name for name in counts if name not in expected.names]
    missing = [name for name in expected.names if name not in counts]
    twice = [name for name, count in counts.items() if count > 1]
    changed = [
        f"{field.name}: {_described(found.field(field.name))} (expected {_described(field)})"
        for field in expected
        if counts[field.name] == 1 and not found.field(field.name).equals(field)
    ]
    parts = [f"extra {extra}"] * bool(extra) + [f"missing {missing}"] * bool(missing) + changed
    parts += [f"more than once {twice}"] * bool(twice)
    return "; ".join(parts) or f"column order {found.names} (expected {expected.names})"


def _described(field: pa.Field) -> str:
    return f"{field.type}{'' if field.nullable else ' not null'}"


def hidden_config(split: str) -> str:
    """The dataset card's config of a hidden split: its files have fewer columns than the default config's."""
    return f"hidden_{split}"


FACT_SCHEMA = pa.schema(
    [
        pa.field("fact_id", pa.string(), nullable=False),
        pa.field("question", pa.string(), nullable=False),
        pa.field("answer", pa.string(), nullable=False),
        pa.field("answer_aliases", pa.list_(pa.field("element", pa.string(), nullable=False)), nullable=False),
        pa.field("answer_type", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("subject", pa.string(), nullable=False),
        pa.field("relation", pa.string(), nullable=False),
        # wrong answers the source itself offers (FaithEval's other options): a corrupt document's first choice
        pa.field("distractors", pa.list_(pa.field("element", pa.string(), nullable=False)), nullable=False),
        pa.field("split", pa.string(), nullable=False),
    ]
)

# facts.parquet metadata: where each Hub source was read, {source: {"path": repo id or folder, "commit": sha or null}}
HUB_SOURCES_KEY = b"hub_sources"


class HubSource(BaseModel):
    """Where one Hub source was read: a repo id or folder (`path`), and the commit (null for a local folder)."""

    model_config = ConfigDict(extra="forbid")
    path: str | None
    commit: str | None


_HUB_SOURCES = TypeAdapter(dict[str, HubSource])


def hub_sources(metadata: Mapping[bytes, bytes] | None) -> dict[str, dict[str, str | None]]:
    """Where a facts table's Hub sources were read (HUB_SOURCES_KEY); {} when it read none. ValidationError when the
    metadata holds something else."""
    read = _HUB_SOURCES.validate_json((metadata or {}).get(HUB_SOURCES_KEY, b"{}"))
    return {name: where.model_dump() for name, where in read.items()}


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ShardInfo(_Frozen):
    """One Parquet file: a contiguous id range of one split."""

    path: str = Field(description="Path relative to the dataset folder, e.g. data/train-00000-of-00004.parquet")
    split: str
    first_id: int = Field(ge=0)
    num_rows: int = Field(ge=1)
    num_row_groups: int = Field(ge=1)
    bytes: int = Field(ge=1)
    sha256: str


class SplitInfo(_Frozen):
    first_id: int = Field(ge=0, description="Ids of a split are first_id .. first_id + num_rows - 1")
    num_rows: int = Field(ge=0)


class Manifest(_Frozen):
    """`manifest.json`: everything a reader needs to find an episode without scanning files."""

    schema_version: int = SCHEMA_VERSION
    reward_version: str = REWARD_VERSION
    seed: int
    params_hash: str = Field(description="sha256 of the canonical JSON of the params that built the dataset")
    row_group_rows: int = Field(ge=1, description="Rows per row group (the last group of a shard may be shorter)")
    splits: dict[str, SplitInfo]
    shards: list[ShardInfo]
    versions: dict[str, str] = Field(default_factory=dict, description="Library versions that wrote the files")
    hidden_splits: list[str] = Field(
        default_factory=list, description="Splits published without hidden columns (their shards are VISIBLE_SCHEMA)"
    )
    answers_sha256: str | None = Field(
        None, description="sha256 of the answers folder's manifest.json: binds the hidden splits' ground truth"
    )
    hub_sources: dict[str, dict[str, str | None]] = Field(
        default_factory=dict,
        description="Facts read from the Hub: the repo (or local folder) and commit of each such source",
    )

    def range_problems(self) -> list[str]:
        """What is wrong with the id ranges, which readers turn into a file and row by arithmetic alone.

        Shards in id order must follow each other without gap or overlap from id 0, and each split's shards must
        cover exactly its range.
        """
        problems, expected = [], 0
        for shard in sorted(self.shards, key=lambda s: s.first_id):
            if shard.split not in self.splits:
                problems.append(f"{shard.path}: split {shard.split!r} is not one of {sorted(self.splits)}")
            if shard.first_id != expected:
                kind = "overlaps the shard before it" if shard.first_id < expected else "leaves ids before it unlisted"
                problems.append(f"{shard.path}: first_id {shard.first_id} {kind} (expected {expected})")
            expected = max(expected, shard.first_id + shard.num_rows)
        for name, split in self.splits.items():
            own = [s for s in self.shards if s.split == name]
            start = min((s.first_id for s in own), default=split.first_id)
            end = max((s.first_id + s.num_rows for s in own), default=split.first_id)
            held = sum(s.num_rows for s in own)  # end - start, unless another split's shard sits among its own
            if (start, end, held) != (split.first_id, split.first_id + split.num_rows, split.num_rows):
                holds = f"{held} ids in {start}..{end - 1}" if own else "no id"
                last = split.first_id + split.num_rows - 1
                problems.append(f"split {name}: its shards hold {holds}, the manifest says {split.first_id}..{last}")
        return problems


class AnswersManifest(_Frozen):
    """`manifest.json` of the answers folder: the ground-truth shards of the hidden splits, for the server only."""

    schema_version: int = SCHEMA_VERSION
    params_hash: str = Field(description="The params_hash of the episodes build these answers belong to")
    row_group_rows: int = Field(ge=1)
    shards: list[ShardInfo] = Field(description="Same paths, id ranges and row groups as the published shards")


MANIFEST_NAME = "manifest.json"  # in every dataset folder and answers folder
CARD_NAME = "README.md"  # the dataset card, in every dataset folder


class ManifestError(ValueError):
    """A manifest.json that is missing, unreadable or not valid, or a folder that does not match its manifest;
    the message names the file and what to do about it."""


M = TypeVar("M", Manifest, AnswersManifest)


def load_manifest(path: Path, model: type[M], hint: str, any_version: bool = False) -> M:
    """`path` parsed as `model`; ManifestError says in one line why it cannot be, then `hint` (how to get one).
    A manifest written for another schema or reward version is refused too: this code's invariants and reward are
    not the ones it was built for. `any_version` takes it (asking only whether a build is there, to replace it)."""
    try:
        raw = path.read_bytes()
        manifest = model.model_validate_json(raw)
        ours = _ours(model)
        problem = None if any_version else _built_for({n: getattr(manifest, f"{n}_version") for n in ours}, ours)
    except FileNotFoundError:
        problem = "missing"
    except OSError as err:  # a folder, unreadable, ...
        problem = f"cannot be read ({err.strerror or err})"
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        more = f" and {err.error_count() - 1} more" if err.error_count() > 1 else ""
        invalid = f"not a valid manifest ({f'{where}: ' if where else ''}{first['msg']}{more})"
        problem = _other_versions(raw, model) or invalid
    if problem is None:
        return manifest
    raise ManifestError(f"{path}: {problem}; {hint}")


_OURS = {"schema": SCHEMA_VERSION, "reward": REWARD_VERSION}


def _other_versions(raw: bytes, model: type[M]) -> str | None:
    """Why a manifest this code cannot parse was refused, when another schema or reward version wrote it (a newer
    one may add fields): its versions, not the first field this code does not know. Versions of the wrong type are
    no other version's: that manifest is not valid."""
    try:
        found = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than json.loads can read
        return None
    if not isinstance(found, dict):
        return None
    ours = _ours(model)
    theirs = {name: found.get(f"{name}_version", value) for name, value in ours.items()}
    if any(type(theirs[name]) is not type(value) for name, value in ours.items()):
        return None
    return _built_for(theirs, ours)


def _ours(model: type[M]) -> dict[str, object]:
    """This code's versions of what `model` records (an answers manifest has no reward version)."""
    return {name: value for name, value in _OURS.items() if f"{name}_version" in model.model_fields}


def _built_for(theirs: dict[str, object], ours: dict[str, object]) -> str | None:
    """ "built for schema 2 / reward v2, this code is schema 1 / reward v2", or None when they are the same."""
    if theirs == ours:
        return None

    def spelled(versions: dict[str, object]) -> str:
        return " / ".join(f"{name} {value}" for name, value in versions.items())

    return f"built for {spelled(theirs)}, this code is {spelled(ours)}"

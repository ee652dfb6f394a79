"""Typed `params.yaml`: each stage reads its own section, and bad params fail before any work.

Errors name the key (`episodes.train: ...`) and the bad value, so a typo in params.yaml is caught
at the start of `dvc repro`, not an hour into it.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import os
import re
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from ruamel.yaml import YAML, YAMLError

from pipeline.problems import dotted, one_line
from pipeline.schema import SPLITS
from pipeline.shards import MAX_SHARD_ROWS, MAX_SHARDS, ShardPlan, plan_shards, row_groups, shard_count

DEFAULT_PARAMS = Path("params.yaml")
SECTIONS = ("seed", "facts", "episodes", "hub", "train", "baselines")  # params.yaml's top-level keys
EXECUTION_KEYS = ("workers", "engine", "ray_address")  # episodes keys left out of the manifest's params_hash
MAX_WORKERS = 1024  # processes: a build never has more shards at once than cores to run them
# git check-ref-format's forbidden characters: control characters, space, DEL and ~^:?*[\
_TAG_FORBIDDEN = re.compile(r"[\x00-\x20~^:?*\[\\\x7f]")
HUB_SOURCES = ("nq_open", "popqa", "faitheval")  # read through `datasets`, at a Hub revision
FACT_SOURCES = ("geonames", "elements", "synthetic", *HUB_SOURCES)
# The most fictional entities that get names: floor(n / 2) of them are companies, and the stage's pools name
# 4096 x 36 of those (pools.POOL_SIZE x synthetic.SECTORS). A number, not an import: every stage reads this module
# and only facts needs it; tests/pipeline/sources/test_synthetic.py checks it against the real pools.
MAX_SYNTHETIC_ENTITIES = 294_913


class ParamsError(ValueError):
    """params.yaml is missing, malformed, or holds a bad value; the message names the key."""


class _Section(BaseModel):
    # strict: YAML gives typed values, so `yes` (a bool) or "8" (a string) where a count belongs is a mistake.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class FactsParams(_Section):
    sources: list[Literal[FACT_SOURCES]] = Field(min_length=1)  # type: ignore[valid-type]
    synthetic_entities: int = Field(
        gt=0, le=MAX_SYNTHETIC_ENTITIES, description="Fictional entities to invent; each yields several facts"
    )
    split_weights: dict[str, float] = Field(description="Share of facts per split, by stable hash of fact_id")
    hub_limit: int = Field(gt=0, description="Rows read from each Hub source (nq_open, popqa, faitheval)")
    hub_revisions: dict[Literal[HUB_SOURCES], str] = Field(  # type: ignore[valid-type]
        default_factory=dict,
        description="Hub revision (commit, tag or branch) each Hub source is read at; unnamed: its default branch. "
        "The commit read is recorded in data/facts/summary.json: name it here to repeat the build",
    )
    hub_paths: dict[Literal[HUB_SOURCES], str] = Field(  # type: ignore[valid-type]
        default_factory=dict,
        description="A local folder (a copy of the dataset's files) or another Hub dataset id each Hub source is read "
        "from instead of its own; a folder takes no revision",
    )

    @field_validator("sources")
    @classmethod
    def _once_each(cls, value: list[str]) -> list[str]:
        if twice := sorted({source for source in value if value.count(source) > 1}):
            raise ValueError(f"names {twice} more than once; each source is read once")
        return value

    @field_validator("hub_revisions", "hub_paths")
    @classmethod
    def _per_hub_source(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        if empty := sorted(name for name, given in value.items() if not given.strip()):
            what = "revision" if info.field_name == "hub_revisions" else "path"
            raise ValueError(f"the {what} of {empty} is empty; leave a source out to read its default")
        if "sources" in info.data and (unread := sorted(set(value) - set(info.data["sources"]))):
            raise ValueError(f"names {unread}, which facts.sources does not read")
        return value

    @field_validator("split_weights")
    @classmethod
    def _weights(cls, value: dict[str, float]) -> dict[str, float]:
        if set(value) != set(SPLITS):
            raise ValueError(f"needs exactly the splits {list(SPLITS)}")
        if not all(math.isfinite(w) and w > 0 for w in value.values()):
            raise ValueError("every weight must be a finite number > 0")
        if abs(sum(value.values()) - 1.0) > 1e-9:
            raise ValueError(f"weights must sum to 1, they sum to {sum(value.values())}")
        return value


def _check_ray_client(address: str, where: str = "") -> None:
    if address.startswith("ray://") and importlib.util.find_spec("grpc") is None:  # what Ray Client imports
        raise ValueError(f"a ray:// address{where} needs the Ray Client: pip install 'ray[client]'")


class EpisodesParams(_Section):
    train: int = Field(gt=0)
    validation: int = Field(gt=0)
    test: int = Field(gt=0)
    workers: int = Field(gt=0, le=MAX_WORKERS, description="Processes (Ray: CPUs) building shards")
    shard_rows: int = Field(gt=0, le=MAX_SHARD_ROWS, description="Maximum rows per Parquet shard")
    row_group_rows: int = Field(gt=0, description="Rows per row group: one id lookup reads one group")
    shard_multiple: int = Field(
        1,
        gt=0,
        description="Each split's shard count is a multiple of this (readers that split the files get whole ones)",
    )
    hidden_test: bool = Field(
        False,
        description="Publish the test split without hidden columns; its ground truth goes to the answers folder",
    )
    engine: Literal["local", "ray"] = Field("local", description="Runs the shards: a local process pool or Ray tasks")
    ray_address: str = Field("", description="Ray cluster to join (e.g. ray://head:10001, auto); empty: start one")

    @field_validator("ray_address")
    @classmethod
    def _address_needs_ray(cls, value: str, info: ValidationInfo) -> str:
        if "engine" not in info.data:  # the engine itself was refused: that error is the one to read
            return value
        if value and info.data.get("engine") != "ray":
            raise ValueError(f"is only used with engine: ray, but engine is {info.data.get('engine')!r}")
        if value != value.strip():
            raise ValueError("must not start or end with spaces")
        _check_ray_client(value)
        return value

    @model_validator(mode="after")
    def _environment_address(self) -> EpisodesParams:
        if self.engine == "ray" and not self.ray_address:  # ray.init joins RAY_ADDRESS then (engines.ray_init_args)
            _check_ray_client(os.environ.get("RAY_ADDRESS", ""), " (RAY_ADDRESS, which engine: ray joins)")
        return self

    @field_validator("engine")
    @classmethod
    def _ray_installed(cls, value: str) -> str:
        if value == "ray" and importlib.util.find_spec("ray") is None:
            raise ValueError("ray is not installed: pip install 'contextcorruption[ray]', or use engine: local")
        return value

    @model_validator(mode="after")
    def _groups_fit(self) -> EpisodesParams:
        if self.shard_rows % self.row_group_rows:
            raise ValueError(
                f"shard_rows ({self.shard_rows}) must be a multiple of row_group_rows ({self.row_group_rows})"
            )
        shards = sum(shard_count(rows, self.shard_rows, self.shard_multiple) for rows in self.counts().values())
        if shards > MAX_SHARDS:  # checked before the plans are made: a typo's extra zeros would make millions
            raise ValueError(self._too_many_shards(shards))
        try:
            self.shard_plans()
        except ValueError as err:
            raise ValueError(f"shard_multiple ({self.shard_multiple}): {err}") from None
        return self

    def _too_many_shards(self, shards: int) -> str:
        """Name the key to change: shard_multiple where its rounding up, not the rows, passes the limit."""
        limit = f"the data/ folder takes at most {MAX_SHARDS:,} (the Hub's advice per folder)"
        least = len(SPLITS) * self.shard_multiple
        if least > MAX_SHARDS:
            return (
                f"shard_multiple ({self.shard_multiple:,}) makes each split at least {self.shard_multiple:,} shards, "
                f"{least:,} in all whatever shard_rows is; {limit}: a shard_multiple of at most "
                f"{self._largest_multiple():,}"
            )
        needed = sum(shard_count(rows, self.shard_rows, 1) for rows in self.counts().values())
        if needed <= MAX_SHARDS:
            return (
                f"shard_multiple ({self.shard_multiple:,}) rounds each split's shards up to a multiple of it: "
                f"{shards:,} in all, where shard_rows ({self.shard_rows:,}) needs {needed:,}; {limit}: a smaller "
                "shard_multiple or more shard_rows"
            )
        return (
            f"the splits make {shards:,} shards of at most shard_rows ({self.shard_rows:,}) rows; {limit}: fewer "
            "episodes or more shard_rows"
        )

    def _largest_multiple(self) -> int:
        """The largest shard_multiple that fits the folder and gives every shard a whole row group."""
        groups = min(row_groups(rows, self.row_group_rows) for rows in self.counts().values())
        return min(MAX_SHARDS // len(SPLITS), groups)

    def shard_plans(self) -> list[ShardPlan]:
        return plan_shards(self.counts(), self.shard_rows, self.row_group_rows, self.shard_multiple)

    def hidden_splits(self) -> list[str]:
        """Splits published without hidden columns."""
        return ["test"] if self.hidden_test else []

    def counts(self) -> dict[str, int]:
        return {split: getattr(self, split) for split in SPLITS}

    def content(self) -> dict:
        """The keys that decide what is built; how it runs (workers, engine, ray_address) changes no byte."""
        return self.model_dump(exclude=set(EXECUTION_KEYS))


class HubParams(_Section):
    repo_id: str = Field(description="Hub dataset repo, e.g. org/context-corruption; empty: do not publish")
    revision_tag: str = Field(description="Tag created on the pushed commit, e.g. v1")
    private: bool

    @field_validator("repo_id")
    @classmethod
    def _repo_id(cls, value: str) -> str:
        if value:
            # here, not at the top: episodes workers import this module and read no hub params (0.05 s)
            from huggingface_hub.errors import HFValidationError
            from huggingface_hub.utils import validate_repo_id

            try:
                validate_repo_id(value)
            except HFValidationError as err:
                raise ValueError(str(err)) from None
        return value

    @field_validator("revision_tag")
    @classmethod
    def _tag(cls, value: str) -> str:
        """A name git accepts for a tag (git check-ref-format), checked here rather than after the upload."""
        if not is_git_tag(value):
            raise ValueError(
                "must be a git tag name such as v1 (no spaces, '..', '~^:?*[\\' or '@{', no empty, dot-led or "
                "'.lock' component, not '@')"
            )
        return value


def is_git_tag(value: str) -> bool:
    """git check-ref-format's rules, checked per '/' component: one regex over the whole name backtracked
    exponentially on a long name with a forbidden character at its end."""
    if value in ("", "@") or ".." in value or "@{" in value or value.endswith(".") or _TAG_FORBIDDEN.search(value):
        return False
    return all(part and not part.startswith(".") and not part.endswith(".lock") for part in value.split("/"))


Section = TypeVar("Section", bound=BaseModel)


def stage_parser(module: str, doc: str | None) -> argparse.ArgumentParser:
    """A stage's command line (`python -m module`): its docstring's first line, and --params."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=(doc or "").splitlines()[0])
    parser.add_argument("--params", type=Path, default=DEFAULT_PARAMS, help="the params file (default: %(default)s)")
    return parser


def read_params(path: Path = DEFAULT_PARAMS) -> dict:
    """The params file as a mapping of its known sections, read as DVC reads it (ruamel.yaml's safe loader, YAML
    1.2): PyYAML's YAML 1.1 read `train: 01000` as 512 and `1:30` as 90, so the build and `dvc params diff` told two
    values. The pure-Python loader, whether or not ruamel.yaml.clib is installed (ruamel.yaml 0.18 brings it): the C
    one words its errors otherwise and reads a params file nested 10,000 deep. A key given twice (YAML loaders keep
    the last value without a word) or an unknown top-level key (a misspelt `sead:` would leave the seed missing, a
    stray `workers:` would be ignored) is refused."""
    try:
        data = YAML(typ="safe", pure=True).load(_read_text(path))
    except YAMLError as err:  # one line: where, and what the parser found wrong there
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = " ".join(str(getattr(err, "problem", None) or err).split())
        raise ParamsError(f"{path}: not valid YAML{where}: {problem}") from err
    except RecursionError:  # nested nodes are composed recursively
        raise ParamsError(f"{path}: nested deeper than a params file can be") from None
    if not isinstance(data, dict):
        raise ParamsError(f"{path}: expected a mapping at the top level")
    if unknown := sorted(map(str, set(data) - set(SECTIONS))):
        raise ParamsError(f"{path}: unknown top-level key(s) {unknown}; the sections are {', '.join(SECTIONS)}")
    return data


def check_pipeline(data: dict, path: Path = DEFAULT_PARAMS) -> dict[str, BaseModel]:
    """The seed and every pipeline section, validated and returned by name: each stage refuses a later stage's bad or
    missing key before its own work (a bad hub.repo_id found by the publish stage, or DVC's "Parameters 'hub' are
    missing" there, would come after the whole build)."""
    seed(data, path)
    sections = {"facts": FactsParams, "episodes": EpisodesParams, "hub": HubParams}
    return {name: section(data, name, model, path) for name, model in sections.items()}


def _read_text(path: Path) -> str:
    """The file's text, or a ParamsError naming it: a folder or a binary file is a wrong path, not a traceback."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as err:
        raise ParamsError(f"{path}: file not found") from err
    except IsADirectoryError as err:
        raise ParamsError(f"{path}: is a directory, not a params file") from err
    except OSError as err:
        raise ParamsError(f"{path}: cannot be read ({err.strerror or err})") from err
    except UnicodeDecodeError as err:
        raise ParamsError(f"{path}: not UTF-8 text (byte {err.start} is {err.object[err.start]:#04x})") from err


def seed(data: dict, path: Path = DEFAULT_PARAMS) -> int:
    value = data.get("seed")
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**64:
        raise ParamsError(
            f"{path}: seed: must be an integer in 0..2**64-1 (the counter-based generator's key), got {value!r}"
        )
    return value


def section(data: dict, name: str, model: type[Section], path: Path = DEFAULT_PARAMS) -> Section:
    """Validate one top-level section; the error lists every bad key as `name.key: problem (got value)`."""
    if name not in data:
        raise ParamsError(f"{path}: missing section '{name}'")
    try:
        return model.model_validate(data[name])
    except ValidationError as err:
        raise ParamsError(f"{path}: " + one_line(err, lambda loc: dotted((name, *loc)))) from None


def params_hash(*parts: object) -> str:
    """sha256 of canonical JSON, for the manifest: the same params always hash the same."""
    canon = json.dumps([p.model_dump(mode="json") if isinstance(p, BaseModel) else p for p in parts], sort_keys=True)
    return hashlib.sha256(canon.encode()).hexdigest()

"""The episodes stage: facts → seeded episodes (README: The episode) → Hub-layout Parquet shards.

`generate_episodes` is pure: every draw of episode i is a function of (seed, i, slot, sub) through
`pipeline.randomness`, so an episode is the same whichever batch, shard, worker or order built it.
Per episode: the task (k = 1..4 corrupt documents), a fact of the split, the corrupt positions and a
random rank order among them; the corrupt document of rank r gets CORRUPTION_LEVELS[r], so corruption
escalates with rank and position carries no cue. `build_episodes` streams shard by shard over an
engine (`pipeline.engines`: a local process pool or Ray tasks; memory bounded by the shard size) and
stages the output so it appears atomically.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from enum import IntEnum
from functools import partial
from importlib.metadata import version
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from pipeline import corruption, documents, engines, heap, hiddenkey
from pipeline.checksums import file_sha256
from pipeline.console import log_to_console
from pipeline.interrupts import interruptible
from pipeline.params import (
    DEFAULT_PARAMS,
    EpisodesParams,
    ParamsError,
    check_pipeline,
    params_hash,
    read_params,
    seed,
    stage_parser,
)
from pipeline.pools import Pools, stored_pools
from pipeline.randomness import bits, integers, permutations
from pipeline.schema import (
    CORRUPTION_KINDS,
    CORRUPTION_LEVELS,
    DOCUMENT_TYPE,
    EPISODE_SCHEMA,
    FACT_SCHEMA,
    FICTIONAL_SOURCES,
    MAX_BUDGET,
    NUM_DOCS,
    SPLITS,
    TASKS,
    AnswersManifest,
    Manifest,
    ManifestError,
    ShardInfo,
    SplitInfo,
    hub_sources,
    load_manifest,
    schema_difference,
)
from pipeline.shards import ShardPlan
from pipeline.writer import (
    MANIFEST_NAME,
    OutputError,
    shard_info,
    staging_all,
    write_hidden_shard,
    write_manifest,
    write_shard,
)

log = logging.getLogger(__name__)
OUT_DIR = Path("data/episodes")
FACTS_DIR = Path("data/facts")


class Slot(IntEnum):
    """Every named draw of an episode; `sub` tells apart documents, ranks and redraw rounds."""

    TASK = 1
    FACT = 2
    POSITIONS = 3
    CLAIM_PICK = 4  # sub: round * 4 + rank
    CLAIM_SHAPE = 5  # same subs as CLAIM_PICK
    COPY = 6
    DECOY_PICK = 7  # sub: round * NUM_DOCS + document
    DECOY_SHAPE = 8  # same subs as DECOY_PICK
    STYLE = 9  # sub: document * STYLE_WORDS + word


STYLE_WORDS = -(-len(documents.U) // 4)  # four 16-bit draws per 64-bit word
_CLAIM, _DECOY = (Slot.CLAIM_PICK, Slot.CLAIM_SHAPE), (Slot.DECOY_PICK, Slot.DECOY_SHAPE)
COHERENT_COPY_RATE = 0.5  # how often a coherent fabrication repeats an earlier corrupt document's claim
# An episode's documents deny different values where their relation has more distinct values than this: one of few
# (six continents) cannot give eight documents different ones, and its repeats stay.
APART_ABOVE = 2 * NUM_DOCS


@dataclass(frozen=True)
class SplitFacts:
    """The facts of one split, sorted by fact_id, with everything episodes derive from them (built once)."""

    split: str
    table: pa.Table
    frame: pl.DataFrame
    truths: corruption.Truths
    family: np.ndarray
    domain: np.ndarray
    cited: np.ndarray


def prepare(facts: pa.Table, pools: Pools, split: str) -> SplitFacts:
    """Everything generation needs from the facts of `split` (FACT_SCHEMA table with every split). Wrong claims
    about real-world facts draw on every split's answers of the relation (`corruption.truths`), fictional ones on
    their split's alone."""
    every = pl.from_arrow(facts)
    table = every.filter(pl.col("split") == split).sort("fact_id")
    public = every.filter((pl.col("split") != split) & ~pl.col("source").is_in(FICTIONAL_SOURCES)).sort("fact_id")
    if table.is_empty():
        raise ValueError(f"the facts table has no fact in split {split!r}; episodes need at least one")
    norm = corruption.normalize_expr
    names_answer = table.select(norm(pl.col("subject")) == norm(pl.col("answer"))).to_series().to_numpy()
    family, domain, label = documents.topics(table["relation"], names_answer)
    return SplitFacts(
        split=split,
        table=table.to_arrow().cast(facts.schema),
        frame=documents.about(table["subject"], table["question"], label, table["relation"]).with_columns(
            table["answer"]
        ),
        truths=corruption.truths(table, pools, public),
        family=family,
        domain=domain,
        cited=documents.cited_years(table),
    )


def generate_episodes(
    facts: pa.Table, pools: Pools, seed: int, split: str, ids: np.ndarray, split_key: bytes | None = None
) -> pa.Table:
    """Episodes `ids` of `split` (EPISODE_SCHEMA, in the order of `ids`); a hidden split's draw with its key
    (`hiddenkey.draw_key`)."""
    ids = np.asarray(ids, dtype=np.int64)
    return generate(prepare(facts, pools, split), seed, ids, _draws(split_key, ids))


def _draws(split_key: bytes | None, ids: np.ndarray) -> np.ndarray | None:
    return None if split_key is None else hiddenkey.draw_ids(split_key, ids)


def _units(words: np.ndarray, count: int) -> np.ndarray:
    """`count` (at most 4) uniform numbers in [0, 1) per 64-bit word: its 16-bit fields, lowest first."""
    fields = np.ascontiguousarray(words, dtype="<u8").view("<u2").reshape(*words.shape, 4)
    return fields[..., :count] * (1.0 / 65536.0)


def _claim_draws(seed: int, ids: np.ndarray, subs: np.ndarray, slots: tuple[Slot, Slot]) -> np.ndarray:
    """The (n, corruption.U_COLUMNS) draws of a wrong claim: a 53-bit pick, then two 16-bit shape draws."""
    pick, shape = slots
    out = np.empty((len(ids), corruption.U_COLUMNS))
    out[:, 0] = (bits(seed, ids, pick, subs) >> np.uint64(11)).astype(np.float64) / 2.0**53
    out[:, 1:] = _units(bits(seed, ids, shape, subs), 2)
    return out


def _spread(values: pl.Series, rows: np.ndarray, n: int) -> pl.Series:
    """A length-n series holding `values` at `rows` and null elsewhere."""
    index = np.full(n, len(values), dtype=np.int64)
    index[rows] = np.arange(len(rows))
    return pl.concat([values, pl.Series([None], dtype=pl.String)]).gather(index)


def _rank_claims(ctx: SplitFacts, seed: int, ids: np.ndarray, k: np.ndarray, fact: np.ndarray):
    """Wrong claims of the corrupt documents by rank (null where the task has fewer), their keys, and kinds."""
    n = len(ids)
    claims: list[pl.Series] = []
    keys = np.zeros((len(CORRUPTION_LEVELS), n), dtype=np.uint64)
    kinds = np.zeros((n, len(CORRUPTION_LEVELS)), dtype=np.int8)
    for rank, level in enumerate(range(corruption.NUMBER, corruption.COHERENT + 1)):
        rows = np.flatnonzero(k > rank)
        values, key, applied = corruption.resolve(
            ctx.truths,
            fact[rows],
            np.full(len(rows), level),
            lambda items, round_, rows=rows, rank=rank: _claim_draws(
                seed, ids[rows[items]], np.full(len(items), rank + round_ * len(CORRUPTION_LEVELS)), _CLAIM
            ),
            [earlier[rows] for earlier in keys[:rank]],
        )
        if level == corruption.COHERENT:
            values, key = _copy_earlier(seed, ids[rows], rows, values, key, claims, keys[:rank])
        claims.append(_spread(values, rows, n))
        keys[rank, rows] = key
        kinds[rows, rank] = applied
    return claims, keys, kinds


def _copy_earlier(seed, ids, rows, values, key, claims, keys) -> tuple[pl.Series, np.ndarray]:
    """A coherent fabrication repeats an earlier corrupt document's claim at COHERENT_COPY_RATE."""
    draw = _units(bits(seed, ids, Slot.COPY), 2)
    source = np.minimum((draw[:, 1] * len(claims)).astype(np.int64), len(claims) - 1)
    copy = draw[:, 0] < COHERENT_COPY_RATE
    copied = pl.concat([c.gather(rows) for c in claims]).gather(source * len(rows) + np.arange(len(rows)))
    values = pl.select(pl.when(pl.lit(copy)).then(copied).otherwise(values)).to_series()
    return values, np.where(copy, keys[source, rows], key)


def generate(ctx: SplitFacts, seed: int, ids: np.ndarray, draws: np.ndarray | None = None) -> pa.Table:
    """Episodes `ids` from a prepared split: draws per episode, claims per corrupt rank, then documents. `draws` are
    the ids the draws are made from (a hidden split's secret ids, `hiddenkey.draw_ids`); by default `ids`."""
    n = len(ids)
    draws = ids if draws is None else draws
    k = integers(seed, draws, Slot.TASK, len(TASKS)) + 1
    fact = integers(seed, draws, Slot.FACT, ctx.table.num_rows)
    # The document at position p has rank[p] in a random order; ranks below k are the corrupt ones.
    rank = np.argsort(permutations(seed, draws, Slot.POSITIONS, NUM_DOCS), axis=1)
    corrupt = rank < k[:, None]
    claims, keys, kinds = _rank_claims(ctx, seed, draws, k, fact)

    episode = np.repeat(np.arange(n), NUM_DOCS)
    doc = np.tile(np.arange(NUM_DOCS), n)
    flat_rank, flat_corrupt = rank.ravel(), corrupt.ravel()
    level = np.where(flat_corrupt, flat_rank + 1, 0)
    applied = np.where(flat_corrupt, kinds[episode, np.minimum(flat_rank, len(CORRUPTION_LEVELS) - 1)], 0)
    frame = ctx.frame[fact]
    answer = frame["answer"]
    which = np.where(flat_corrupt, (flat_rank + 1) * n, 0) + episode
    claim = pl.concat([answer, *claims]).gather(which)
    claim_key = np.concatenate([ctx.truths.accepted[fact, 0], *keys])[which]

    style = bits(seed, draws[:, None], Slot.STYLE, np.arange(NUM_DOCS * STYLE_WORDS))  # word w of doc d: d * W + w
    u = _units(style.reshape(n, NUM_DOCS, STYLE_WORDS), 4).reshape(n * NUM_DOCS, -1)
    decoy = _decoys(ctx, seed, draws, fact, episode, doc, level, answer, claim, claim_key)
    title, content = documents.render(
        documents.Batch(
            about=frame.select(documents.ABOUT)[episode],
            answer=answer.gather(episode),
            claim=claim,
            decoy=decoy,
            family=ctx.family[fact][episode],
            domain=ctx.domain[fact][episode],
            cited=ctx.cited[fact][episode],
            u=u,
        )
    )
    return _table(ctx, ids, k, fact, corrupt, applied, title, content, claim)


def _decoys(ctx, seed, ids, fact, episode, doc, level, answer, claim, claim_key) -> pl.Series:
    """The value a document denies: the truth in an inversion, else a wrong value drawn around the document's own
    claim as an inversion draws its claim around the truth (a true answer near a number of a big relation, else a
    substitute or a near miss), so that a clean document's two values and an inversion's have one law.

    No two documents of an episode deny one value: the clean ones, all drawn around the truth, denied the same one
    often (19.5% of them, 4.9% of corrupt ones: birth years 66% against 12%), which told them apart. A document
    whose drawn value another has taken draws again (`corruption.resolve`'s `apart`)."""
    rows = np.flatnonzero(level != corruption.INVERSION)
    facts = fact[episode[rows]]
    around = ctx.truths.value[facts], ctx.truths.decimals[facts]
    corrupt = np.flatnonzero((level[rows] > 0) & ctx.truths.numeric[facts])
    numeric, value, decimals = corruption.numbers(claim.gather(rows[corrupt]))
    around[0][corrupt[numeric]], around[1][corrupt[numeric]] = value[numeric], decimals[numeric]
    roomy = ctx.truths.distinct.size[ctx.truths.group[facts]] > APART_ABOVE
    values, _, _ = corruption.resolve(
        ctx.truths,
        facts,
        np.full(len(rows), corruption.INVERSION),
        lambda items, round_: _claim_draws(
            seed, ids[episode[rows[items]]], doc[rows[items]] + round_ * NUM_DOCS, _DECOY
        ),
        [claim_key[rows]],
        around,
        np.where(roomy, episode[rows], -1),
    )
    inversions = np.flatnonzero(level == corruption.INVERSION)
    return _spread(pl.concat([values, answer.gather(episode[inversions])]), np.r_[rows, inversions], len(level))


def _table(ctx, ids, k, fact, corrupt, applied, title, content, claim) -> pa.Table:
    n = len(ids)
    facts = ctx.table.take(_numbers(fact))
    per_doc = _numbers(np.arange(0, n * NUM_DOCS + 1, NUM_DOCS, dtype=np.int32))
    docs = pa.StructArray.from_arrays(
        [_numbers(np.tile(np.arange(NUM_DOCS, dtype=np.int8), n)), title, content], fields=list(DOCUMENT_TYPE)
    )
    corrupt_offsets = _numbers(np.r_[0, np.cumsum(k)].astype(np.int32))
    columns = {
        "episode_id": _numbers(np.asarray(ids, dtype=np.int64)),
        "split": _strings([ctx.split], np.zeros(n, dtype=np.int64)),
        "task": _strings(TASKS, k - 1),
        "question": facts["question"],
        "documents": pa.ListArray.from_arrays(per_doc, docs, type=EPISODE_SCHEMA.field("documents").type),
        "max_budget": _numbers(np.full(n, MAX_BUDGET, dtype=np.int8)),
        "fact_id": facts["fact_id"],
        "source": facts["source"],
        "answer_type": facts["answer_type"],
        "answer": facts["answer"],
        "answer_aliases": facts["answer_aliases"],
        "corrupt_ids": pa.ListArray.from_arrays(
            corrupt_offsets,
            _numbers(np.nonzero(corrupt)[1].astype(np.int8)),
            type=EPISODE_SCHEMA.field("corrupt_ids").type,
        ),
        "doc_corruption": pa.ListArray.from_arrays(
            per_doc, _strings(CORRUPTION_KINDS, applied), type=EPISODE_SCHEMA.field("doc_corruption").type
        ),
        "doc_claims": pa.ListArray.from_arrays(
            per_doc, claim.to_arrow().cast(pa.string()), type=EPISODE_SCHEMA.field("doc_claims").type
        ),
    }
    return pa.Table.from_arrays(
        [pa.concat_arrays(c.chunks) if isinstance(c, pa.ChunkedArray) else c for c in columns.values()],
        schema=EPISODE_SCHEMA,
    )


# Columns are built from buffers and through polars, never with pa.array or pa.scalar: those import pandas to
# inspect their argument, 0.3 s of every worker's start-up.


def _numbers(values: np.ndarray) -> pa.Array:
    """A 1-D numeric array as Arrow, zero-copy."""
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def _strings(names: Sequence[str], index: np.ndarray) -> pa.Array:
    """names[index] as an Arrow string array."""
    return (
        pl.Series(names, dtype=pl.String)
        .gather(index)
        .to_arrow(compat_level=pl.CompatLevel.oldest())
        .cast(pa.string())
    )


# --- The stage: shards over a process pool -----------------------------------------------------------------

FACTS_FILE = "facts.parquet"
STOP_FILE = ".stop"  # in the staging folder: a failed Ray build's word to its tasks (engines.run_ray)
CHUNK_ROWS = 12288  # episodes generated at once inside a shard: bounds the working set (~300 MB)
_WORKER: dict = {}


class FactsError(RuntimeError):
    """The facts table is missing or unreadable; the message names the file and says how to rebuild it."""


def read_facts(facts_dir: Path) -> tuple[pa.Table, str]:
    """The facts table and the sha256 of its file, read once: the bytes hashed for the manifest are the bytes
    parsed. FactsError names the file when it is missing, not Parquet, not a facts table, or lacks a split."""
    path = Path(facts_dir) / FACTS_FILE
    rebuild = "run the facts stage (python -m pipeline.facts)"
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):  # NotADirectoryError: --facts named a file, not its folder
        raise FactsError(f"{path}: no facts table; {rebuild} first") from None
    except OSError as err:  # a folder of that name, no permission
        raise FactsError(f"{path}: cannot be read ({err.strerror or err}); {rebuild}") from None
    try:
        # ParquetFile, not read_table: read_table would import pyarrow.dataset (0.3 s)
        facts = pq.ParquetFile(pa.BufferReader(data)).read()
    except (pa.ArrowException, OSError) as err:
        raise FactsError(f"{path}: not a Parquet file ({' '.join(str(err).split())}); re-{rebuild}") from None
    if difference := schema_difference(facts.schema, FACT_SCHEMA):
        raise FactsError(f"{path}: not a facts table (columns differ from FACT_SCHEMA: {difference}); re-{rebuild}")
    if missing := sorted(set(SPLITS) - set(facts.column("split").unique().to_pylist())):
        raise FactsError(f"{path}: no fact in split(s) {missing}; episodes need facts in every split")
    try:  # both now, not the Hub sources once every shard is built
        pools, _ = stored_pools(facts.schema.metadata), hub_sources(facts.schema.metadata)
    except ValueError as err:  # a ValidationError: no JSON, or JSON of another shape
        raise FactsError(
            f"{path}: its metadata cannot be read ({' '.join(str(err).split())[:200]}); re-{rebuild}"
        ) from None
    if pools is None:
        raise FactsError(f"{path}: no name pools in its metadata (an older facts stage wrote it); re-{rebuild}")
    return facts, hashlib.sha256(data).hexdigest()


def _install(facts_dir: Path, facts_sha256: str, seed: int, split_keys: dict[str, bytes]) -> None:
    """Each worker reads the facts the stage checked (the path travels, not the table: `engines.run_local`) and
    the pools stored with them; splits are prepared on first use. `split_keys` hold each hidden split's draw key.
    Its heap keeps what a chunk frees for the next (`heap.keep_freed_memory`)."""
    heap.keep_freed_memory()
    facts, sha256 = read_facts(facts_dir)
    if sha256 != facts_sha256:
        raise FactsError(f"{Path(facts_dir) / FACTS_FILE}: changed while the episodes stage ran; run the stage again")
    _WORKER.clear()
    _WORKER.update(facts=facts, pools=stored_pools(facts.schema.metadata), seed=seed, split_keys=split_keys)


def _check_key(facts: pa.Table, path: Path, key: bytes) -> None:
    """A hidden build's facts must come from its own key: facts built without it (or with another) would let the
    published seed rebuild the hidden split's fictional answers."""
    built = (facts.schema.metadata or {}).get(hiddenkey.FINGERPRINT_KEY, b"").decode()
    if built != hiddenkey.fingerprint(key):
        state = f"with another {hiddenkey.KEY_ENV}" if built else f"without {hiddenkey.KEY_ENV}"
        raise FactsError(
            f"{path}: built {state}, and episodes.hidden_test needs facts from this build's key; rerun the facts "
            f"stage (python -m pipeline.facts) with the same {hiddenkey.KEY_ENV} set"
        )


def _split_facts(split: str) -> SplitFacts:
    if split not in _WORKER:
        _WORKER[split] = prepare(_WORKER["facts"], _WORKER["pools"], split)
    return _WORKER[split]


def _shard_chunks(plan: ShardPlan, row_group_rows: int) -> Iterator[pa.Table]:
    """The shard's episodes in chunks of whole row groups, about CHUNK_ROWS each: the writer takes each as it comes."""
    ctx = _split_facts(plan.split)
    ids = np.arange(plan.first_id, plan.first_id + plan.num_rows, dtype=np.int64)
    draws = _draws(_WORKER["split_keys"].get(plan.split), ids)
    step = max(CHUNK_ROWS // row_group_rows, 1) * row_group_rows
    for start in range(0, len(ids), step):
        engines.stop_if_orphaned()  # a shard of a build that is gone or stopped never takes its name in staging
        part = slice(start, start + step)
        yield generate(ctx, _WORKER["seed"], ids[part], None if draws is None else draws[part])
    engines.stop_if_orphaned()


def _write(plan: ShardPlan, root: Path, row_group_rows: int) -> ShardInfo:
    return write_shard(_shard_chunks(plan, row_group_rows), root, plan, row_group_rows)


def _write_hiding(
    plan: ShardPlan, root: Path, row_group_rows: int, hidden: tuple[str, ...], answers: Path
) -> ShardInfo:
    """A shard of a build with hidden splits: theirs are split into published columns and answers."""
    if plan.split not in hidden:
        return _write(plan, root, row_group_rows)
    return write_hidden_shard(_shard_chunks(plan, row_group_rows), root, answers, plan, row_group_rows)


def build_episodes(
    facts_dir: Path,
    out_dir: Path,
    params: EpisodesParams,
    seed: int,
    *,
    answers_dir: Path | None = None,
    hidden_key: bytes | None = None,
    progress: Callable[[ShardInfo], None] | None = None,
    audit: str = "",
) -> Manifest:
    """Generate every split into the Hub-layout folder out_dir (replaced atomically); returns the manifest.

    The folder holds the shards, manifest.json and the README.md dataset card. Output is byte-identical
    for any `params.workers` and `params.engine`: shards are pure functions of (seed, ids). With
    `answers_dir` and `hidden_key` (required when `params.hidden_test`), the hidden splits draw from secret ids
    (`pipeline.hiddenkey`) and their ground truth goes to answers_dir, with its own manifest.json (replaced
    atomically, together with out_dir, whose manifest binds it by checksum).
    The facts are read here first, so a missing or corrupt table fails (FactsError) before any work; the workers
    read the same file, bound to these bytes by its sha256.
    """
    _separate(facts_dir, Path(out_dir), answers_dir)
    facts, facts_hash = read_facts(facts_dir)
    hidden = params.hidden_splits()
    if hidden and (answers_dir is None or hidden_key is None):
        raise ValueError(
            "episodes.hidden_test is true: pass answers_dir, the folder for the test split's ground truth, and "
            "hidden_key, the key of its draws"
        )
    if hidden:
        _check_key(facts, Path(facts_dir) / FACTS_FILE, hidden_key)
    split_keys = {split: hiddenkey.draw_key(hidden_key, seed, split) for split in hidden}
    plans = params.shard_plans()
    digest = params_hash(seed, params.content(), facts_hash)
    outputs = [(Path(out_dir), Manifest)] + ([] if answers_dir is None else [(Path(answers_dir), AnswersManifest)])
    check = None if answers_dir is None else partial(_own_answers, Path(out_dir), Path(answers_dir))
    with staging_all(outputs, check) as (root, *rest):
        answers = rest[0] if rest else None
        args = {"root": root, "row_group_rows": params.row_group_rows}
        write = (
            partial(_write_hiding, **args, hidden=tuple(hidden), answers=answers)
            if hidden
            else partial(_write, **args)
        )
        setup = (Path(facts_dir).resolve(), facts_hash, seed, split_keys)
        if params.engine == "ray":
            infos = engines.run_ray(
                plans, write, _install, setup, root / STOP_FILE, params.ray_address, params.workers, progress
            )
        else:
            infos = engines.run_local(plans, write, _install, setup, params.workers, progress)
        answers_sha256 = _answers_manifest(answers, plans, hidden, params.row_group_rows, digest)
        first = {plan.split: plan.first_id for plan in reversed(plans)}
        manifest = Manifest(
            seed=seed,
            params_hash=digest,
            row_group_rows=params.row_group_rows,
            splits={
                split: SplitInfo(first_id=first[split], num_rows=count) for split, count in params.counts().items()
            },
            shards=infos,
            versions={name: version(name) for name in ("numpy", "polars", "pyarrow", "faker")},
            hidden_splits=hidden,
            answers_sha256=answers_sha256,
            hub_sources=_published_sources(facts.schema.metadata),
        )
        write_manifest(root, manifest)
        from pipeline.card import facts_per_split, write_card  # here: workers import this module (duckdb, 0.1 s)

        write_card(root, manifest, audit, facts_per_split(facts))
    return manifest


def _published_sources(metadata: dict[bytes, bytes] | None) -> dict[str, dict[str, str | None]]:
    """The facts' Hub sources as the manifest publishes them: a local copy's path is the builder's, not the data's."""
    return {
        name: where if where["commit"] else {"path": None, "commit": None}
        for name, where in hub_sources(metadata).items()
    }


def _separate(facts_dir: Path, out_dir: Path, answers_dir: Path | None) -> None:
    """Each output folder is replaced whole: one inside the other would lose the ground truth, or the build, and
    one holding the facts would lose the build's input."""
    outputs = [Path(out_dir)] + ([] if answers_dir is None else [Path(answers_dir)])
    for output in outputs:
        if Path(facts_dir).resolve().is_relative_to(output.resolve()):
            raise OutputError(
                f"{output}: holds the facts ({facts_dir}), which the output would replace; give the output a folder "
                "of its own, e.g. data/episodes"
            )
    if answers_dir is None:
        return
    out, answers = out_dir.resolve(), Path(answers_dir).resolve()
    if out.is_relative_to(answers) or answers.is_relative_to(out):
        raise OutputError(
            f"{out_dir} and {answers_dir}: the dataset folder and the answers folder must not hold one another (each "
            "is replaced whole); give them folders of their own, e.g. data/episodes and data/answers"
        )


def _own_answers(out_dir: Path, answers_dir: Path) -> None:
    """An answers folder holding hidden ground truth is replaced only by a build of the dataset folder whose manifest
    binds it: a build beside another (`--out X/b` next to a hidden X/a, both answered in X/answers, the default)
    deleted ground truth that only its build's key can make again."""
    try:
        listed = load_manifest(answers_dir / MANIFEST_NAME, AnswersManifest, "", any_version=True)
    except ManifestError:  # none, or an empty folder: nothing to keep (staging_all refuses files without one)
        return
    try:
        bound = load_manifest(out_dir / MANIFEST_NAME, Manifest, "", any_version=True).answers_sha256
    except ManifestError:
        bound = None
    if listed.shards and bound != file_sha256(answers_dir / MANIFEST_NAME):
        raise OutputError(
            f"{answers_dir}: holds the ground truth of another build's hidden splits ({len(listed.shards)} shards; "
            f"{out_dir / MANIFEST_NAME} does not bind it), which only that build's key makes again; give this "
            f"build an answers folder of its own (--answers), or remove {answers_dir} if its build is gone"
        )


def _answers_manifest(
    answers: Path | None, plans: list[ShardPlan], hidden: list[str], row_group_rows: int, digest: str
) -> str | None:
    """Write the answers folder's manifest (when there is one); its sha256 when a split is hidden, else None."""
    if answers is None:
        return None
    shards = [shard_info(answers, plan, row_group_rows) for plan in plans if plan.split in hidden]
    write_manifest(answers, AnswersManifest(params_hash=digest, row_group_rows=row_group_rows, shards=shards))
    return file_sha256(answers / MANIFEST_NAME) if hidden else None


def _beside(out_dir: Path, name: str) -> Path:
    out = Path(os.path.abspath(out_dir))  # "x/y/.." is x, whose answers folder lies beside x
    if not out.name:
        raise OutputError(f"{out_dir}: is the file system's root; give the output a folder of its own")
    return out.with_name(name)


# The generator's shortcut audit (benchmarks/audit.py on the default build), a section of the dataset card: found
# from this checkout whatever the working folder; a build without it (an installed package) has no such section.
AUDIT_SECTION = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "audit.md"


def _audit_section() -> str:
    if AUDIT_SECTION.is_file():
        return AUDIT_SECTION.read_text()
    log.warning("episodes: %s is not beside this package: the dataset card has no shortcut audit", AUDIT_SECTION)
    return ""


def main(
    params_file: Path = DEFAULT_PARAMS,
    facts_dir: Path = FACTS_DIR,
    out_dir: Path = OUT_DIR,
    answers_dir: Path | None = None,
) -> None:
    """The stage: always writes the answers folder (default: `answers` beside out_dir), a DVC output even when
    nothing is hidden (then its manifest lists no shard). Bad params or a missing or corrupt facts table end it
    with a one-line message (exit status 1) before any work, as does a hidden build without its key
    (`hiddenkey.KEY_ENV`); so do a full disk and a worker killed mid-build, and Ctrl-C (exit status 130), its
    staging folders removed."""
    log_to_console()
    started = time.perf_counter()
    with interruptible("episodes", also=(engines.Cancelled,)):
        try:
            data = read_params(params_file)
            params = check_pipeline(data, params_file)["episodes"]
            seed_ = seed(data, params_file)
            answers_dir = _beside(out_dir, "answers") if answers_dir is None else answers_dir
            key = hiddenkey.read_key() if params.hidden_test else None
            total = sum(params.counts().values())
            # Drawn after a second: a facts table build_episodes refuses at once (FactsError) leaves only its line.
            with tqdm(total=total, unit="episodes", unit_scale=True, desc="episodes", delay=1.0) as bar:
                manifest = build_episodes(
                    facts_dir,
                    out_dir,
                    params,
                    seed_,
                    answers_dir=answers_dir,
                    hidden_key=key,
                    progress=lambda info: bar.update(info.num_rows),
                    audit=_audit_section(),
                )
        except (ParamsError, FactsError, hiddenkey.HiddenKeyError, OutputError) as err:
            raise SystemExit(f"episodes: {err}") from None
        except OSError as err:  # the disk filled up, or a folder became unwritable, mid-build: nothing is left staged
            raise SystemExit(f"episodes: writing the dataset failed: {err}") from None
        except BrokenProcessPool:  # a worker was killed (the kernel's OOM killer, say): its shard is lost
            raise SystemExit(
                "episodes: a worker process died (killed, or out of memory: fewer episodes.workers use less); "
                "nothing was written"
            ) from None
    seconds = time.perf_counter() - started
    if manifest.hidden_splits:
        log.info(
            "hidden    %s: ground truth in %s (the reward server's)", ", ".join(manifest.hidden_splits), answers_dir
        )
    size = sum(shard.bytes for shard in manifest.shards)
    counts = ", ".join(f"{split} {info.num_rows:,}" for split, info in manifest.splits.items())
    log.info(
        "episodes  %s (%s) in %d shards\ntime      %.1f s, %.0f episodes/s\nsize      %.1f MB, %.0f bytes/episode\n"
        "output    %s",
        f"{total:,}",
        counts,
        len(manifest.shards),
        seconds,
        total / seconds,
        size / 1e6,
        size / total,
        Path(out_dir).resolve(),
    )


def cli(argv: list[str] | None = None) -> None:
    parser = stage_parser("pipeline.episodes", __doc__)
    parser.add_argument("--facts", type=Path, default=FACTS_DIR, help="the facts folder (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="the dataset folder (default: %(default)s)")
    parser.add_argument("--answers", type=Path, help="the hidden splits' ground truth (default: answers beside --out)")
    args = parser.parse_args(argv)
    main(args.params, args.facts, args.out, args.answers)


if __name__ == "__main__":
    # The importable module's main: Ray ships functions of __main__ by value, each with its own copy of _WORKER.
    from pipeline.episodes import cli

    cli()

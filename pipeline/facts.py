"""The facts stage: every configured source → one deduplicated, split-assigned table → data/facts/.

`build_facts` is pure (same params, seed and hidden-split key → identical table); `write_facts` and `main` are the
I/O edges. Splits come from a hash of `fact_id` alone, so a fact keeps its split when sources or counts
change and can never appear in two splits.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import hiddenkey
from pipeline.console import log_to_console
from pipeline.interrupts import held, interruptible
from pipeline.params import (
    DEFAULT_PARAMS,
    FactsParams,
    ParamsError,
    check_pipeline,
    read_params,
    seed,
    stage_parser,
)
from pipeline.pools import build_pools, pools_metadata
from pipeline.schema import FACT_SCHEMA, HUB_SOURCES_KEY, SPLITS, hub_sources
from pipeline.sources import elements, geonames, hub, synthetic
from pipeline.writer import OutputError, output_folder

log = logging.getLogger(__name__)
OUT_DIR = Path("data/facts")
SUMMARY_KEYS = ("source", "split", "answer_type", "relation")
MALFORMED_KEY = b"malformed_rows"  # metadata: the Hub sources' rows left out (hub.Malformed), for summary.json

Loader = Callable[[FactsParams, int], pl.DataFrame]
# The offline sources; the Hub's are hub.LOADERS, read where `hub.locate` says.
LOADERS: dict[str, Loader] = {
    "geonames": lambda params, seed: geonames.facts(),
    "elements": lambda params, seed: elements.facts(),
    "synthetic": lambda params, seed: synthetic.facts(seed, params.synthetic_entities, build_pools(seed)),
}


def assign_splits(fact_ids: Sequence[str], weights: Mapping[str, float]) -> np.ndarray:
    """blake2b(fact_id) → a uniform number in [0, 1) → the split (SPLITS order) whose cumulative weight covers it."""
    digests = b"".join(hashlib.blake2b(i.encode(), digest_size=8).digest() for i in fact_ids)
    u = (np.frombuffer(digests, dtype=">u8") >> np.uint64(11)).astype(np.float64) * 2.0**-53
    bounds = np.cumsum([weights[split] for split in SPLITS])
    bounds[-1] = 1.0  # the weights may sum to a hair under 1 (validated to 1e-9)
    return np.asarray(SPLITS)[np.searchsorted(bounds, u, side="right")]


def _normalised(column: str) -> pl.Expr:
    return (
        pl.col(column)
        .str.to_lowercase()
        .str.replace_all(r"[^\w\s]", "")
        .str.replace_all(r"\s+", " ")
        .str.strip_chars()
    )


def deduplicate(facts: pl.DataFrame) -> pl.DataFrame:
    """Drop every fact whose normalised question has more than one answer; keep the first (by fact_id) of repeats."""
    return (
        facts.sort("fact_id")
        .with_columns(_q=_normalised("question"), _a=_normalised("answer"))
        .filter(pl.col("_a").n_unique().over("_q") == 1)
        .unique(subset="_q", keep="first", maintain_order=True)
        .drop("_q", "_a")
    )


def build_facts(
    params: FactsParams, seed: int, *, hub_paths: Mapping[str, str] | None = None, hidden_key: bytes | None = None
) -> pa.Table:
    """The facts table (FACT_SCHEMA), deduplicated, rows sorted by fact_id.

    `hub_paths` overrides `params.hub_paths`: the Hub dataset id of nq_open / popqa / faitheval, or a local folder;
    each is read at the commit its `facts.hub_revisions` entry names now (a local folder as it is), recorded in the
    table's metadata (HUB_SOURCES_KEY), as are the rows each left out as malformed (MALFORMED_KEY). With the key of
    a build with a hidden split, the synthetic facts come from a keyed seed and the table's metadata names the key
    (`hiddenkey.fingerprint`), which the episodes stage checks.
    """
    entity_seed = seed if hidden_key is None else hiddenkey.synthetic_seed(hidden_key, seed)
    paths = params.hub_paths | (hub_paths or {})
    hubs = {
        name: hub.locate(name, paths.get(name), params.hub_revisions.get(name))
        for name in params.sources
        if name in hub.LOADERS
    }
    read = {name: hub.LOADERS[name](where, params.hub_limit) for name, where in hubs.items()}
    frames = [read[name].facts if name in read else LOADERS[name](params, entity_seed) for name in params.sources]
    facts = deduplicate(pl.concat(frames))
    splits = assign_splits(facts["fact_id"].to_list(), params.split_weights)
    facts = facts.with_columns(split=pl.Series(splits, dtype=pl.String)).sort("fact_id")
    if empty := [split for split in params.split_weights if split not in set(splits)]:
        raise ParamsError(
            f"facts.split_weights: no fact falls in split {', '.join(empty)} of {len(splits)} facts "
            f"(weights {params.split_weights}): raise its weight or add facts (sources, synthetic_entities)"
        )
    metadata = pools_metadata(build_pools(seed))  # the published seed's, as the episodes draw from it
    if hidden_key is not None:
        metadata[hiddenkey.FINGERPRINT_KEY] = hiddenkey.fingerprint(hidden_key).encode()
    if hubs:
        metadata[HUB_SOURCES_KEY] = json.dumps({name: where._asdict() for name, where in hubs.items()}).encode()
    if malformed := {name: got.malformed._asdict() for name, got in read.items() if got.malformed}:
        metadata[MALFORMED_KEY] = json.dumps(malformed).encode()
    return facts.select(FACT_SCHEMA.names).to_arrow().cast(FACT_SCHEMA).replace_schema_metadata(metadata)


def summarise(table: pa.Table) -> dict:
    """Counts per source, split, answer type and relation, where each Hub source was read (path, commit), and the
    rows a Hub source left out as malformed (how many, of how many read, and the first)."""
    frame = pl.from_arrow(table)
    counts = {key: dict(sorted(frame.group_by(key).len().iter_rows())) for key in SUMMARY_KEYS}
    hubs = hub_sources(table.schema.metadata)
    malformed = json.loads((table.schema.metadata or {}).get(MALFORMED_KEY, b"{}"))
    by = {f"by_{key}": value for key, value in counts.items()}
    return {
        "facts": table.num_rows,
        **by,
        **({"hub_sources": hubs} if hubs else {}),
        **({"malformed_rows": malformed} if malformed else {}),
    }


def write_facts(table: pa.Table, out_dir: Path) -> dict:
    """out_dir/facts.parquet (zstd, FACT_SCHEMA) and out_dir/summary.json (counts per source/split/type/relation),
    which it returns.

    Both are written under hidden temporary names and renamed only once both are complete, facts.parquet (what
    the episodes stage reads) last, so a reader never finds a half-written file or a build killed before it was
    complete, and a failed write leaves the previous output untouched; a Ctrl-C between the renames waits for both.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    table = table.cast(FACT_SCHEMA).replace_schema_metadata(table.schema.metadata)  # the pools, a key's fingerprint
    parquet, summary = out_dir / "facts.parquet", out_dir / "summary.json"
    staged = {path: path.with_name(f".{path.name}.tmp") for path in (summary, parquet)}
    try:
        pq.write_table(table, staged[parquet], compression="zstd")
        counts = summarise(table)
        staged[summary].write_text(json.dumps(counts, indent=2) + "\n")
        with held("facts"):
            for path, tmp in staged.items():
                os.replace(tmp, path)
    finally:
        for tmp in staged.values():
            tmp.unlink(missing_ok=True)
    return counts


def main(params_path: Path = DEFAULT_PARAMS, out_dir: Path = OUT_DIR) -> None:
    """The stage; bad params, an output that is no folder, an unreadable Hub source, or a build with a hidden split
    (episodes.hidden_test) without its key, end it with a one-line message (exit status 1) before anything is
    written; so does Ctrl-C (exit status 130)."""
    start = time.perf_counter()
    with interruptible("facts"):
        try:
            output_folder(out_dir)
            data = read_params(params_path)
            sections = check_pipeline(data, params_path)
            build_seed = seed(data, params_path)
            hidden = sections["episodes"].hidden_test
            table = build_facts(sections["facts"], build_seed, hidden_key=hiddenkey.read_key() if hidden else None)
        except (ParamsError, hiddenkey.HiddenKeyError, hub.HubSourceError, OutputError) as err:
            raise SystemExit(f"facts: {err}") from None
        try:
            summary = write_facts(table, out_dir)
        except OSError as err:  # the disk filled up: the previous facts are left as they were
            raise SystemExit(f"facts: writing {out_dir} failed: {err}") from None
    left_out = "".join(
        f" | {name}: {rows['skipped']} malformed of {rows['read']} rows left out (first: {rows['first']})"
        for name, rows in summary.get("malformed_rows", {}).items()
    )
    log.info(
        "facts: %d in %.1f s → %s | by source %s | by split %s%s",
        table.num_rows,
        time.perf_counter() - start,
        out_dir,
        summary["by_source"],
        summary["by_split"],
        left_out,
    )


def cli(argv: list[str] | None = None) -> None:
    parser = stage_parser("pipeline.facts", __doc__)
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="the facts folder (default: %(default)s)")
    args = parser.parse_args(argv)
    main(args.params, args.out)


if __name__ == "__main__":
    log_to_console()
    cli()

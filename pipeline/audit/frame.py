"""The audit's input: episodes read from a dataset folder, one row per document, and the groups judged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.schema import ANSWER_TYPES, CORRUPTION_LEVELS
from pipeline.validate import read_manifest

MIN_GROUP = 100  # corrupt and clean documents a group needs before it is judged (fewer: too noisy)
# ...and the facts its clean documents are about: a fact's clean documents all claim its answer, so a group of a few
# dozen facts is a few dozen samples, however many documents (a small world's text answers, 72 facts, reached
# 0.61-0.63 on the claim's text: which strings are one split's answers and another's wrong claims).
MIN_FACTS = 100
_COLUMNS = ["episode_id", "fact_id", "answer_type", "documents", "doc_corruption", "doc_claims"]


def read_split(root: Path, split: str, limit: int | None = None) -> pa.Table:
    """The first `limit` episodes (all when None) of `split` in the dataset folder `root`."""
    shards = [s for s in read_manifest(root).shards if s.split == split]
    if not shards:
        raise ValueError(f"{root} has no shard of split {split!r}")
    tables, rows = [], 0
    for shard in shards:
        tables.append(pq.read_table(Path(root) / shard.path, columns=_COLUMNS))
        rows += tables[-1].num_rows
        if limit is not None and rows >= limit:
            break
    table = pa.concat_tables(tables)
    return table if limit is None else table.slice(0, limit)


def document_frame(episodes: pa.Table) -> pl.DataFrame:
    """One row per document: episode_id, fact_id, answer_type, doc_id, title, content, kind, claim, corrupt.

    The answer type is a hidden column, but every document is read beside its question, which tells it."""
    return (
        pl.from_arrow(episodes.select(_COLUMNS))
        .explode(["documents", "doc_corruption", "doc_claims"])
        .unnest("documents")
        .rename({"doc_corruption": "kind", "doc_claims": "claim"})
        .with_columns(pl.col("claim").fill_null(""), corrupt=pl.col("kind") != "none")
    )


def kind_groups(documents: pl.DataFrame) -> dict[str, np.ndarray]:
    """Per corruption kind: its documents and the clean documents of the episodes that have that kind.

    The clean side comes from the same episodes, so the same facts and answer types (a number corruption exists
    only for numbers): what separates the two sides is the corruption, not the topic."""
    kind = pl.col("kind")
    picks = documents.select(
        ((kind == level) | (~pl.col("corrupt") & (kind == level).any().over("episode_id"))).alias(level)
        for level in CORRUPTION_LEVELS
    )
    return {level: picks[level].to_numpy() for level in CORRUPTION_LEVELS}


def type_groups(documents: pl.DataFrame, name: str, pick: np.ndarray) -> dict[str, np.ndarray]:
    """Group `name` (`all` or a kind, documents `pick`) within each answer type: `year`, or `year/inversion`."""
    answer_type = documents["answer_type"].to_numpy()
    return {(kind if name == "all" else f"{kind}/{name}"): (answer_type == kind) & pick for kind in ANSWER_TYPES}


def judged(groups: dict[str, np.ndarray], corrupt: np.ndarray, facts: np.ndarray) -> dict[str, np.ndarray]:
    """The groups with at least `MIN_GROUP` corrupt and `MIN_GROUP` clean documents, whose clean documents are about
    at least MIN_FACTS facts (`facts`: each document's fact_id)."""
    return {
        name: pick
        for name, pick in groups.items()
        if min(np.count_nonzero(corrupt & pick), np.count_nonzero(~corrupt & pick)) >= MIN_GROUP
        and len(np.unique(facts[~corrupt & pick])) >= MIN_FACTS
    }

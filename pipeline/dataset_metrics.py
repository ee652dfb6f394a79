"""The dataset's metrics for `dvc metrics show`: episodes per split, task, answer type and source, documents per
corruption kind, document length statistics and size, read from the validate stage's `checked` table."""

from __future__ import annotations

from collections import Counter

import duckdb

from pipeline.schema import ANSWER_TYPES, CORRUPTION_KINDS, SPLITS, TASKS, Manifest


def dataset_metrics(con: duckdb.DuckDBPyConnection, manifest: Manifest) -> dict:
    """Counts (every known value listed, zero included), document statistics and bytes of the dataset."""
    kinds, chars = _doc_stats(con)
    total = sum(info.num_rows for info in manifest.splits.values())
    size = sum(s.bytes for s in manifest.shards)
    return {
        "episodes": {"total": total, **_counts(con, "split", SPLITS)},
        "task": _counts(con, "task", TASKS),
        "corruption_kind": kinds,
        "answer_type": _counts(con, "answer_type", ANSWER_TYPES),
        "source": _counts(con, "source"),
        "doc_chars": chars,
        "bytes": {"total": size, "per_episode": round(size / total, 1)},
    }


def _counts(con: duckdb.DuckDBPyConnection, column: str, known: tuple[str, ...] = ()) -> dict[str, int]:
    found = dict(con.execute(f"SELECT {column}, count(*) FROM checked GROUP BY ALL ORDER BY 1").fetchall())
    return {**dict.fromkeys(known, 0), **found}


def length_stats(histogram: dict[int, int]) -> dict:
    """count, mean, p50, p95 (nearest rank) and max of document lengths given as {length: documents}."""
    count = sum(histogram.values())
    stats = {"count": count, "mean": round(sum(n * c for n, c in histogram.items()) / count, 2) if count else None}
    seen, ranks = 0, {"p50": 0.5, "p95": 0.95}
    for n in sorted(histogram):
        seen += histogram[n]
        for name, q in list(ranks.items()):
            if seen >= q * count:
                stats[name] = n
                del ranks[name]
    return {**stats, **dict.fromkeys(ranks), "max": max(histogram, default=None)}


def _doc_stats(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, int], dict[str, dict]]:
    """Documents per corruption kind and length statistics (chars) of all, clean and corrupt documents, from a
    histogram of (kind, length): a few thousand groups come back instead of millions of lengths."""
    rows = con.execute(
        "SELECT kind, n, count(*) FROM (SELECT unnest(doc_corruption) AS kind, unnest(doc_chars) AS n FROM checked) "
        "GROUP BY ALL"
    ).fetchall()
    kinds = dict.fromkeys(CORRUPTION_KINDS, 0)
    lengths: dict[str, Counter] = {"all": Counter(), "clean": Counter(), "corrupt": Counter()}
    for kind, n, count in rows:  # kind or n is NULL only where eight_documents fails
        if kind is not None:
            kinds[kind] = kinds.get(kind, 0) + count
        if n is not None:
            lengths["all"][n] += count
            if kind is not None:
                lengths["clean" if kind == "none" else "corrupt"][n] += count
    return kinds, {name: length_stats(histogram) for name, histogram in lengths.items()}

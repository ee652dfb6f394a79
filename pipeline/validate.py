"""The validate stage: DuckDB SQL over the written shards checks every invariant of DESIGN §3.

Rows never come into Python: each invariant is one SQL predicate per episode, aggregated to a count and
the first offending ids, so a million episodes take seconds. Answers are compared after the reward's
normalisation (lowercase, strip non-word characters, collapse whitespace), written here in SQL with
Unicode classes so that it equals Python's `str.lower` + `\\w` + `str.split` (tests prove it on every
assigned code point). Writes the metrics that `dvc metrics show` reads; any violation fails the stage.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from pathlib import Path

import duckdb

from pipeline.filechecks import (
    check_answers,
    check_files,
    manifest_problems,
    published_hidden_columns,
    row_group_problems,
)
from pipeline.schema import (
    ANSWER_TYPES,
    CORRUPTION_KINDS,
    MAX_BUDGET,
    NUM_DOCS,
    SPLITS,
    TASKS,
    VISIBLE_COLUMNS,
    Manifest,
    ShardInfo,
)
from pipeline.writer import MANIFEST_NAME, write_text_atomic

log = logging.getLogger(__name__)

DATA_DIR = Path("data/episodes")
ANSWERS_DIR = Path("data/answers")
METRICS_PATH = Path("data/metrics/dataset.json")
MAX_EXAMPLES = 10


def _chars(points: list[int]) -> str:
    return "".join(f"\\x{{{p:x}}}" for p in points)


# Python's whitespace (str.isspace); every such character lies in the BMP.
_WS = _chars([p for p in range(0x10000) if chr(p).isspace()])
# Python lowercases a final capital sigma to ς: after a cased letter and not before one, skipping
# case-ignorable characters (Unicode SpecialCasing Final_Sigma). Cased = Lu/Ll/Lt + Other_Lowercase/Uppercase.
_CASED = r"\p{Lu}\p{Ll}\p{Lt}" + "".join(
    f"{_chars([a])}-{_chars([b])}"
    for a, b in [(0xAA, 0xAA), (0xBA, 0xBA), (0x2160, 0x217F), (0x24B6, 0x24E9)]
    + [(0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189)]
)
_CASE_IGNORABLE = r"\p{Mn}\p{Me}\p{Cf}\p{Lm}\p{Sk}" + _chars(
    [0x27, 0x2E, 0x3A, 0xB7, 0x387, 0x55F, 0x5F4, 0x2018, 0x2019, 0x2024, 0x2027, 0xFE13, 0xFE52, 0xFE55, 0xFF07]
    + [0xFF0E, 0xFF1A]
)
_FINAL_SIGMA = (
    f"CASE WHEN contains(s, 'Σ') THEN regexp_replace(s, '([{_CASED}][{_CASE_IGNORABLE}]*)Σ"
    f"([{_CASE_IGNORABLE}]*(?:[^{_CASED}{_CASE_IGNORABLE}]|$))', '\\1ς\\2', 'g') ELSE s END"
)
_KEEP = f"[^\\p{{L}}\\p{{N}}_{_WS}]"
# The reward's normalize() as DuckDB macros, in two steps so that a caller can compute the first once per
# string (a macro repeats its argument wherever its body does): lower_sigma(s), then norm_lower(x).
# norm(s) chains them. The regexp_replace calls run only where a regexp_matches (several times cheaper) finds
# something to strip or collapse: most answers need neither.
NORMALIZE_MACROS = (
    f"CREATE MACRO lower_sigma(s) AS lower({_FINAL_SIGMA})",
    "CREATE MACRO norm_lower(x) AS CASE WHEN regexp_matches(x, '[^\\p{L}\\p{N}_ ]|  |^ | $') "
    f"THEN trim(regexp_replace(regexp_replace(x, '{_KEEP}', '', 'g'), '[{_WS}]+', ' ', 'g')) ELSE x END",
    "CREATE MACRO norm(s) AS norm_lower(lower_sigma(s))",
)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _sql_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(_literal(v) for v in values) + "]"


_LEVELS = _sql_list(CORRUPTION_KINDS[1:])
# DuckDB lists are 1-based; position p holds doc_id p - 1. Per-position scalar SQL is several times faster
# than list lambdas here, so the per-document checks are spelled out for each of the NUM_DOCS positions.
_POSITIONS = range(1, NUM_DOCS + 1)
# k{p} (the normalised claim at position p) is this marker when the claim is the answer verbatim, which spares
# normalising it; normalised text never starts with a space, so the marker cannot collide.
_IS_ANSWER = "' '"
_ALIAS_SLOTS = 2


def _each(template: str) -> str:
    """SQL: `template` (with {p} = list position, {d} = doc_id) holds at every position."""
    return " AND ".join(f"coalesce({template.format(p=p, d=p - 1)}, false)" for p in _POSITIONS)


def _true(p: int) -> str:
    """SQL: the claim at position p is the answer or an alias (false when it asserts nothing)."""
    return f"coalesce(list_contains(accepted, k{p}), false)"


def _plurality() -> str:
    """SQL: more documents claim the answer than any single wrong value; the pairwise count runs only when
    the answer's votes do not already exceed all wrong claims together."""
    votes = " + ".join(f"{_true(p)}::INT" for p in _POSITIONS)
    others = " + ".join(f"(k{p} IS NOT NULL AND NOT {_true(p)})::INT" for p in _POSITIONS)
    same = [
        f"CASE WHEN k{p} IS NULL OR {_true(p)} THEN 0 ELSE "
        + " + ".join(f"coalesce(k{q} = k{p}, false)::INT" for q in _POSITIONS)
        + " END"
        for p in _POSITIONS
    ]
    return f"CASE WHEN ({votes}) > ({others}) THEN true ELSE ({votes}) > greatest({', '.join(same)}) END"


# Invariant name -> SQL over the `checked` table, true for a good episode (NULL counts as a violation).
EPISODE_INVARIANTS = {
    "eight_documents": "docs_ok",
    "corrupt_ids": f"len(corrupt_ids) BETWEEN 1 AND {len(TASKS)} AND corrupt_ids[1] >= 0 "
    f"AND corrupt_ids[len(corrupt_ids)] < {NUM_DOCS} AND "
    + " AND ".join(
        f"(len(corrupt_ids) <= {i} OR corrupt_ids[{i}] < corrupt_ids[{i + 1}])" for i in range(1, len(TASKS))
    ),
    "task_matches_corrupt_count": f"task = {_sql_list(TASKS)}[len(corrupt_ids)]",
    "doc_corruption": _each(
        f"CASE WHEN list_contains(corrupt_ids, {{d}}) THEN list_contains({_LEVELS}, doc_corruption[{{p}}]) "
        "ELSE doc_corruption[{p}] = 'none' END"
    ),
    "corrupt_claims_false": " AND ".join(
        f"NOT (list_contains(corrupt_ids, {p - 1}) AND {_true(p)})" for p in _POSITIONS
    ),
    "clean_claims_true": " AND ".join(f"(list_contains(corrupt_ids, {p - 1}) OR {_true(p)})" for p in _POSITIONS),
    "answer_strict_plurality": _plurality(),
    "max_budget": f"max_budget = {MAX_BUDGET}",
    "answer_type": f"list_contains({_sql_list(ANSWER_TYPES)}, answer_type)",
    "ids_sorted_contiguous": "ids_ok",
}
FILE_INVARIANTS = (
    "manifest_ranges",
    "files_match_manifest",
    "row_groups",
    "hidden_columns_unpublished",
    "answers_match",
)
INVARIANTS = (*EPISODE_INVARIANTS, "fact_in_one_split", *FILE_INVARIANTS)


def _checked_sql() -> str:
    """The one pass over the shards, materialised as `checked`: everything the invariants and metrics read,
    with answers, aliases and claims normalised exactly once (a table: DuckDB would otherwise inline k{p}
    into every check that reads it). `lowered` holds lower_sigma() of each string that needs normalising, so
    norm_lower() reads a column; a claim equal to the answer needs no work."""
    lowered = ", ".join(
        [
            "lower_sigma(answer) AS l_answer",
            *(
                f"CASE WHEN len(answer_aliases) BETWEEN {j} AND {_ALIAS_SLOTS} "
                f"THEN lower_sigma(answer_aliases[{j}]) END AS l_alias{j}"
                for j in range(1, _ALIAS_SLOTS + 1)
            ),
            *(
                f"CASE WHEN doc_claims[{p}] != answer THEN lower_sigma(doc_claims[{p}]) END AS l{p}"
                for p in _POSITIONS
            ),
        ]
    )
    # Aliases as scalars (most answers have none or one); longer lists (rare) take the slower lambda.
    aliases = "".join(
        f"WHEN len(answer_aliases) = {n} THEN [{', '.join(f'norm_lower(l_alias{j})' for j in range(1, n + 1))}] "
        for n in range(1, _ALIAS_SLOTS + 1)
    )
    accepted = (
        f"list_distinct(list_concat([{_IS_ANSWER}, norm_lower(l_answer)], "
        f"CASE WHEN len(answer_aliases) = 0 THEN []::VARCHAR[] {aliases}"
        "ELSE list_transform(answer_aliases, lambda a: norm(a)) END))"
    )
    keys = ", ".join(
        f"CASE WHEN doc_claims[{p}] = answer THEN {_IS_ANSWER} ELSE norm_lower(l{p}) END AS k{p}" for p in _POSITIONS
    )
    return f"""
    CREATE TEMP TABLE checked AS
    WITH lowered AS (
        SELECT e.*, s.split AS shard_split, s.first_id AS shard_first_id, {lowered}
        FROM episodes e LEFT JOIN shards s ON e.filename = s.file
    )
    SELECT episode_id, split, task, answer_type, source, fact_id, max_budget, corrupt_ids, doc_corruption,
        list_transform(documents, lambda d: d.doc_id)::BIGINT[] = range({NUM_DOCS})
            AND len(doc_corruption) = {NUM_DOCS} AND len(doc_claims) = {NUM_DOCS} AS docs_ok,
        list_transform(documents, lambda d: length(d.content)) AS doc_chars,
        episode_id = shard_first_id + file_row_number AND split IS NOT DISTINCT FROM shard_split
            AND answer_row IS NOT DISTINCT FROM file_row_number AS ids_ok,
        {accepted} AS accepted, {keys}
    FROM lowered
    """


def connect(
    root: Path,
    shards: list[ShardInfo],
    progress: bool = False,
    answers: Path | None = None,
    answer_shards: list[ShardInfo] = (),
) -> duckdb.DuckDBPyConnection:
    """A connection with the `norm` macro, an `episodes` view over the given shards and a `shards` table.

    A shard with an entry in `answer_shards` (a hidden split's) is joined by episode_id to its answers file under
    `answers`; `answer_row` is the answers row that matched (the shard's own row elsewhere), so ids_ok checks that
    the two files are aligned row by row.
    """
    con = duckdb.connect()
    con.execute(f"SET enable_progress_bar = {str(progress).lower()}")
    for macro in NORMALIZE_MACROS:
        con.execute(macro)
    files = [_literal(str(Path(root).resolve() / s.path)) for s in shards]
    rows = ", ".join(f"({file}, {_literal(s.split)}, {s.first_id})" for file, s in zip(files, shards, strict=True))
    con.execute(f"CREATE TEMP TABLE shards AS SELECT * FROM (VALUES {rows}) AS t(file, split, first_id)")
    kept = {s.path for s in answer_shards}
    full = [file for file, s in zip(files, shards, strict=True) if s.path not in kept]
    hidden = [file for file, s in zip(files, shards, strict=True) if s.path in kept]
    truth = [_literal(str(Path(answers).resolve() / path)) for path in sorted(kept)]
    parts = []
    if full:
        parts.append(f"SELECT *, file_row_number AS answer_row FROM {_read(full)}")
    if hidden:
        published = ", ".join(f"v.{name}" for name in (*VISIBLE_COLUMNS, "filename", "file_row_number"))
        parts.append(
            f"SELECT {published}, a.* EXCLUDE (episode_id, file_row_number), a.file_row_number AS answer_row "
            f"FROM {_read(hidden)} v LEFT JOIN read_parquet([{', '.join(truth)}], file_row_number = true) a "
            "USING (episode_id)"
        )
    con.execute("CREATE VIEW episodes AS " + " UNION ALL BY NAME ".join(parts))
    return con


def _read(files: list[str]) -> str:
    return f"read_parquet([{', '.join(files)}], filename = true, file_row_number = true)"


def _episode_violations(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[int, list]]:
    """Count per invariant from the `checked` table, then the first ids of the violated ones."""
    bad = {name: f"NOT coalesce({sql}, false)" for name, sql in EPISODE_INVARIANTS.items()}
    bad["fact_in_one_split"] = (
        "fact_id IN (SELECT fact_id FROM checked GROUP BY fact_id HAVING count(DISTINCT split) > 1)"
    )
    counts = con.execute(f"SELECT {', '.join(f'count(*) FILTER (WHERE {sql})' for sql in bad.values())} FROM checked")
    found = dict(zip(bad, counts.fetchone(), strict=True))
    violated = [name for name in bad if found[name]]
    examples = [
        con.execute(f"SELECT min(episode_id, {MAX_EXAMPLES}) FROM checked WHERE {bad[name]}").fetchone()[0]
        for name in violated
    ]
    return {name: (found[name], dict(zip(violated, examples, strict=True)).get(name, [])) for name in bad}


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


def read_manifest(root: Path) -> Manifest:
    path = Path(root) / MANIFEST_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: build the dataset first (dvc repro episodes)")
    return Manifest.model_validate_json(path.read_text(encoding="utf-8"))


def validate(root: Path, progress: bool = False, answers: Path | None = None) -> dict:
    """Check every invariant of the dataset folder `root`; return the metrics (violations included).

    A hidden split's episodes are checked with their ground truth joined from the answers folder `answers`.
    `progress` shows DuckDB's progress bar (for the stage's entry point)."""
    root = Path(root).resolve()
    manifest = read_manifest(root)
    file_problems, shards = check_files(root, manifest.shards)
    answer_problems, answer_shards = check_answers(answers, manifest)
    kept = {s.path for s in answer_shards}
    shards = [s for s in shards if s.split not in manifest.hidden_splits or s.path in kept]
    if not shards:
        raise ValueError(f"{root}: no shard matches manifest.json: {file_problems[:MAX_EXAMPLES]}")
    con = connect(root, shards, progress, answers, answer_shards)
    con.execute(_checked_sql())
    found = _episode_violations(con)
    rows, row_groups = row_group_problems(root, shards, manifest.row_group_rows)
    problems = {
        "manifest_ranges": manifest_problems(manifest),
        "files_match_manifest": file_problems + rows,
        "row_groups": row_groups,
        "hidden_columns_unpublished": published_hidden_columns(root, manifest),
        "answers_match": answer_problems,
    }
    found.update({name: (len(items), items[:MAX_EXAMPLES]) for name, items in problems.items()})
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
        "violations": {name: found[name][0] for name in INVARIANTS},
        "violation_examples": {name: found[name][1] for name in INVARIANTS if found[name][0]},
    }


def violation_message(metrics: dict) -> str:
    """One line per violated invariant, naming up to MAX_EXAMPLES episode ids (or files)."""
    lines = [
        f"  {name}: {metrics['violations'][name]} violations, e.g. {examples}"
        for name, examples in metrics["violation_examples"].items()
    ]
    return "dataset invariants violated:\n" + "\n".join(lines) if lines else ""


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    started = time.perf_counter()
    metrics = validate(DATA_DIR, progress=True, answers=ANSWERS_DIR)
    METRICS_PATH.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(METRICS_PATH, json.dumps(metrics, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    if message := violation_message(metrics):
        raise SystemExit(message)
    log.info(
        "validate: %s episodes, all %d invariants hold (%.1f s); metrics in %s",
        f"{metrics['episodes']['total']:,}",
        len(INVARIANTS),
        time.perf_counter() - started,
        METRICS_PATH,
    )


if __name__ == "__main__":
    main()

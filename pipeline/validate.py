"""The validate stage: DuckDB SQL over the written shards checks every invariant of the README's episode contract.

Rows never come into Python: each invariant (pipeline.invariants) is one SQL predicate per episode, aggregated to
a count and the first offending ids, so a million episodes take seconds; the file invariants come from
pipeline.filechecks. Writes the metrics that `dvc metrics show` reads; any violation fails the stage.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

import duckdb

from pipeline.atomic import write_text_atomic
from pipeline.checksums import file_sha256
from pipeline.console import log_to_console
from pipeline.dataset_metrics import dataset_metrics
from pipeline.filechecks import (
    check_answers,
    check_files,
    manifest_problems,
    published_hidden_columns,
    published_schemas,
    row_group_problems,
)
from pipeline.interrupts import interruptible
from pipeline.invariants import EPISODE_VIOLATIONS, INVARIANTS, NORMALIZE_MACROS, checked_sql, sql_literal
from pipeline.schema import MANIFEST_NAME, VISIBLE_COLUMNS, ManifestError, ShardInfo
from pipeline.writer import OutputError, output_file, read_manifest

log = logging.getLogger(__name__)

DATA_DIR = Path("data/episodes")
ANSWERS_DIR = Path("data/answers")
METRICS_PATH = Path("data/metrics/dataset.json")
MAX_EXAMPLES = 10
INTERRUPT_POLL_S = 0.1  # after a Ctrl-C, how often each open connection is interrupted again until the work ends


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
    files = [sql_literal(str(Path(root).resolve() / s.path)) for s in shards]
    rows = ", ".join(f"({file}, {sql_literal(s.split)}, {s.first_id})" for file, s in zip(files, shards, strict=True))
    con.execute(f"CREATE TEMP TABLE shards AS SELECT * FROM (VALUES {rows}) AS t(file, split, first_id)")
    kept = {s.path for s in answer_shards}
    full = [file for file, s in zip(files, shards, strict=True) if s.path not in kept]
    hidden = [file for file, s in zip(files, shards, strict=True) if s.path in kept]
    truth = [sql_literal(str(Path(answers).resolve() / path)) for path in sorted(kept)]
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
    filters = ", ".join(f"count(*) FILTER (WHERE {sql})" for sql in EPISODE_VIOLATIONS.values())
    found = dict(zip(EPISODE_VIOLATIONS, con.execute(f"SELECT {filters} FROM checked").fetchone(), strict=True))
    return {name: (count, _first_ids(con, EPISODE_VIOLATIONS[name]) if count else []) for name, count in found.items()}


def _first_ids(con: duckdb.DuckDBPyConnection, bad: str) -> list[int]:
    return con.execute(f"SELECT min(episode_id, {MAX_EXAMPLES}) FROM checked WHERE {bad}").fetchone()[0]


def validate(
    root: Path,
    progress: bool = False,
    answers: Path | None = None,
    opened: Callable[[duckdb.DuckDBPyConnection], object] | None = None,
) -> dict:
    """Check every invariant of the dataset folder `root`; return the metrics (violations included), bound to the
    build by its manifest's sha256 (the manifest holds every shard's), which publishing checks.

    A hidden split's episodes are checked with their ground truth joined from the answers folder `answers`.
    `progress` shows DuckDB's progress bar (for the stage's entry point); `opened` is given the DuckDB connection
    (the stage's entry point interrupts it on Ctrl-C)."""
    root = Path(root).resolve()
    manifest = read_manifest(root)
    manifest_sha256 = file_sha256(root / MANIFEST_NAME)
    file_problems, shards = check_files(root, manifest.shards, published_schemas(manifest))
    answer_problems, answer_shards = check_answers(answers, manifest)
    kept = {s.path for s in answer_shards}
    shards = [s for s in shards if s.split not in manifest.hidden_splits or s.path in kept]
    if not shards:
        raise ManifestError(f"{root}: no shard matches manifest.json: {file_problems[:MAX_EXAMPLES]}")
    con = connect(root, shards, progress, answers, answer_shards)
    if opened is not None:
        opened(con)
    con.execute(checked_sql())
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
    return {
        **dataset_metrics(con, manifest),
        "manifest_sha256": manifest_sha256,
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


def interruptibly(work: Callable[[Callable[[duckdb.DuckDBPyConnection], object]], dict]) -> dict:
    """`work(opened)` in a worker thread while this one wakes each INTERRUPT_POLL_S, so that a Ctrl-C raises
    KeyboardInterrupt here whichever thread the kernel gave the signal (one blocked on a lock never runs the
    handler); then every connection `work` gave `opened` is interrupted, again each INTERRUPT_POLL_S until the work
    ends (a query begun after one interrupt meets the next), and the KeyboardInterrupt goes on. Python's handler takes
    the signal, not DuckDB's, which the stage relied on before and which took it only while a query ran in the
    stage's own thread."""
    connections: list[duckdb.DuckDBPyConnection] = []
    with ThreadPoolExecutor(1, thread_name_prefix="validate") as pool:
        future = pool.submit(work, connections.append)
        try:
            while not future.done():
                wait([future], timeout=INTERRUPT_POLL_S)
        except KeyboardInterrupt:
            while not future.done():
                for con in connections:
                    con.interrupt()
                wait([future], timeout=INTERRUPT_POLL_S)
            raise
        return future.result()


def main(data_dir: Path = DATA_DIR, answers_dir: Path = ANSWERS_DIR, metrics_path: Path = METRICS_PATH) -> None:
    """The stage; a folder it cannot check (ManifestError) or a metrics path it cannot write (OutputError, before
    any work) ends it with a one-line message (exit status 1); so does Ctrl-C (exit status 130), no metrics written."""
    log_to_console()
    started = time.perf_counter()
    with interruptible("validate"):
        try:
            output_file(metrics_path)
            metrics = interruptibly(lambda opened: validate(data_dir, True, answers_dir, opened))
        except (ManifestError, OutputError) as err:
            raise SystemExit(f"validate: {err}") from None
        try:
            metrics_path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(metrics_path, json.dumps(metrics, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        except OSError as err:  # the disk filled up: no metrics, so nothing vouches for the build
            raise SystemExit(f"validate: writing {metrics_path} failed: {err}") from None
    if message := violation_message(metrics):
        raise SystemExit(message)
    log.info(
        "validate: %s episodes, all %d invariants hold (%.1f s); metrics in %s",
        f"{metrics['episodes']['total']:,}",
        len(INVARIANTS),
        time.perf_counter() - started,
        metrics_path,
    )


def cli(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pipeline.validate", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA_DIR, help="the dataset folder (default: %(default)s)")
    parser.add_argument(
        "--answers", type=Path, default=ANSWERS_DIR, help="the hidden splits' ground truth (default: %(default)s)"
    )
    parser.add_argument("--metrics", type=Path, default=METRICS_PATH, help="the metrics file (default: %(default)s)")
    args = parser.parse_args(argv)
    main(args.data, args.answers, args.metrics)


if __name__ == "__main__":
    cli()

"""Validate stage: a good folder passes, and every invariant, broken on purpose in a folder written with pyarrow,
fails naming the episode (or file)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_writer import write_folder

from pipeline.invariants import INVARIANTS
from pipeline.schema import EPISODE_SCHEMA, MANIFEST_NAME, Manifest, ManifestError
from pipeline.validate import validate, violation_message
from pipeline.writer import file_sha256, write_manifest

REPO = Path(__file__).resolve().parents[2]
COUNTS = {"train": 40, "validation": 12, "test": 12}
TRAIN0 = "data/train-00000-of-00003.parquet"
# Row groups of 8: train's 5 groups fill 3 shards of 16, 16 and 8 rows, which the edits below address.
GROUP = 8


def test_good_folder_passes_with_metrics(tmp_path):
    write_folder(tmp_path, COUNTS, row_group_rows=GROUP)
    metrics = validate(tmp_path)
    assert metrics["violations"] == dict.fromkeys(INVARIANTS, 0)
    assert metrics["violation_examples"] == {} and violation_message(metrics) == ""
    assert metrics["episodes"] == {"total": 64, **COUNTS}
    assert metrics["task"] == {"easy": 16, "medium": 16, "hard": 16, "adversarial": 16}
    assert metrics["corruption_kind"] == {"none": 352, "number": 32, "entity": 80, "inversion": 32, "coherent": 16}
    assert metrics["answer_type"]["organization"] == 0 and metrics["answer_type"]["year"] == 16
    assert metrics["source"] == {"elements": 16, "geonames": 16, "synthetic": 32}
    chars = metrics["doc_chars"]
    assert chars["all"]["count"] == 512 and chars["clean"]["count"] + chars["corrupt"]["count"] == 512
    assert chars["all"]["p50"] <= chars["all"]["p95"] <= chars["all"]["max"]
    assert metrics["bytes"]["total"] == sum(p.stat().st_size for p in (tmp_path / "data").iterdir())


def rewrite(root: Path, path: str, edit, row_group_rows: int = GROUP) -> None:
    """Apply `edit` to the rows of one shard, write it with pyarrow, and keep the manifest's checksums true."""
    rows = pq.read_table(root / path).to_pylist()
    edit(rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=EPISODE_SCHEMA), root / path, row_group_size=row_group_rows)
    fix_checksums(root)


def fix_checksums(root: Path) -> None:
    manifest = Manifest.model_validate_json((root / MANIFEST_NAME).read_text())
    shards = [
        s.model_copy(update={"bytes": (root / s.path).stat().st_size, "sha256": file_sha256(root / s.path)})
        for s in manifest.shards
    ]
    write_manifest(root, manifest.model_copy(update={"shards": shards}))


def row(rows: list[dict], episode_id: int) -> dict:
    return next(r for r in rows if r["episode_id"] == episode_id)


def set_field(target: int, /, **values):
    return lambda rows: row(rows, target).update(values)


def set_item(target: int, column: str, position, value):
    """Set element `position` (an index, or a function of the episode giving one) of a list column."""

    def edit(rows):
        episode = row(rows, target)
        episode[column][position(episode) if callable(position) else position] = value

    return edit


def set_claim(target: int, position, claim):
    """Give document `position` of `target` the claim `claim`, its content stating it (as a built document does)."""

    def edit(rows):
        episode = row(rows, target)
        at = position(episode) if callable(position) else position
        episode["doc_claims"][at] = claim
        if claim is not None:
            episode["documents"][at]["content"] = f"Edited source: the answer is {claim}."

    return edit


def first_corrupt(episode: dict) -> int:
    return episode["corrupt_ids"][0]


def first_clean(episode: dict) -> int:
    return next(d for d in range(8) if d not in episode["corrupt_ids"])


def claim_at_corrupt(target: int, claims):
    """Give the corrupt documents of `target` the claims in `claims`, in order."""

    def edit(rows):
        episode = row(rows, target)
        for position, claim in zip(episode["corrupt_ids"], claims, strict=True):
            set_claim(target, position, claim)(rows)

    return edit


def swap_first_rows(rows):
    rows[0], rows[1] = rows[1], rows[0]


TRAIN1, TRAIN2 = "data/train-00001-of-00003.parquet", "data/train-00002-of-00003.parquet"
VALIDATION = "data/validation-00000-of-00001.parquet"
# Episode e has 1 + e % 4 corrupt documents at (e + 3r) % 8 and answer ANSWERS[e % 4] (e % 4 == 1: "Zoë Brontë-Li",
# which normalises to "zoë brontëli", alias "Zoe Bronte Li"). Each edit breaks one episode in one way.
EDITS = {
    TRAIN0: [
        lambda rows: row(rows, 1)["documents"].pop(),
        lambda rows: row(rows, 2)["documents"][0].update(doc_id=3),
        lambda rows: row(rows, 9)["doc_claims"].pop(),  # its last document is clean: it also claims nothing now
        lambda rows: row(rows, 6)["corrupt_ids"].reverse(),
        set_field(8, task="medium"),
        set_item(10, "doc_corruption", first_corrupt, "none"),
        set_item(11, "doc_corruption", first_corrupt, "typo"),
        set_item(12, "doc_corruption", first_clean, "number"),
        set_claim(13, first_corrupt, "ZOË  BRONTË-LI!"),
        set_claim(14, first_clean, None),
        claim_at_corrupt(7, ["41"] * 4),  # 4 corrupt documents agree: a tie with the 4 clean ones
        claim_at_corrupt(3, ["41"] * 3 + ["43"]),  # 4 against 3: still a strict plurality
        set_field(15, max_budget=11),
        set_field(4, task="medium", corrupt_ids=[4, 8]),  # a document the episode does not have
    ],
    TRAIN1: [
        set_claim(17, first_corrupt, "zoe bronte li"),
        set_claim(22, first_corrupt, None),  # a corrupt document that asserts nothing
        set_claim(21, first_clean, "Zoe Bronte"),
        set_field(16, answer_type="colour"),
        set_field(18, episode_id=500),
        set_field(19, split="test"),
        set_field(25, answer_aliases=["x", "y", "Zoe B. Li"]),  # long alias lists take another path
        set_claim(25, first_corrupt, "zoe b li"),
        set_field(29, answer_aliases=["x", "Z. Brontë"]),
        set_claim(29, first_corrupt, "z brontë"),
        set_item(24, "doc_corruption", first_corrupt, "coherent"),  # an easy episode's only corrupt document
        set_item(26, "doc_corruption", lambda episode: episode["corrupt_ids"][2], "coherent"),  # rank 3's inversion
        set_item(30, "doc_corruption", first_corrupt, "number"),  # its claim (大阪) has no number
        lambda rows: row(rows, 20)["documents"][0].update(content="A document that claims nothing."),
        lambda rows: row(rows, 23)["documents"][5].update(title=""),
        set_field(28, task="medium", corrupt_ids=[-1, 4]),
        set_field(27, answer_aliases=["-"]),  # normalises to "": an empty submission would score as the answer
        set_field(31, answer_aliases=["x", "y", "?!"]),
    ],
    TRAIN2: [swap_first_rows],
    VALIDATION: [set_field(41, fact_id="train:0")],
}
EXPECTED = {
    "eight_documents": [1, 2, 9],
    "corrupt_ids": [4, 6, 28],
    "task_matches_corrupt_count": [8],
    "doc_corruption": [10, 11, 12],
    "corrupt_claims_false": [13, 17, 22, 25, 29],
    "clean_claims_true": [9, 14, 21],
    "answer_strict_plurality": [7],
    "corruption_levels": [24, 26],
    "number_claims_numeric": [30],
    "documents_state_claims": [20, 23],
    "max_budget": [15],
    "answer_type": [16],
    "answers_have_words": [27, 31],
    "ids_sorted_contiguous": [19, 32, 33, 500],
    "fact_in_one_split": [0, 41],
}


def test_every_broken_invariant_is_named_with_its_episodes(tmp_path):
    write_folder(tmp_path, COUNTS, row_group_rows=GROUP)
    for path, edits in EDITS.items():
        rewrite(tmp_path, path, lambda rows, edits=edits: [edit(rows) for edit in edits])
    metrics = validate(tmp_path)
    assert metrics["violation_examples"] == EXPECTED
    assert {name for name, count in metrics["violations"].items() if count} == set(EXPECTED)
    message = violation_message(metrics)
    for name, ids in EXPECTED.items():
        assert f"{name}: {len(ids)} violations, e.g. {ids}" in message


def test_file_invariants_name_the_files(tmp_path):
    write_folder(tmp_path, COUNTS, row_group_rows=GROUP)
    table = pq.read_table(tmp_path / TRAIN1)
    pq.write_table(table, tmp_path / TRAIN1, row_group_size=3)  # true checksums, wrong row groups
    fix_checksums(tmp_path)
    data = bytearray((tmp_path / TRAIN0).read_bytes())
    data[100] ^= 0xFF
    (tmp_path / TRAIN0).write_bytes(bytes(data))
    (tmp_path / TRAIN2).rename(tmp_path / "data" / "extra.parquet")
    manifest = Manifest.model_validate_json((tmp_path / MANIFEST_NAME).read_text())
    splits = {**manifest.splits, "test": manifest.splits["test"].model_copy(update={"first_id": 60})}
    write_manifest(tmp_path, manifest.model_copy(update={"splits": splits}))

    examples = validate(tmp_path)["violation_examples"]
    assert examples["manifest_ranges"] == ["split test: its shards hold 12 ids in 52..63, the manifest says 60..71"]
    assert examples["files_match_manifest"] == [
        "data/extra.parquet: not in the manifest",
        f"{TRAIN0}: bytes or sha256 differ from the manifest",
        f"{TRAIN2}: missing",
    ]
    assert examples["row_groups"] == [f"{TRAIN1}: row groups [3, 3, 3, 3, 3, 1], expected groups of {GROUP}"]
    assert set(examples) == {"manifest_ranges", "files_match_manifest", "row_groups"}


def test_a_shard_of_another_schema_or_a_stray_file_is_named_not_read(tmp_path):
    """A manifest edited to a changed file's checksums passed a column added or retyped, and a dropped one was a
    DuckDB traceback; a file beside the shards with another suffix passed, though `load_dataset` reads it as one."""
    write_folder(tmp_path, COUNTS, row_group_rows=GROUP)
    table = pq.read_table(tmp_path / TRAIN0)
    pq.write_table(table.append_column("gold", table["answer"]), tmp_path / TRAIN0, row_group_size=GROUP)
    budget = table.schema.get_field_index("max_budget")
    retyped = pq.read_table(tmp_path / TRAIN1)
    retyped = retyped.set_column(
        budget, pa.field("max_budget", pa.int32(), False), retyped["max_budget"].cast("int32")
    )
    pq.write_table(retyped, tmp_path / TRAIN1, row_group_size=GROUP)
    pq.write_table(pq.read_table(tmp_path / TRAIN2).drop(["source"]), tmp_path / TRAIN2, row_group_size=GROUP)
    fix_checksums(tmp_path)
    (tmp_path / f"{TRAIN0}.bak").write_bytes((tmp_path / TRAIN0).read_bytes())

    metrics = validate(tmp_path)
    assert metrics["violation_examples"]["files_match_manifest"] == [
        f"{TRAIN0}.bak: not in the manifest",
        f"{TRAIN0}: columns differ from the schema: extra ['gold']",
        f"{TRAIN1}: columns differ from the schema: max_budget: int32 not null (expected int8 not null)",
        f"{TRAIN2}: columns differ from the schema: missing ['source']",
    ]
    assert metrics["episodes"]["train"] == 0, "no shard of another schema is read"


def test_a_column_given_twice_or_a_shard_of_no_split_is_named_not_a_traceback(tmp_path):
    write_folder(tmp_path, COUNTS, row_group_rows=GROUP)
    validation, test = (f"data/{split}-00000-of-00001.parquet" for split in ("validation", "test"))
    twice = pq.read_table(tmp_path / validation)
    pq.write_table(twice.append_column("answer", twice["answer"]), tmp_path / validation, row_group_size=GROUP)
    fix_checksums(tmp_path)
    manifest = Manifest.model_validate_json((tmp_path / MANIFEST_NAME).read_text())
    shards = [s.model_copy(update={"split": "dev"}) if s.path == test else s for s in manifest.shards]
    write_manifest(tmp_path, manifest.model_copy(update={"shards": shards}))

    examples = validate(tmp_path)["violation_examples"]
    assert examples["files_match_manifest"] == [
        f"{validation}: columns differ from the schema: more than once ['answer']",
        f"{test}: split 'dev' is not one of ['train', 'validation', 'test']",
    ]
    assert "split test: its shards hold no id, the manifest says 52..63" in examples["manifest_ranges"]


def test_splits_out_of_order_are_named_even_when_the_shards_tile(tmp_path):
    """Validation and test swap their id ranges, shards included: every range still tiles, the order does not."""
    write_folder(tmp_path, COUNTS, row_group_rows=GROUP)
    manifest = Manifest.model_validate_json((tmp_path / MANIFEST_NAME).read_text())
    validation, test = manifest.splits["validation"], manifest.splits["test"]
    swapped = {"validation": test.first_id, "test": validation.first_id}
    splits = {
        **manifest.splits,
        **{name: manifest.splits[name].model_copy(update={"first_id": first}) for name, first in swapped.items()},
    }
    shards = [
        s.model_copy(update={"first_id": swapped[s.split]}) if s.split in swapped else s for s in manifest.shards
    ]
    write_manifest(tmp_path, manifest.model_copy(update={"splits": splits, "shards": shards}))

    examples = validate(tmp_path)["violation_examples"]
    assert examples["manifest_ranges"] == [
        "splits in id order are ['train', 'test', 'validation'], expected ['train', 'validation', 'test']"
    ]


def run_stage(cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "pipeline.validate"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_stage_writes_metrics_and_fails_on_violation(tmp_path):
    root = tmp_path / "data" / "episodes"
    root.mkdir(parents=True)
    write_folder(root, COUNTS, row_group_rows=GROUP)
    done = run_stage(tmp_path)
    assert done.returncode == 0, done.stderr
    metrics = json.loads((tmp_path / "data" / "metrics" / "dataset.json").read_text())
    assert metrics["episodes"]["total"] == 64 and sum(metrics["violations"].values()) == 0

    rewrite(root, TRAIN0, set_field(9, max_budget=0))
    failed = run_stage(tmp_path)
    assert failed.returncode != 0
    assert "max_budget: 1 violations, e.g. [9]" in failed.stderr


# The stage with its episode checks replaced by a query that runs until interrupted, and one SIGINT once that query
# runs: 0.5 s after the check's SQL was taken, the worker thread then inside DuckDB. A daemon thread: the stage's exit
# does not wait for it.
ENDLESS_CHECK = """
import os, signal, threading, time
from pipeline import validate

def interrupt():
    time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGINT)

def endless_check():
    threading.Thread(target=interrupt, daemon=True).start()
    return "SELECT count(*) FROM range(1000000000000000) t(x) WHERE x % 7 = 3"

validate.checked_sql = endless_check
validate.cli()
"""


def test_ctrl_c_mid_query_ends_the_stage_in_one_line_and_writes_no_metrics(tmp_path):
    """The stage's thread takes the SIGINT and interrupts DuckDB's query: DuckDB's own handling of it ended in a
    traceback, and left the query running where the stage began with SIGINT ignored (a shell's background job, as the
    suite may run in: then only DuckDB's handler, installed while it ran a query, took the signal)."""
    write_folder(tmp_path / "data" / "episodes", COUNTS, row_group_rows=GROUP)
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    done = subprocess.run(
        [sys.executable, "-c", ENDLESS_CHECK],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal's foreground job starts
    )

    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.replace("\r", "\n").splitlines()[-1] == "validate: interrupted; nothing was written"
    assert not (tmp_path / "data" / "metrics").exists()


def test_missing_manifest_is_a_clear_error(tmp_path):
    with pytest.raises(ManifestError, match="manifest.json: missing; build the dataset"):
        validate(tmp_path)


@pytest.mark.parametrize(
    "version",
    [{"schema_version": 2}, {"reward_version": "v0"}, {"schema_version": 2, "added_by_schema_2": [1]}],
    ids=["schema", "reward", "newer-with-a-field"],
)
def test_a_build_of_another_schema_or_reward_is_refused(tmp_path, version):
    """By its versions, also when a newer schema's manifest holds a field this code does not know."""
    write_folder(tmp_path, COUNTS, row_group_rows=GROUP)
    manifest = json.loads((tmp_path / MANIFEST_NAME).read_text())
    (tmp_path / MANIFEST_NAME).write_text(json.dumps({**manifest, **version}))
    with pytest.raises(ManifestError, match=r"json: built for schema \S+ / reward \S+, this code is schema 1"):
        validate(tmp_path)


def test_dataset_built_by_the_pipeline_passes(dataset_dir):
    metrics = validate(dataset_dir)
    assert metrics["violation_examples"] == {}
    manifest = Manifest.model_validate_json((dataset_dir / MANIFEST_NAME).read_text())
    assert metrics["episodes"]["total"] == sum(s.num_rows for s in manifest.shards)

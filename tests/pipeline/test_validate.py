"""Validate stage: the SQL normalisation equals the reward's, a good folder passes, and every invariant,
broken on purpose in a folder written with pyarrow, fails naming the episode (or file)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import unicodedata
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_writer import write_folder

from pipeline.schema import EPISODE_SCHEMA, Manifest
from pipeline.validate import INVARIANTS, NORMALIZE_MACROS, length_stats, validate, violation_message
from pipeline.writer import MANIFEST_NAME, file_sha256, write_manifest
from reward_api.scoring import normalize

REPO = Path(__file__).resolve().parents[2]
COUNTS = {"train": 40, "validation": 12, "test": 12}
TRAIN0 = "data/train-00000-of-00003.parquet"


def sql_normalize(texts: list[str]) -> list[str]:
    con = duckdb.connect()
    for macro in NORMALIZE_MACROS:
        con.execute(macro)
    con.register("texts", pa.table({"s": pa.array(texts, pa.string())}))
    return con.execute("SELECT norm(s) FROM texts").fetchnumpy()["norm(s)"].tolist()


def test_sql_normalize_equals_python_on_every_code_point():
    """Every assigned code point alone, and where it decides whether a capital sigma is final."""
    chars = [
        chr(p)
        for p in range(sys.maxunicode + 1)
        if unicodedata.category(chr(p)) not in ("Cn", "Cs", "Co") and chr(p) != "\0"
    ]
    texts = chars + ["Α" + c + "Σ" for c in chars] + ["ΑΣ" + c for c in chars]
    mismatched = [(t, normalize(t), n) for t, n in zip(texts, sql_normalize(texts), strict=True) if normalize(t) != n]
    assert mismatched == []


def test_sql_normalize_equals_python_on_answers():
    samples = [
        "Zoë Brontë-Li", "Zoe\u0308", "İstanbul", "STRASSE ẞ", "ΟΔΥΣΣΕΥΣ", "ΑΣ.Σ", "东京 / 東京都", "O'Brien",
        "l’Hôpital", "1,887", "3.14159", "  a\u00a0\u2003b\tc\n ", "¡Hola!", "Ǆemal", "x\u200by", "___", "-", "",
        "résumé café", "Москва", "الرياض", "दिल्ली", "ⅫΣ", "ⓐΣ", "Σ", "ς", "ΑΣ'Β", "12 345,6",
    ]  # fmt: skip
    rng = random.Random(7)
    alphabet = "aZéü ΣσςΑ'’.,-_\u0301\u00a0\u3000東1٣Ⅻⓐ\t!ß"
    samples += ["".join(rng.choices(alphabet, k=rng.randint(0, 12))) for _ in range(5000)]
    assert sql_normalize(samples) == [normalize(s) for s in samples]


def test_good_folder_passes_with_metrics(tmp_path):
    write_folder(tmp_path, COUNTS)
    metrics = validate(tmp_path)
    assert metrics["violations"] == dict.fromkeys(INVARIANTS, 0)
    assert metrics["violation_examples"] == {} and violation_message(metrics) == ""
    assert metrics["episodes"] == {"total": 64, **COUNTS}
    assert metrics["task"] == {"easy": 16, "medium": 16, "hard": 16, "adversarial": 16}
    assert metrics["corruption_kind"] == {"none": 352, "number": 64, "entity": 48, "inversion": 32, "coherent": 16}
    assert metrics["answer_type"]["organization"] == 0 and metrics["answer_type"]["year"] == 16
    assert metrics["source"] == {"elements": 16, "geonames": 16, "synthetic": 32}
    chars = metrics["doc_chars"]
    assert chars["all"]["count"] == 512 and chars["clean"]["count"] + chars["corrupt"]["count"] == 512
    assert chars["all"]["p50"] <= chars["all"]["p95"] <= chars["all"]["max"]
    assert metrics["bytes"]["total"] == sum(p.stat().st_size for p in (tmp_path / "data").iterdir())


def test_length_stats_use_nearest_rank():
    assert length_stats({n: 1 for n in range(1, 101)}) == {
        "count": 100,
        "mean": 50.5,
        "p50": 50,
        "p95": 95,
        "max": 100,
    }
    assert length_stats({7: 3, 300: 1}) == {"count": 4, "mean": 80.25, "p50": 7, "p95": 300, "max": 300}
    assert length_stats({}) == {"count": 0, "mean": None, "p50": None, "p95": None, "max": None}


def rewrite(root: Path, path: str, edit, row_group_rows: int = 4) -> None:
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


def set_claim(episode_id: int, position: int, claim):
    return lambda rows: row(rows, episode_id)["doc_claims"].__setitem__(position, claim)


def first_corrupt(rows: list[dict], episode_id: int) -> int:
    return row(rows, episode_id)["corrupt_ids"][0]


def clean_position(rows: list[dict], episode_id: int) -> int:
    return next(d for d in range(8) if d not in row(rows, episode_id)["corrupt_ids"])


def same_wrong_claims(rows):
    episode = row(rows, 7)  # adversarial: 4 corrupt documents against 4 clean ones
    for position in episode["corrupt_ids"]:
        episode["doc_claims"][position] = "Atlantis"


def swap_rows(rows):
    rows[4], rows[5] = rows[5], rows[4]


# (invariant or (invariant, also violated...), shard, edit, ids the message must name).
# Episode 5 is "medium": documents 0 and 5 are corrupt.
CASES = [
    ("eight_documents", TRAIN0, lambda rows: row(rows, 5)["documents"].pop(), [5]),
    ("eight_documents", TRAIN0, lambda rows: row(rows, 5)["documents"][0].update(doc_id=3), [5]),
    # Episode 5's last document is clean, so a missing last claim also leaves it claiming nothing.
    (("eight_documents", "clean_claims_true"), TRAIN0, lambda rows: row(rows, 5)["doc_claims"].pop(), [5]),
    ("corrupt_ids", TRAIN0, lambda rows: row(rows, 5)["corrupt_ids"].reverse(), [5]),
    ("task_matches_corrupt_count", TRAIN0, set_field(5, task="easy"), [5]),
    (
        "doc_corruption",
        TRAIN0,
        lambda rows: row(rows, 5)["doc_corruption"].__setitem__(first_corrupt(rows, 5), "none"),
        [5],
    ),
    (
        "doc_corruption",
        TRAIN0,
        lambda rows: row(rows, 5)["doc_corruption"].__setitem__(first_corrupt(rows, 5), "typo"),
        [5],
    ),
    (
        "doc_corruption",
        TRAIN0,
        lambda rows: row(rows, 5)["doc_corruption"].__setitem__(clean_position(rows, 5), "number"),
        [5],
    ),
    # "Zoë Brontë-Li" normalises to "zoë brontëli": a corrupt document asserting it in other clothes.
    ("corrupt_claims_false", TRAIN0, lambda rows: set_claim(5, first_corrupt(rows, 5), "ZOË  BRONTË-LI!")(rows), [5]),
    ("corrupt_claims_false", TRAIN0, lambda rows: set_claim(5, first_corrupt(rows, 5), "zoe bronte li")(rows), [5]),
    ("clean_claims_true", TRAIN0, lambda rows: set_claim(5, clean_position(rows, 5), "Zoe Bronte")(rows), [5]),
    ("clean_claims_true", TRAIN0, lambda rows: set_claim(5, clean_position(rows, 5), None)(rows), [5]),
    ("answer_strict_plurality", TRAIN0, same_wrong_claims, [7]),
    ("max_budget", TRAIN0, set_field(5, max_budget=11), [5]),
    ("answer_type", TRAIN0, set_field(5, answer_type="colour"), [5]),
    ("ids_sorted_contiguous", TRAIN0, swap_rows, [4, 5]),
    ("ids_sorted_contiguous", TRAIN0, set_field(5, episode_id=500), [500]),
    ("ids_sorted_contiguous", TRAIN0, set_field(5, split="test"), [5]),
    ("fact_in_one_split", "data/validation-00000-of-00001.parquet", set_field(41, fact_id="train:5"), [5, 41]),
]


@pytest.mark.parametrize(("invariant", "path", "edit", "ids"), CASES)
def test_each_broken_invariant_is_named_with_its_episodes(tmp_path, invariant, path, edit, ids):
    expected = {invariant} if isinstance(invariant, str) else set(invariant)
    invariant = invariant if isinstance(invariant, str) else invariant[0]
    write_folder(tmp_path, COUNTS)
    rewrite(tmp_path, path, edit)
    metrics = validate(tmp_path)
    assert {name for name, count in metrics["violations"].items() if count} == expected
    assert metrics["violation_examples"][invariant] == ids
    assert f"{invariant}: {len(ids)} violations, e.g. {ids}" in violation_message(metrics)


def test_plurality_holds_when_wrong_claims_disagree(tmp_path):
    def split_vote(rows):
        episode = row(rows, 7)
        for n, position in enumerate(episode["corrupt_ids"]):
            episode["doc_claims"][position] = "Atlantis" if n < 3 else "Lemuria"

    write_folder(tmp_path, COUNTS)
    rewrite(tmp_path, TRAIN0, split_vote)
    assert validate(tmp_path)["violation_examples"] == {}


def break_manifest_range(root: Path) -> None:
    manifest = Manifest.model_validate_json((root / MANIFEST_NAME).read_text())
    splits = {**manifest.splits, "test": manifest.splits["test"].model_copy(update={"first_id": 60})}
    write_manifest(root, manifest.model_copy(update={"splits": splits}))


def tamper(root: Path) -> None:
    path = root / TRAIN0
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF
    path.write_bytes(bytes(data))


def regroup(root: Path) -> None:
    table = pq.read_table(root / TRAIN0)
    pq.write_table(table, root / TRAIN0, row_group_size=3)
    fix_checksums(root)


@pytest.mark.parametrize(
    ("invariant", "damage", "message"),
    [
        ("manifest_ranges", break_manifest_range, "test starts at 60, expected 52"),
        ("files_match_manifest", tamper, f"{TRAIN0}: bytes or sha256 differ from the manifest"),
        ("files_match_manifest", lambda root: (root / TRAIN0).rename(root / "data" / "extra.parquet"), "missing"),
        ("row_groups", regroup, f"{TRAIN0}: row groups [3, 3, 3, 3, 3, 1], expected groups of 4"),
    ],
)
def test_file_invariants_name_the_file(tmp_path, invariant, damage, message):
    write_folder(tmp_path, COUNTS)
    damage(tmp_path)
    metrics = validate(tmp_path)
    assert metrics["violations"][invariant] >= 1
    assert any(message in example for example in metrics["violation_examples"][invariant])


def run_stage(cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "pipeline.validate"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_stage_writes_metrics_and_fails_on_violation(tmp_path):
    root = tmp_path / "data" / "episodes"
    root.mkdir(parents=True)
    write_folder(root, COUNTS)
    done = run_stage(tmp_path)
    assert done.returncode == 0, done.stderr
    metrics = json.loads((tmp_path / "data" / "metrics" / "dataset.json").read_text())
    assert metrics["episodes"]["total"] == 64 and sum(metrics["violations"].values()) == 0

    rewrite(root, TRAIN0, set_field(9, max_budget=0))
    failed = run_stage(tmp_path)
    assert failed.returncode != 0
    assert "max_budget: 1 violations, e.g. [9]" in failed.stderr


def test_missing_manifest_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="manifest.json not found"):
        validate(tmp_path)


def test_dataset_built_by_the_pipeline_passes(dataset_dir):
    metrics = validate(dataset_dir)
    assert metrics["violation_examples"] == {}
    manifest = Manifest.model_validate_json((dataset_dir / MANIFEST_NAME).read_text())
    assert metrics["episodes"]["total"] == sum(s.num_rows for s in manifest.shards)

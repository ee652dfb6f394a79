"""Crash safety of the facts and validate stages: SIGKILL at each of a stage's atomic renames (its outputs
written under temporary names, not yet all in place) leaves nothing a later stage would read, and a re-run
ends byte-identical to an uninterrupted build. The episodes stage's kill test is in tests/test_dvc_pipeline.py.

The kill point is deterministic: the stage runs in a subprocess whose `os.replace` sends SIGKILL to the
process at its k-th call, so the kill lands after the temporary files are complete and before the rename.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline import facts, validate
from pipeline.episodes import FACTS_FILE
from tests.conftest import SEED, SMALL_FACTS

ROOT = Path(__file__).resolve().parents[2]
# Prepended to the stage's code: the k-th os.replace (argv[1]) kills the process instead of renaming.
KILL_AT_RENAME = """
import os, signal, sys
_replace, _calls = os.replace, []
def _killing_replace(src, dst):
    if len(_calls) == int(sys.argv[1]):
        os.kill(os.getpid(), signal.SIGKILL)
    _calls.append(dst)
    _replace(src, dst)
os.replace = _killing_replace
"""


def run_killed(code: str, rename: int, cwd: Path) -> None:
    """Run `code` in a subprocess (cwd `cwd`) that is SIGKILLed at its `rename`-th os.replace; it must die so."""
    proc = subprocess.run(
        [sys.executable, "-c", KILL_AT_RENAME + code, str(rename)],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, f"not killed at rename {rename}:\n{proc.stderr[-2000:]}"


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def staged(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".*.tmp"))


@pytest.mark.parametrize("rename", [0, 1])
def test_facts_stage_killed_before_its_outputs_are_in_place_reruns_identically(facts_dir, tmp_path, rename):
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"seed": SEED, "facts": SMALL_FACTS.model_dump(mode="json")}))
    out = tmp_path / "data" / "facts"
    code = "from pathlib import Path\nfrom pipeline.facts import main\nmain(Path('params.yaml'), Path('data/facts'))"
    run_killed(code, rename, tmp_path)

    assert staged(out), "the kill landed with outputs staged under temporary names"
    assert not (out / FACTS_FILE).exists(), "no facts.parquet for the episodes stage to read"

    facts.main(params, out)
    assert snapshot(out) == snapshot(facts_dir)  # the suite's facts: write_facts(build_facts(SMALL_FACTS, SEED))


def test_validate_stage_killed_before_its_metrics_are_in_place_reruns_identically(dataset_dir, tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / validate.DATA_DIR).symlink_to(dataset_dir, target_is_directory=True)
    metrics = tmp_path / validate.METRICS_PATH
    code = "from pipeline.validate import main\nmain()"
    run_killed(code, 0, tmp_path)

    assert staged(metrics.parent) == [f".{metrics.name}.tmp"], "the kill landed with the metrics staged"
    assert not metrics.exists(), "no metrics file for DVC or the publish stage to read"

    monkeypatch.chdir(tmp_path)
    validate.main()
    rerun = metrics.read_bytes()
    metrics.unlink()
    validate.main()  # an uninterrupted run
    assert metrics.read_bytes() == rerun and staged(metrics.parent) == []

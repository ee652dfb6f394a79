"""benchmarks/build.py refuses a size the shard layout cannot take before it runs anything."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_size_too_small_for_the_shard_layout_is_refused_before_any_run(tmp_path):
    """3,000 episodes leave 58 for validation, one row group for params.yaml's 8 shards: the child building them
    ended the benchmark with a traceback after the runs before it."""
    out = tmp_path / "build.json"
    done = subprocess.run(
        [sys.executable, "benchmarks/build.py", "--episodes", "100000", "3000", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1].endswith(
        "error: --episodes 3000: shard_multiple (8): validation: 58 rows make 1 row groups of 128, "
        "too few for 8 shards (a multiple of 8)"
    )
    assert not out.exists() and "Traceback" not in done.stderr

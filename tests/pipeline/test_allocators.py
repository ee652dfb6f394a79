"""The memory pool `pipeline/__init__.py` chooses for pyarrow is the one the stages use; a user's choice wins."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = "import pipeline.writer, pyarrow as pa; print(pa.default_memory_pool().backend_name)"


def _backend(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in {"ARROW_DEFAULT_MEMORY_POOL", "_RJEM_MALLOC_CONF"}}
    run = subprocess.run(
        [sys.executable, "-c", PROBE], env={**clean, "PYTHONPATH": str(ROOT), **env}, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_pipeline_writes_through_pyarrows_jemalloc_on_x86_64_linux() -> None:
    import pyarrow as pa  # elsewhere the package leaves pyarrow its own default

    chosen = sys.platform == "linux" and platform.machine() == "x86_64"
    assert _backend() == ("jemalloc" if chosen else pa.default_memory_pool().backend_name)


def test_a_users_pool_wins() -> None:
    assert _backend(ARROW_DEFAULT_MEMORY_POOL="system") == "system"

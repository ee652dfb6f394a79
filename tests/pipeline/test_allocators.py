"""The memory pool `pipeline/__init__.py` chooses for pyarrow is the one the stages and training use; a user's choice
wins."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import importlib, sys; importlib.import_module(sys.argv[1])\n"
    "import pyarrow as pa; print(pa.default_memory_pool().backend_name)"
)


def _backend(first: str, **env: str) -> str:
    """The pool of a fresh process that imports the module `first`, then pyarrow."""
    clean = {k: v for k, v in os.environ.items() if k not in {"ARROW_DEFAULT_MEMORY_POOL", "_RJEM_MALLOC_CONF"}}
    run = subprocess.run(
        [sys.executable, "-c", PROBE, first],
        env={**clean, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


@pytest.mark.parametrize("first", ["pipeline.writer", "train.data"])
def test_the_pipeline_and_training_allocate_through_pyarrows_jemalloc_on_x86_64_linux(first: str) -> None:
    """train.data imports `datasets`, and so pyarrow, before any pipeline module: the train package chooses first."""
    default = _backend("json")
    chosen = sys.platform == "linux" and platform.machine() == "x86_64"
    assert _backend(first) == ("jemalloc" if chosen else default)
    if chosen:
        assert default != "jemalloc", "pyarrow's own default is jemalloc already: this test shows nothing"


def test_a_users_pool_wins() -> None:
    assert _backend("train.data", ARROW_DEFAULT_MEMORY_POOL="system") == "system"

import os
import subprocess
import sys

import pytest

ALLOCATOR = "_RJEM_MALLOC_CONF"
READ = "import pipeline, polars, os; print(os.environ['_RJEM_MALLOC_CONF'])"


def _allocator_conf(value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != ALLOCATOR} | ({} if value is None else {ALLOCATOR: value})
    return subprocess.run([sys.executable, "-c", READ], env=env, capture_output=True, text=True, check=True).stdout


def test_polars_keeps_freed_pages_for_thirty_seconds_in_the_pipelines_processes():
    """The package sets the allocator before polars reads it (polars appends it to its defaults: the last wins)."""
    conf = _allocator_conf(None).strip().split(",")
    assert conf[-1] == "dirty_decay_ms:30000"
    assert conf[0].startswith("dirty_decay_ms:")  # polars' own default, which ours overrides


@pytest.mark.parametrize("value", ["dirty_decay_ms:0", "background_thread:false"])
def test_an_allocator_setting_of_the_user_wins(value):
    assert _allocator_conf(value).strip().split(",")[-1] == value

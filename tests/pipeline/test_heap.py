"""The generating processes' heap: what one chunk frees, the next reuses without faulting it in again."""

from __future__ import annotations

import platform
import subprocess
import sys

CHUNKS = """
import resource, sys
import numpy as np
from pipeline.heap import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
def chunk():  # arrays of a chunk's sizes (2-25 MB), filled, then freed
    arrays = [np.ones(size << 17) for size in (2, 25, 11, 11, 6, 13, 25, 4)]
    del arrays
chunk()
chunk()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
chunk()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _third_chunk_faults(mode: str) -> int:
    run = subprocess.run([sys.executable, "-c", CHUNKS, mode], capture_output=True, text=True, check=True)
    return int(run.stdout)


def test_a_chunk_reuses_the_heap_the_one_before_freed():
    """Left to glibc, a third chunk of 97 MB still faults thousands of pages in anew (its heap's top was handed back
    to the kernel); kept, almost none."""
    assert platform.libc_ver()[0] == "glibc"
    left = _third_chunk_faults("default")
    assert left > 1000
    assert _third_chunk_faults("keep") < left // 20

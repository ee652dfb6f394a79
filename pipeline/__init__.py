"""The dataset pipeline: DVC stages from facts to validated, published episodes (README: Build the dataset)."""

import os
import platform
import sys

# Both variables are read once, when polars or pyarrow is imported, so they are set before any module of the package
# imports either; a value the user set wins.
#
# Polars' allocator (jemalloc) hands freed pages back to the kernel after half a second by default, and the episodes
# stage frees and takes again about 100 MB a chunk, a chunk a worker every half second or so: every chunk faulted
# its pages in anew, a seventh of the stage's CPU time spent in the kernel. Kept thirty seconds (about the default
# build's episodes stage) they are reused: against five seconds, the stage faulted 0.5M pages instead of 1.5M and
# took 7% less CPU and time (five runs each in turns), for about 30 MB more peak RSS a worker (five seconds had taken
# 6% less CPU than half a second). Never handing them back saves little more and holds about 130 MB more a worker.
# Polars appends the setting to its own defaults.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:30000")
# Pyarrow's default allocator on Linux is mimalloc, which backs its segments with transparent huge pages: the
# episodes stage spent about 3% of its CPU zeroing 2 MB pages for the arrays it converts and the pages it writes.
# Pyarrow's own jemalloc reuses them: the stage's kernel time 4.5-6.9 s -> 2.5-3.1 s and its wall time 5-10% less,
# five runs each in turns, with the same output and a lower peak RSS. Chosen where it was measured and where
# pyarrow's wheels carry it (x86-64 Linux); elsewhere pyarrow keeps its default.
# The variable, not `pa.set_memory_pool` in the stage's processes: that reaches only what pyarrow allocates from
# Python, the Parquet writer's own buffers still came from mimalloc, and the stage's kernel time was 3.5-4.0 s against
# 2.9-3.2 (three runs each in turns). So the choice reaches every program that imports the package before pyarrow;
# training does so on purpose, where streaming measured faster with it too (`train/__init__.py`).
if sys.platform == "linux" and platform.machine() == "x86_64":
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")

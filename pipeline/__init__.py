"""The dataset pipeline: DVC stages from facts to validated, published episodes (README: Build the dataset)."""

import os

# Polars' allocator (jemalloc) hands freed pages back to the kernel after half a second by default, and the episodes
# stage frees and takes again about 100 MB a chunk, a chunk a worker every half second or so: every chunk faulted
# its pages in anew, a seventh of the stage's CPU time spent in the kernel. Kept thirty seconds (about the default
# build's episodes stage) they are reused: against five seconds, the stage faulted 0.5M pages instead of 1.5M and
# took 7% less CPU and time (five runs each in turns), for about 30 MB more peak RSS a worker (five seconds had taken
# 6% less CPU than half a second). Never handing them back saves little more and holds about 130 MB more a worker.
# Set before any module of the package imports polars, which reads the variable once, when it is imported (and
# appends it to its own defaults); a value the user set wins.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:30000")

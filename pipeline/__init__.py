"""The dataset pipeline: DVC stages from facts to validated, published episodes (README: Build the dataset)."""

import os

# Polars' allocator (jemalloc) hands freed pages back to the kernel after half a second by default, and the episodes
# stage frees and takes again about 100 MB a chunk, a chunk a worker every half second or so: every chunk faulted
# its pages in anew, a seventh of the stage's CPU time spent in the kernel. Kept five seconds they are reused: the
# default build's episodes stage takes 6% less CPU and 5% less time, for about 30 MB more peak RSS a worker.
# Set before any module of the package imports polars, which reads the variable once, when it is imported (and
# appends it to its own defaults); a value the user set wins.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:5000")

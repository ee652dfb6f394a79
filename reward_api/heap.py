"""The serving process's heap: freed heap returned to the OS after one-off bursts of allocation (start-up checks,
cache builds), and glibc's malloc arenas capped."""

from __future__ import annotations

import gc

from pipeline.heap import glibc


def release_freed_memory() -> None:
    """Hand the heap freed by a burst back to the OS: glibc keeps it otherwise, and it stays in the RSS.

    Measured: parsing all 32 default footers at start-up leaves ~60 MB; building one shard's views ~15 MB per 1M.
    What reference cycles hold goes first: a serving process freezes what start-up left (`tune_gc`), and a freed
    footer held in a cycle (`shards.id_problems` names one) would stay for good.
    """
    gc.collect()
    if (libc := glibc()) is not None:  # not glibc: nothing to trim
        libc.malloc_trim(0)


M_ARENA_MAX = -8  # glibc's mallopt parameter


def limit_malloc_arenas(arenas: int = 2) -> bool:
    """Cap glibc's malloc arenas: each thread that runs the server's blocking work took one of its own, and their
    fragments grew the RSS in steps under long load (a thirty-minute soak at one worker: +13%, 17 MB of it at once
    near ten minutes; capped at 2, twelve minutes: +0.3%, at the same requests/s). Call it before the threads start.
    Whether the cap took: False where libc is not glibc."""
    libc = glibc()
    return libc is not None and libc.mallopt(M_ARENA_MAX, arenas) == 1

"""The generating processes' heap: glibc's malloc keeps what one chunk of episodes frees for the next.

Each chunk allocates and frees the same ~100 MB of arrays. Left to itself, glibc maps its larger blocks afresh until
its adaptive threshold has grown past them and hands the top of its heap back to the kernel as soon as a few MB lie
free there, so every chunk faulted its pages in again. (Polars' own allocator is set in `pipeline/__init__.py`.)
"""

from __future__ import annotations

import ctypes

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
MMAP_THRESHOLD = 32 * 2**20  # the ceiling of glibc's adaptive threshold, fixed there from the start
TRIM_THRESHOLD = 2**30  # free heap at the top kept up to this size: a chunk's arrays take a few hundred MB


def keep_freed_memory() -> bool:
    """Let glibc's malloc keep freed heap for reuse (measured in-process: generation 3-4 µs an episode of kernel time
    less, 0.5-1 left; peak RSS 10-25 MB more). Whether it took: False where libc is not glibc."""
    libc = glibc()
    return (
        libc is not None
        and libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
        and libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    )


def glibc() -> ctypes.CDLL | None:
    """glibc, or None where the C library is another (one without malloc_trim and mallopt)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None

"""The agent-views cache folders (reward_api.views): one per dataset build, held while served, pruned when unused.

Each build of a dataset gets a new folder (~520 MB per 1M episodes). A server holds a shared lock on its folder's
`.in-use` file while it runs; once its own cache is ready it removes the sibling folders no server holds, but the
KEEP_UNUSED used last, so switching between builds does not rebuild and old builds do not pile up. Only folders
named like a cache key and holding only cache files are ever removed.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
from pathlib import Path

KEEP_UNUSED = 2  # other builds' caches kept while no server holds them
IN_USE = ".in-use"
KEY = re.compile(r"[0-9a-f]{24}")  # reward_api.views.cache_folder's names
OURS = re.compile(r"(\.in-use|\d{5}-.+\.(views|lock)|\..+\.tmp)")  # what a cache folder may hold


def hold(folder: Path) -> int:
    """Create `folder` and lock its in-use file (shared), held while the returned fd is open: prune skips it."""
    while True:
        folder.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(folder / IN_USE, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:  # pruned between the two calls
            continue
        fcntl.flock(fd, fcntl.LOCK_SH)
        try:
            if os.stat(folder / IN_USE).st_ino == os.fstat(fd).st_ino:
                os.utime(fd)  # the last use, by which prune ranks the unused folders
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)  # the folder was pruned while this waited for the lock: hold the new one


def _unused(folder: Path) -> tuple[float, int] | None:
    """(last use, fd of an exclusive lock) of a cache folder no server holds; None if in use or not a cache folder.

    The last use is the in-use file's mtime, or the folder's for one made before servers held them.
    """
    if not KEY.fullmatch(folder.name) or not folder.is_dir():
        return None
    if not all(OURS.fullmatch(entry.name) for entry in folder.iterdir()):
        return None
    marker = folder / IN_USE
    last_use = (marker if marker.exists() else folder).stat().st_mtime
    fd = os.open(marker, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return last_use, fd


def prune(base: Path, keep: int = KEEP_UNUSED) -> list[Path]:
    """Remove the cache folders under `base` that no server holds, but the `keep` used last; returns those removed.

    Only folders named like a cache key and holding only cache files are touched.
    """
    unused = []
    for folder in sorted(base.iterdir()):
        try:
            found = _unused(folder)
        except OSError:  # removed meanwhile, or not ours to lock
            continue
        if found is not None:
            unused.append((*found, folder))
    unused.sort(key=lambda item: item[0], reverse=True)
    removed = []
    for rank, (_, fd, folder) in enumerate(unused):
        if rank >= keep:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
        os.close(fd)
    return removed

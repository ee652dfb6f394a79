"""Views-cache folders: held while served; prune removes only unused cache folders beyond the last used."""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from reward_api.viewfolders import IN_USE, hold, prune


def old_cache(base: Path, key: str, last_use: float) -> Path:
    """A cache folder of another build, last used at `last_use` (seconds since the epoch)."""
    folder = base / key
    folder.mkdir(parents=True)
    (folder / "00000-train-00000-of-00001.views").write_bytes(b"views")
    (folder / IN_USE).touch()
    os.utime(folder / IN_USE, (last_use, last_use))
    return folder


def test_prune_keeps_the_held_and_the_last_used_and_touches_nothing_else(tmp_path):
    olds = [old_cache(tmp_path, f"{n:024x}", 1_000_000 + n) for n in range(5)]
    served = old_cache(tmp_path, "ab" * 12, 0)  # the oldest, but a server holds it
    held = hold(served)
    legacy = tmp_path / f"{9:024x}"  # made before servers held their folders: ranked by the folder's mtime
    legacy.mkdir()
    (legacy / "00001-test-00000-of-00001.lock").touch()
    os.utime(legacy, (500_000, 500_000))
    other = tmp_path / f"{7:024x}"  # named like a cache, holding something else
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    (tmp_path / "datasets").mkdir()
    try:
        assert sorted(prune(tmp_path, keep=2)) == [*olds[:3], legacy]
        assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
            [served.name, olds[3].name, olds[4].name, other.name, "datasets"]
        )
        assert (other / "notes.txt").read_text() == "mine" and (served / "00000-train-00000-of-00001.views").is_file()
    finally:
        os.close(held)
    assert sorted(prune(tmp_path, keep=0)) == sorted([served, olds[3], olds[4]])


def wait_for_a_lock_waiter(path: Path, timeout: float = 10) -> None:
    """Until a process blocks on a lock of `path` (/proc/locks lists a waiter as "->"), not a guessed sleep."""
    inode = os.stat(path).st_ino
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        locks = Path("/proc/locks").read_text().splitlines()
        if any("->" in line and line.split()[-3].endswith(f":{inode}") for line in locks):
            return
        time.sleep(0.005)
    raise AssertionError(f"nothing waited on a lock of {path} within {timeout} s")


def test_a_folder_pruned_while_a_server_waits_for_it_is_held_afresh(tmp_path):
    """prune removes a folder under its exclusive lock; a server blocked on that lock then holds a new folder."""
    folder = old_cache(tmp_path, "ab" * 12, 1_000_000)
    pruner = os.open(folder / IN_USE, os.O_RDWR)
    fcntl.flock(pruner, fcntl.LOCK_EX)
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(hold, folder)
        wait_for_a_lock_waiter(folder / IN_USE)
        assert not waiting.done()  # blocked on the pruner's lock
        shutil.rmtree(folder)
        os.close(pruner)
        held = waiting.result(timeout=10)
    try:
        assert os.fstat(held).st_ino == os.stat(folder / IN_USE).st_ino
        assert prune(tmp_path, keep=0) == []  # held: not removed
    finally:
        os.close(held)
    assert prune(tmp_path, keep=0) == [folder]

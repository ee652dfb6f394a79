"""Engines that run the episodes stage's shard plans: a local process pool (the default) or Ray tasks.

Both engines call the same per-shard function, which writes one shard under the staging folder (a temporary
name, then a rename) and returns its ShardInfo. A shard is a pure function of (seed, ids), so the files are
the same bytes whichever engine, worker or node wrote them, and a retried task simply overwrites its file.
On a multi-node Ray cluster every node must see the staging and facts folders at the same paths (a shared filesystem:
NFS, Lustre, a mounted bucket) and run the same package versions (the manifest records the driver's).
A local pool's workers die with the stage process: a stage killed outright (SIGKILL) leaves no worker writing into
the staging folder that a re-run deletes.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from functools import partial
from pathlib import Path

from pipeline.schema import ShardInfo
from pipeline.shards import ShardPlan

log = logging.getLogger(__name__)
RAY_MAX_RETRIES = 3  # runs of a task again after its worker process or node died
RAY_STOP_S = 30.0  # how long a failed build's interrupted tasks may take to end before they are killed
_POLL_S = 0.5  # how often the Ray driver collects finished shards for the progress callback
_WATCH_S = 0.2  # how often a local worker without PR_SET_PDEATHSIG checks that its stage process is alive
_PR_SET_PDEATHSIG = 1  # prctl option (linux/prctl.h): the signal this process gets when its parent dies

Write = Callable[[ShardPlan], ShardInfo]
Setup = Callable[..., None]
Progress = Callable[[ShardInfo], None] | None


def run_local(
    plans: Sequence[ShardPlan], write: Write, setup: Setup, setup_args: tuple, workers: int, progress: Progress
) -> list[ShardInfo]:
    """The shards over this process and `workers - 1` spawned ones, in plan order.

    This process builds shards too, in one thread: it has imported everything already, so a build pays one
    worker's start-up (imports, reading the facts) less, and starts writing while the spawned workers import.
    Shards are handed out one at a time to whoever is free, so the work balances itself.

    `setup(*setup_args)` runs once in each process before its first shard (it loads what `write` reads). Keep
    `setup_args` small (paths, not tables): a spawned worker's arguments larger than a pipe's buffer hold up
    the start of the next worker until this one has imported its modules. Each worker dies with this process
    (`_start_worker`); `write` should call `stop_if_orphaned` before each chunk it generates and before its rename.
    """
    workers = min(workers, len(plans))  # a worker without a shard would only import and wait
    if workers == 1:
        setup(*setup_args)
        return [_reported(write(plan), progress) for plan in plans]
    # spawn, not fork: polars and pyarrow hold thread pools that a forked child must not inherit. The workers are
    # started by this thread, which waits here until they are done (PR_SET_PDEATHSIG fires when it ends).
    context = multiprocessing.get_context("spawn")
    start = (os.getpid(), setup, *setup_args)
    queue = iter(enumerate(plans))
    infos: list[ShardInfo | None] = [None] * len(plans)
    pending: dict[Future, tuple[int, Callable[[ShardPlan], Future]]] = {}

    def hand_out(submit: Callable[[ShardPlan], Future]) -> None:
        if (item := next(queue, None)) is not None:
            pending[submit(item[1])] = (item[0], submit)

    with (
        ProcessPoolExecutor(workers - 1, mp_context=context, initializer=_start_worker, initargs=start) as pool,
        ThreadPoolExecutor(1, thread_name_prefix="shards") as here,
    ):
        try:
            for _ in range(workers - 1):  # first, so the workers import while this process sets up
                hand_out(partial(pool.submit, _local_shard, write))
            setup(*setup_args)
            hand_out(partial(here.submit, write))
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    index, submit = pending.pop(future)
                    infos[index] = _reported(future.result(), progress)
                    hand_out(submit)
        except BaseException:
            _CANCELLED.set()  # this process's shard stops at its next check; the pool starts no other
            pool.shutdown(cancel_futures=True)
            here.shutdown(cancel_futures=True)
            raise
        finally:
            _CANCELLED.clear()
    return infos


def run_ray(
    plans: Sequence[ShardPlan],
    write: Write,
    setup: Setup,
    setup_args: tuple,
    stop: Path,
    address: str,
    workers: int,
    progress: Progress,
) -> list[ShardInfo]:
    """Each plan as a Ray task calling `write`, in plan order; a task whose worker or node dies is retried.

    `setup_args` go into the object store once; a worker fetches them and runs `setup` before
    its first shard of this build. Joins the running Ray session if there is one, else the cluster at
    `address`, else starts a one-machine cluster with `workers` CPUs (and stops it afterwards).
    `stop` is a file path in the staging folder (every node sees it) that does not exist yet: a failed build creates
    it, and its tasks stop at their next `stop_if_orphaned` (`_stop_ray_tasks`).
    """
    import ray  # the optional extra: pip install 'contextcorruption[ray]'

    started = not ray.is_initialized()
    if started:
        ray.init(**ray_init_args(address, workers))
    try:
        shared = ray.put(setup_args)
        task = ray.remote(max_retries=RAY_MAX_RETRIES)(_ray_shard)
        pending = {task.remote(write, setup, [shared], stop, plan): i for i, plan in enumerate(plans)}
        log.info("ray: %d shard tasks on %s CPUs", len(plans), ray.cluster_resources().get("CPU", 0))
        infos: list[ShardInfo | None] = [None] * len(plans)
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=len(pending), timeout=_POLL_S)
                for ref, info in zip(done, ray.get(done), strict=True):
                    infos[pending.pop(ref)] = _reported(info, progress)
        except BaseException:
            _stop_ray_tasks(list(pending), stop)
            raise
        return infos
    finally:
        if started:
            ray.shutdown()


def _stop_ray_tasks(refs: list, stop: Path) -> None:
    """Stops a failed build's remaining tasks and waits for them to end: no task may keep writing into a staging
    folder that is being removed. They are asked, not cancelled: each sees the `stop` file at its next check and
    raises `Cancelled`. `ray.cancel` races with a task's own completion and aborts this process, with force or without
    (Ray 2.60: "Tried to complete task that was not pending"); only a task that outlives RAY_STOP_S is killed, or every
    one at once where the file cannot be made (the build's own error may be the reason: a read-only filesystem)."""
    import ray

    try:
        stop.touch()
        timeout = RAY_STOP_S
    except OSError:
        timeout = 0
    _, left = ray.wait(refs, num_returns=len(refs), timeout=timeout)
    for ref in left:
        ray.cancel(ref, force=True)


def ray_init_args(address: str, workers: int) -> dict:
    """ray.init's arguments: join `address` (or RAY_ADDRESS) as given, else start a new one-machine cluster
    ("local": never join another build's cluster found on this machine) without the dashboard."""
    if address or os.environ.get("RAY_ADDRESS"):
        return {"address": address or None}
    return {"address": "local", "num_cpus": workers, "include_dashboard": False}


_READY: dict[str, str] = {}  # in a Ray worker: the object id of the build whose setup has run
_STOP: dict[str, Path] = {}  # in a Ray worker: the file that stops the build of the shard it runs


def _ray_shard(write: Write, setup: Setup, shared: list, stop: Path, plan: ShardPlan) -> ShardInfo:
    """One shard in a Ray worker. `shared` wraps the object reference in a list, so Ray passes the reference
    itself and only a worker that has not set up this build yet fetches its setup arguments."""
    import ray

    _STOP["file"] = stop
    stop_if_orphaned()  # the build failed before this task started
    key = shared[0].hex()
    if _READY.get("build") != key:
        setup(*ray.get(shared[0]))
        _READY["build"] = key
    return write(plan)


_CANCELLED = threading.Event()  # set when a local build fails or is interrupted (in the stage process or a worker)


class Cancelled(RuntimeError):
    """A shard of the stage process's own stopped because its build had already failed or been interrupted."""


_PARENT: dict[str, int] = {}  # in a local pool's worker: the pid of the stage process that started it
_SETUP: dict[str, tuple] = {}  # in a local pool's worker: the setup its first shard runs


def _start_worker(parent: int, setup: Setup, *setup_args) -> None:
    """A local pool worker's initializer: tie the worker's life to its stage process `parent`; `setup` waits for
    the first shard (`_local_shard`).

    Ctrl-C reaches the whole process group: a worker takes it as a cancel, so a shard being built stops at its next
    chunk (`stop_if_orphaned`) while the stage process cancels the rest; a worker waiting for work that died of it
    (KeyboardInterrupt) had left the pool's shutdown waiting forever."""
    signal.signal(signal.SIGINT, cancel_on_signal)
    _PARENT["pid"] = parent
    if not _kill_on_parent_death():
        threading.Thread(target=watch_parent, args=(parent, _WATCH_S), name="watch-parent", daemon=True).start()
    stop_if_orphaned()  # the stage died before the line above took effect
    _SETUP["pending"] = (setup, setup_args)


def cancel_on_signal(signum: int, frame) -> None:
    """A local pool worker's SIGINT handler: its shards stop at their next check; it keeps waiting for the pool."""
    _CANCELLED.set()


def _local_shard(write: Write, plan: ShardPlan) -> ShardInfo:
    """One shard in a local pool's worker, after the worker's setup if it has not run yet: a setup that fails
    (a facts file changed mid-build) fails this shard's future with its own error, where an initializer's would
    break the whole pool (BrokenProcessPool) and hide it."""
    if "pending" in _SETUP:
        setup, args = _SETUP["pending"]
        setup(*args)
        del _SETUP["pending"]
    return write(plan)


def _kill_on_parent_death() -> bool:
    """Have Linux SIGKILL this process the moment its parent dies (prctl PR_SET_PDEATHSIG); False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):  # no C library to load, or no prctl in it
        return False


def watch_parent(parent: int, interval: float) -> None:
    """The portable fallback: end this process once `parent` is no longer its parent (checked every `interval` s)."""
    while os.getppid() == parent:
        time.sleep(interval)
    os._exit(1)


def stop_if_orphaned() -> None:
    """Between a shard's chunks and before its rename: in a local pool's worker whose stage process is gone, end the
    worker at once, so it publishes no shard (only a temporary file in the staging folder a re-run deletes); in the
    stage process, a worker or a Ray task of a build that failed or was interrupted, raise `Cancelled`. Elsewhere
    (a one-process build) it does nothing."""
    if "pid" in _PARENT and os.getppid() != _PARENT["pid"]:
        os._exit(1)
    if _CANCELLED.is_set() or ("file" in _STOP and _STOP["file"].exists()):
        raise Cancelled("the build was stopped")


def _reported(info: ShardInfo, progress: Progress) -> ShardInfo:
    if progress:
        progress(info)
    return info

"""Engines that run the episodes stage's shard plans: a local process pool (the default) or Ray tasks.

Both engines call the same per-shard function, which writes one shard under the staging folder (a temporary
name, then a rename) and returns its ShardInfo. A shard is a pure function of (seed, ids), so the files are
the same bytes whichever engine, worker or node wrote them, and a retried task simply overwrites its file.
On a multi-node Ray cluster every node must see the staging folder at the same path (a shared filesystem:
NFS, Lustre, a mounted bucket) and run the same package versions (the manifest records the driver's).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed

from pipeline.schema import ShardInfo
from pipeline.writer import ShardPlan

log = logging.getLogger(__name__)
RAY_MAX_RETRIES = 3  # runs of a task again after its worker process or node died
_POLL_S = 0.5  # how often the Ray driver collects finished shards for the progress callback

Write = Callable[[ShardPlan], ShardInfo]
Setup = Callable[..., None]
Progress = Callable[[ShardInfo], None] | None


def run_local(
    plans: Sequence[ShardPlan], write: Write, setup: Setup, setup_args: tuple, workers: int, progress: Progress
) -> list[ShardInfo]:
    """The shards over `workers` spawned processes (in this process when workers == 1), in plan order.

    `setup(*setup_args)` runs once in each process before its first shard (it loads what `write` reads).
    """
    if workers == 1:
        setup(*setup_args)
        return [_reported(write(plan), progress) for plan in plans]
    # spawn, not fork: polars and pyarrow hold thread pools that a forked child must not inherit.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context, initializer=setup, initargs=setup_args) as pool:
        futures = {pool.submit(write, plan): i for i, plan in enumerate(plans)}
        infos: list[ShardInfo | None] = [None] * len(plans)
        for future in as_completed(futures):
            infos[futures[future]] = _reported(future.result(), progress)
    return infos


def run_ray(
    plans: Sequence[ShardPlan],
    write: Write,
    setup: Setup,
    setup_args: tuple,
    address: str,
    workers: int,
    progress: Progress,
) -> list[ShardInfo]:
    """Each plan as a Ray task calling `write`, in plan order; a task whose worker or node dies is retried.

    `setup_args` (the facts) go into the object store once; a worker fetches them and runs `setup` before
    its first shard of this build. Joins the running Ray session if there is one, else the cluster at
    `address`, else starts a one-machine cluster with `workers` CPUs (and stops it afterwards).
    """
    import ray  # the optional extra: pip install 'contextcorruption[ray]'

    started = not ray.is_initialized()
    if started:
        ray.init(**ray_init_args(address, workers))
    try:
        shared = ray.put(setup_args)
        task = ray.remote(max_retries=RAY_MAX_RETRIES)(_ray_shard)
        pending = {task.remote(write, setup, [shared], plan): i for i, plan in enumerate(plans)}
        log.info("ray: %d shard tasks on %s CPUs", len(plans), ray.cluster_resources().get("CPU", 0))
        infos: list[ShardInfo | None] = [None] * len(plans)
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=len(pending), timeout=_POLL_S)
                for ref, info in zip(done, ray.get(done), strict=True):
                    infos[pending.pop(ref)] = _reported(info, progress)
        except BaseException:
            for ref in pending:  # no task may keep writing into a staging folder that is being removed
                ray.cancel(ref, force=True)
            raise
        return infos
    finally:
        if started:
            ray.shutdown()


def ray_init_args(address: str, workers: int) -> dict:
    """ray.init's arguments: join `address` (or RAY_ADDRESS) as given, else start a new one-machine cluster
    ("local": never join another build's cluster found on this machine) without the dashboard."""
    if address or os.environ.get("RAY_ADDRESS"):
        return {"address": address or None}
    return {"address": "local", "num_cpus": workers, "include_dashboard": False}


_READY: dict[str, str] = {}  # in a Ray worker: the object id of the build whose setup has run


def _ray_shard(write: Write, setup: Setup, shared: list, plan: ShardPlan) -> ShardInfo:
    """One shard in a Ray worker. `shared` wraps the object reference in a list, so Ray passes the reference
    itself and only a worker that has not set up this build yet fetches the facts."""
    import ray

    key = shared[0].hex()
    if _READY.get("build") != key:
        setup(*ray.get(shared[0]))
        _READY["build"] = key
    return write(plan)


def _reported(info: ShardInfo, progress: Progress) -> ShardInfo:
    if progress:
        progress(info)
    return info

"""The local engine: the stage process builds shards beside `workers - 1` spawned ones, hands them out one at a time,
returns them in plan order, and stops its own shard when the build fails."""

from __future__ import annotations

import os
import signal
import time
from functools import partial

import pytest

from pipeline import engines
from pipeline.shards import ShardPlan

PLANS = [ShardPlan("train", i, 12, i * 10, 10) for i in range(12)]
STOPPED: list[str] = []  # in the stage process: how its own shard of a failing build ended


def no_setup() -> None:
    """Nothing to load."""


def whereabouts(plan: ShardPlan) -> tuple[int, int]:
    time.sleep(0.05)  # long enough that every process gets some of the shards
    return plan.first_id, os.getpid()


def fail_in_workers(stage: int, plan: ShardPlan) -> int:
    """In a spawned worker: fail at once. In the stage process: run until the build is stopped (a build that never
    stops it hangs until the suite's timeout)."""
    if os.getpid() != stage:
        raise ValueError(f"shard {plan.index} failed")
    try:
        while True:
            engines.stop_if_orphaned()
            time.sleep(0.01)
    except engines.Cancelled:
        STOPPED.append("cancelled")
        raise
    return plan.index


def test_shards_come_back_in_plan_order_built_by_this_process_and_the_workers():
    results = engines.run_local(PLANS, whereabouts, no_setup, (), 3, None)
    assert [first for first, _ in results] == [plan.first_id for plan in PLANS]
    pids = {pid for _, pid in results}
    assert os.getpid() in pids, "the stage process builds shards too"
    assert pids - {os.getpid()}, "the spawned workers built some (the first shards are handed to them)"


@pytest.mark.timeout(120)  # the stage's own shard runs until it is stopped: a missing stop hangs here
def test_a_failed_worker_stops_the_stage_processes_own_shard_and_the_next_build_runs():
    STOPPED.clear()
    with pytest.raises(ValueError, match="failed"):
        engines.run_local(PLANS, partial(fail_in_workers, os.getpid()), no_setup, (), 2, None)
    assert STOPPED == ["cancelled"]
    # the stop is not left behind for the next build in this process
    assert len(engines.run_local(PLANS[:4], whereabouts, no_setup, (), 2, None)) == 4


def test_a_worker_takes_ctrl_c_as_a_cancel_of_its_shard():
    """A pool worker's SIGINT handler: the shard it builds stops at its next check (it had ignored Ctrl-C and
    finished every shard it held, 30 s at a million rows, before the stage could end)."""
    try:
        engines.cancel_on_signal(signal.SIGINT, None)
        with pytest.raises(engines.Cancelled, match="the build was stopped"):
            engines.stop_if_orphaned()
    finally:
        engines._CANCELLED.clear()

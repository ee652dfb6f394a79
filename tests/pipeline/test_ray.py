"""The Ray engine builds the same bytes as the local engine, also when a task dies and Ray retries it.

One local Ray cluster (2 CPUs, no dashboard; Ray binds the machine's address, not loopback, and turns token
authentication on by default) serves the module. Its workers run a setup hook that wraps the per-shard
function: while the test's `armed` file exists, the first task to reach the second train shard leaves a
partial temporary file and kills its own worker process (os._exit) before finishing; while `broken` exists,
every shard fails with an error; while `stall` exists, the first task waits to be stopped and the second fails;
while the `written` folder exists, each shard a worker writes is recorded there
with the worker's pid (a build that never reached Ray records nothing). The CLI test runs
`python -m pipeline.episodes`, which starts its own cluster (in a Ray temp folder of its own) and stops it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import ray

from pipeline import engines
from pipeline.episodes import AUDIT_SECTION, build_episodes
from pipeline.params import EpisodesParams, ParamsError, section
from pipeline.shards import ShardPlan
from tests.conftest import write_params

SEED = 1234
LOCAL = EpisodesParams(train=300, validation=60, test=60, workers=1, shard_rows=128, row_group_rows=32)
RAY = LOCAL.model_copy(update={"engine": "ray"})


def _crash_hook(markers: Path):
    """A worker setup hook (a closure, so Ray ships it by value) that makes one shard task die mid-way,
    or every task fail while `broken` exists, or, while `stall` exists, the first task to start wait for its build
    to stop it and the second fail; it records each shard written while `written` exists."""
    armed, crashed, broken, written = (markers / name for name in ("armed", "crashed", "broken", "written"))
    stall, first, stopped = markers / "stall", markers / "first", markers / "stopped"

    def hook() -> None:
        from pipeline import engines, episodes

        write = episodes._write

        def stall_or_fail(plan: ShardPlan) -> None:
            try:
                first.open("x").close()
            except FileExistsError:
                raise OSError(f"no space left writing {plan.path}") from None
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    engines.stop_if_orphaned()
                except engines.Cancelled:
                    stopped.write_text(plan.path)
                    raise
                time.sleep(0.05)

        def write_or_die(plan: ShardPlan, root: Path, row_group_rows: int):
            if broken.exists():
                raise OSError(f"no space left writing {plan.path}")
            if stall.exists():
                stall_or_fail(plan)
            if plan.split == "train" and plan.index == 1 and armed.exists() and not crashed.exists():
                crashed.touch()
                final = Path(root) / plan.path
                final.parent.mkdir(parents=True, exist_ok=True)
                final.with_name(f".{final.name}.tmp").write_bytes(b"PAR1 half-written")
                os._exit(1)
            info = write(plan, root, row_group_rows)
            if written.is_dir():
                (written / plan.path.replace("/", "|")).write_text(str(os.getpid()))
            return info

        episodes._write = write_or_die

    return hook


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    markers = tmp_path_factory.mktemp("markers")
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=100 * 2**20,
        runtime_env={"worker_process_setup_hook": _crash_hook(markers)},
    )
    yield markers
    ray.shutdown()


@pytest.fixture(scope="module")
def local_build(facts_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("local") / "episodes"
    build_episodes(facts_dir, out, LOCAL, SEED)
    return out


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_ray_build_is_byte_identical_to_local(cluster, facts_dir, local_build, tmp_path):
    seen = []
    written = cluster / "written"
    written.mkdir()
    try:
        manifest = build_episodes(facts_dir, tmp_path / "ray", RAY, SEED, progress=seen.append)
        writers = {record.name.replace("|", "/"): int(record.read_text()) for record in written.iterdir()}
    finally:
        shutil.rmtree(written)
    assert ray.is_initialized()  # joined the test's cluster and left it running
    assert sorted(writers) == sorted(shard.path for shard in manifest.shards), "every shard was written by a Ray task"
    assert os.getpid() not in writers.values(), "in a Ray worker, not in this process"
    assert sorted(info.path for info in seen) == sorted(shard.path for shard in manifest.shards)
    assert len(manifest.shards) == 5
    assert _files(tmp_path / "ray") == _files(local_build)


def test_killed_task_is_retried_and_output_is_identical(cluster, facts_dir, local_build, tmp_path):
    (cluster / "armed").touch()
    try:
        build_episodes(facts_dir, tmp_path / "ray", RAY, SEED)
    finally:
        (cluster / "armed").unlink()
    assert (cluster / "crashed").exists()  # a worker did die mid-shard
    files = _files(tmp_path / "ray")
    assert files == _files(local_build)
    assert not any(Path(name).name.startswith(".") for name in files)


def test_engine_and_address_are_checked_by_name():
    episodes = LOCAL.model_dump()
    with pytest.raises(ParamsError, match=r"episodes\.engine: .*'local' or 'ray' \(got 'spark'\)"):
        section({"episodes": {**episodes, "engine": "spark"}}, "episodes", EpisodesParams)
    with pytest.raises(ParamsError, match=r"episodes\.ray_address: .*only used with engine: ray"):
        section({"episodes": {**episodes, "ray_address": "auto"}}, "episodes", EpisodesParams)
    joined = section({"episodes": {**episodes, "engine": "ray", "ray_address": "auto"}}, "episodes", EpisodesParams)
    assert joined.content() == LOCAL.content()  # how a build runs is not part of what it builds


def _fails_with_no_output(markers: Path, marker: str, facts_dir: Path, tmp_path: Path) -> None:
    """A Ray build while `marker` exists fails with the task's error and leaves nothing in its parent folder."""
    (markers / marker).touch()
    try:
        with pytest.raises(OSError, match="no space left writing data/"):
            build_episodes(facts_dir, tmp_path / "ray", RAY, SEED)
    finally:
        (markers / marker).unlink()
    assert list(tmp_path.iterdir()) == []


def test_failing_task_fails_the_build_and_leaves_no_output(cluster, facts_dir, tmp_path):
    _fails_with_no_output(cluster, "broken", facts_dir, tmp_path)


def test_a_failed_build_stops_its_running_tasks_without_killing_them(cluster, facts_dir, tmp_path):
    """One task fails while another is mid-shard: that one stops at its next check (`engines.Cancelled`), not by
    `ray.cancel`, whose race with a task's completion aborts the driver."""
    try:
        _fails_with_no_output(cluster, "stall", facts_dir, tmp_path)
    finally:
        (cluster / "first").unlink(missing_ok=True)
    assert (cluster / "stopped").read_text().startswith("data/"), "the stalled task saw the stop and ended itself"


def test_tasks_that_cannot_be_asked_to_stop_are_killed_at_once(cluster, tmp_path):
    """Where the stop file cannot be made, the build's error stands and its tasks are cancelled without waiting."""

    @ray.remote
    def sleeper() -> None:
        time.sleep(300)

    ref = sleeper.remote()
    ray.wait([ref], timeout=1)  # let it start
    started = time.monotonic()
    engines._stop_ray_tasks([ref], tmp_path / "gone" / ".stop")
    # Ray 2.40 reports a force-cancelled task whose worker it killed as crashed, once this module's cluster has run
    # the tests above; the locked 2.60 as cancelled.
    with pytest.raises((ray.exceptions.TaskCancelledError, ray.exceptions.WorkerCrashedError)):
        ray.get(ref, timeout=60)
    assert time.monotonic() - started < engines.RAY_STOP_S, "not after waiting for it to stop itself"


def _live_processes_naming(text: str) -> list[int]:
    """The pids of live (not zombie) processes whose command line contains `text` (Linux: /proc)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or text.encode() not in (proc / "cmdline").read_bytes():
                continue
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:  # it ended meanwhile
            continue
        if state != "Z":
            found.append(int(proc.name))
    return found


def test_cli_with_engine_ray_starts_and_stops_its_own_cluster(facts_dir, local_build, tmp_path):
    write_params(tmp_path, SEED, episodes=RAY)
    shutil.copytree(facts_dir, tmp_path / "data" / "facts")
    # Ray's own temp folder, short (its socket paths must fit 107 bytes): a session named by the CLI's pid there
    # is a cluster the CLI started, not the module's
    ray_tmp = Path(tempfile.mkdtemp(prefix="ray-"))
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | {"RAY_TMPDIR": str(ray_tmp)}
    try:
        with subprocess.Popen(
            [sys.executable, "-m", "pipeline.episodes"], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True
        ) as cli:
            try:
                _, log = cli.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                cli.kill()
                raise
        assert cli.returncode == 0, log
        sessions = sorted((ray_tmp / "ray").glob(f"session_*_{cli.pid}"))
        assert len(sessions) == 1, f"the CLI started a Ray cluster of its own: {log}"
        assert "ray: 5 shard tasks on 1" in log, "and ran the shards on it (workers: 1 CPU)"
        deadline = time.monotonic() + 15  # Ray's processes may take a moment to exit after its shutdown
        while (left := _live_processes_naming(sessions[0].name)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert left == [], "and stopped it: none of its processes is left"
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    built, local = _files(tmp_path / "data" / "episodes"), _files(local_build)
    card, local_card = built.pop("README.md").decode(), local.pop("README.md").decode()
    assert built == local  # the stage's card adds the generator's audit section (build_episodes' leaves it out)
    audit = AUDIT_SECTION.read_text().strip() + "\n\n"
    assert card == local_card.replace("## Sources and licences", audit + "## Sources and licences", 1)

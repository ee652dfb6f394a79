"""Crash safety of the facts and validate stages: SIGKILL at each of a stage's atomic renames (its outputs
written under temporary names, not yet all in place) leaves nothing a later stage would read, and a re-run
ends byte-identical to an uninterrupted build. The episodes stage's kill test is in tests/test_dvc_pipeline.py;
here, its pool workers die with the stage when SIGKILL hits the stage's process alone.

The kill point is deterministic: the stage runs in a subprocess whose `os.replace` sends SIGKILL to the
process at its k-th call, so the kill lands after the temporary files are complete and before the rename.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline import facts, validate, writer
from pipeline.episodes import FACTS_FILE
from pipeline.schema import MANIFEST_NAME, AnswersManifest
from pipeline.writer import staging_all
from tests.conftest import SMALL_EPISODES, write_params

ROOT = Path(__file__).resolve().parents[2]
# Prepended to the stage's code: the k-th os.replace (argv[1]) kills the process instead of renaming.
KILL_AT_RENAME = """
import os, signal, sys
_replace, _calls = os.replace, []
def _killing_replace(src, dst):
    if len(_calls) == int(sys.argv[1]):
        os.kill(os.getpid(), signal.SIGKILL)
    _calls.append(dst)
    _replace(src, dst)
os.replace = _killing_replace
"""


def run_killed(code: str, rename: int, cwd: Path) -> None:
    """Run `code` in a subprocess (cwd `cwd`) that is SIGKILLed at its `rename`-th os.replace; it must die so."""
    proc = subprocess.run(
        [sys.executable, "-c", KILL_AT_RENAME + code, str(rename)],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, f"not killed at rename {rename}:\n{proc.stderr[-2000:]}"


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def staged(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".*.tmp"))


@pytest.mark.parametrize("rename", [0, 1])
def test_facts_stage_killed_before_its_outputs_are_in_place_reruns_identically(facts_dir, tmp_path, rename):
    params = write_params(tmp_path)
    out = tmp_path / "data" / "facts"
    code = "from pathlib import Path\nfrom pipeline.facts import main\nmain(Path('params.yaml'), Path('data/facts'))"
    run_killed(code, rename, tmp_path)

    assert staged(out), "the kill landed with outputs staged under temporary names"
    assert not (out / FACTS_FILE).exists(), "no facts.parquet for the episodes stage to read"

    facts.main(params, out)
    assert snapshot(out) == snapshot(facts_dir)  # the suite's facts: write_facts(build_facts(SMALL_FACTS, SEED))


def test_validate_stage_killed_before_its_metrics_are_in_place_reruns_identically(dataset_dir, tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / validate.DATA_DIR).symlink_to(dataset_dir, target_is_directory=True)
    metrics = tmp_path / validate.METRICS_PATH
    code = "from pipeline.validate import main\nmain()"
    run_killed(code, 0, tmp_path)

    assert staged(metrics.parent) == [f".{metrics.name}.tmp"], "the kill landed with the metrics staged"
    assert not metrics.exists(), "no metrics file for DVC or the publish stage to read"

    monkeypatch.chdir(tmp_path)
    validate.main()
    rerun = metrics.read_bytes()
    metrics.unlink()
    validate.main()  # an uninterrupted run
    assert metrics.read_bytes() == rerun and staged(metrics.parent) == []


# Builds a new dataset and answers folder (the episodes stage's pair) in the working folder.
NEW_PAIR = """
from pathlib import Path
from pipeline.schema import AnswersManifest
from pipeline.writer import staging_all
with staging_all([(Path("episodes"), AnswersManifest), (Path("answers"), AnswersManifest)]) as stages:
    for stage in stages:
        (stage / "manifest.json").write_text(Path("new.json").read_text())
"""


@pytest.mark.parametrize(
    ("before", "rename"), [(("episodes", "answers"), k) for k in range(4)] + [(("answers",), k) for k in range(3)]
)
def test_outputs_killed_among_their_renames_are_old_together_before_the_next_build(tmp_path, before, rename):
    """The dataset's manifest binds its answers by checksum: a build killed after renaming one in and before the
    other must leave neither new one beside the other's old, and the next build starts from the old pair, an output
    absent before (the dataset removed by hand) absent again."""
    old, new = (AnswersManifest(params_hash=c * 64, row_group_rows=1, shards=[]).model_dump_json() for c in "01")
    (tmp_path / "new.json").write_text(new)
    for name in before:
        (tmp_path / name).mkdir()
        (tmp_path / name / MANIFEST_NAME).write_text(old)
    run_killed(NEW_PAIR, rename, tmp_path)

    pair = [(tmp_path / name, AnswersManifest) for name in ("episodes", "answers")]
    with pytest.raises(RuntimeError, match="stopped"), staging_all(pair):
        assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == sorted(
            [*before, "new.json"]
        )
        assert [(tmp_path / name / MANIFEST_NAME).read_text() for name in before] == [old] * len(before)
        raise RuntimeError("stopped")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "new.json"])


def test_an_interrupt_once_the_new_outputs_are_in_keeps_them(tmp_path, monkeypatch):
    """Ctrl-C while the old outputs were being deleted ended the stage as interrupted with the new build in place."""
    out = tmp_path / "answers"
    out.mkdir()
    manifest = AnswersManifest(params_hash="0" * 64, row_group_rows=1, shards=[]).model_dump_json()
    (out / MANIFEST_NAME).write_text(manifest)

    def interrupted(path, ignore_errors=False):
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(writer.shutil, "rmtree", interrupted)
        with staging_all([(out, AnswersManifest)]) as (stage,):
            (stage / MANIFEST_NAME).write_text(manifest.replace("0", "1"))
    assert (out / MANIFEST_NAME).read_text() == manifest.replace("0", "1")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".answers.old", "answers"]
    with staging_all([(out, AnswersManifest)]):
        assert not (tmp_path / ".answers.old").exists(), "the next build removes it"


def _stat(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name: state, ppid, ...; [] once the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return []


def children(pid: int) -> set[int]:
    return {
        int(stat.parent.name)
        for stat in Path("/proc").glob("[0-9]*/stat")
        if _stat(stat.parent.name)[1:2] == [str(pid)]
    }


def running(pid: int) -> bool:
    return _stat(pid)[:1] not in ([], ["Z"])  # a zombie has exited; its new parent may never reap it


def wait_gone(pids: set[int], seconds: float) -> set[int]:
    """The processes of `pids` still running after up to `seconds`."""
    deadline = time.monotonic() + seconds
    while (alive := {pid for pid in pids if running(pid)}) and time.monotonic() < deadline:
        time.sleep(0.01)
    return alive


TWO_WORKERS = SMALL_EPISODES.model_copy(update={"train": 20_000, "workers": 2})  # 40 train shards of 512


def staging_stage(facts_dir: Path, tmp_path: Path, stderr: int) -> tuple[subprocess.Popen, Path]:
    """The episodes stage (TWO_WORKERS) run in `tmp_path` once it has staged a shard, and its staging folder."""
    write_params(tmp_path, episodes=TWO_WORKERS)
    shutil.copytree(facts_dir, tmp_path / "data" / "facts")
    partial = tmp_path / "data" / ".episodes.partial"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    stage = subprocess.Popen(
        [sys.executable, "-m", "pipeline.episodes"], cwd=tmp_path, env=env, stderr=stderr, text=True
    )
    deadline = time.monotonic() + 120
    while not any(partial.glob("data/*.parquet")) and stage.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    if stage.poll() is not None:
        raise AssertionError("the stage finished (or failed) before a shard was staged")
    return stage, partial


def test_workers_of_a_killed_episodes_stage_die_with_it(facts_dir, tmp_path):
    """Workers that outlived their stage went on writing shards into its staging folder."""
    stage, _ = staging_stage(facts_dir, tmp_path, subprocess.DEVNULL)
    workers: set[int] = set()
    try:
        workers = children(stage.pid)  # the pool's workers - 1 processes and multiprocessing's resource tracker
        os.kill(stage.pid, signal.SIGKILL)  # the stage alone, not its process group
        stage.wait()
        assert len(workers) >= TWO_WORKERS.workers

        assert not wait_gone(workers, 60), "processes of the killed stage still run"
    finally:
        stage.kill()
        stage.wait()
        for pid in workers:
            if running(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_killed_worker_ends_the_stage_in_one_line_and_leaves_nothing(facts_dir, tmp_path):
    """A worker the kernel kills (out of memory, say) broke the pool: the stage ended in a traceback."""
    stage, partial = staging_stage(facts_dir, tmp_path, subprocess.PIPE)
    try:
        (worker,) = (pid for pid in children(stage.pid) if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes())
        os.kill(worker, signal.SIGKILL)
        _, stderr = stage.communicate(timeout=120)
        assert stage.returncode == 1 and "Traceback" not in stderr, stderr[-3000:]
        last = stderr.replace("\r", "\n").splitlines()[-1]  # after the progress bar's redraws
        assert last.startswith("episodes: a worker process died (killed, or out of memory") and last.endswith(
            "nothing was written"
        )
        assert not partial.exists() and not (tmp_path / "data" / "episodes").exists()
    finally:
        stage.kill()
        stage.wait()


@pytest.mark.parametrize("ignored", [False, True], ids=["foreground", "sigint-ignored"])
def test_ctrl_c_stops_an_episodes_stage_with_idle_workers_and_leaves_nothing(facts_dir, tmp_path, ignored):
    """Ctrl-C reaches the whole process group: idle pool workers died of it, and the stage then waited for them in
    the pool's shutdown forever (it needed a SIGKILL). Only the stage process takes it now, and it ends in one line
    (exit status 130), not tracebacks; so does a stage that ignores SIGINT (`cmd &` in a script), whose workers take
    it and stop their shards."""
    # 4 shards over the stage process and 6 workers: those given the small held-out shards are soon idle
    episodes = SMALL_EPISODES.model_copy(update={"train": 240_000, "shard_rows": 131_072, "workers": 7})
    write_params(tmp_path, episodes=episodes)
    shutil.copytree(facts_dir, tmp_path / "data" / "facts")
    partial = tmp_path / "data" / ".episodes.partial"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    stderr = tmp_path / "stderr.txt"
    with stderr.open("w") as err:
        stage = subprocess.Popen(
            [sys.executable, "-m", "pipeline.episodes"],
            cwd=tmp_path,
            env=env,
            stderr=err,
            start_new_session=True,  # its own process group, as a terminal's foreground job
            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignored else None,
        )
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        held_out = ("validation", "test")
        while not all(any(partial.glob(f"data/{split}-*.parquet")) for split in held_out):
            assert stage.poll() is None and time.monotonic() < deadline, "no held-out shard was staged"
            time.sleep(0.01)
        workers = children(stage.pid)
        assert stage.poll() is None and not any(partial.glob("data/train-*")), "the train shards were done too soon"
        os.killpg(stage.pid, signal.SIGINT)
        assert stage.wait(timeout=60) == 130, stderr.read_text()[-3000:]
        assert not wait_gone(workers, 5), "workers of the interrupted stage still run"
        assert not partial.exists() and not (tmp_path / "data" / "episodes").exists()
        text = stderr.read_text()
        assert "Traceback" not in text
        last = text.replace("\r", "\n").splitlines()[-1]  # after the progress bar's redraws
        assert last == "episodes: interrupted; nothing was written"
    finally:
        if stage.poll() is None:
            os.killpg(stage.pid, signal.SIGKILL)
        stage.wait()
        for pid in workers:
            if running(pid):
                os.kill(pid, signal.SIGKILL)


# The fallback where prctl(PR_SET_PDEATHSIG) is missing: a spawned process watching its parent, which prints its pid.
WATCHED_CHILD = """
import multiprocessing, os, time
from pipeline import engines
child = multiprocessing.get_context("spawn").Process(target=engines.watch_parent, args=(os.getpid(), 0.05))
child.start()
print(child.pid, flush=True)
time.sleep(120)
"""


def test_a_worker_watching_its_parent_exits_when_the_parent_is_killed():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen([sys.executable, "-c", WATCHED_CHILD], env=env, stdout=subprocess.PIPE, text=True)
    child = None
    try:
        child = int(parent.stdout.readline())
        time.sleep(1.0)
        assert running(child), "the watcher must keep running while its parent lives"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        assert not wait_gone({child}, 5), "the watcher outlived its parent"
    finally:
        parent.kill()
        parent.wait()
        if child is not None and running(child):
            os.kill(child, signal.SIGKILL)

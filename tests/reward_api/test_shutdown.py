"""Background work (agent views, tier thresholds, answer keys) starts with the server and is stopped and joined when
it shuts down, also when uvicorn cannot bind after start-up: no thread is left inside pyarrow while the interpreter
finalizes (that aborted the process with a core dump, rc 134)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
from contextlib import ExitStack, contextmanager
from pathlib import Path

from reward_api.env import Backend
from reward_api.server import build_app
from reward_api.store import EpisodeStore
from reward_api.tokens import TokenSigner
from reward_api.views import CACHE_ENV
from tests.reward_api.conftest import SECRET, serve

ROOT = Path(__file__).resolve().parents[2]

BIND_AFTER_START_UP = """
import socket, sys
import uvicorn
from reward_api.__main__ import Settings, create_app, skip_web_ui
skip_web_ui()
busy = socket.socket()
busy.bind(("127.0.0.1", 0))
busy.listen()
# The app's start-up runs, then uvicorn fails to bind: what a port taken after `python -m reward_api` checked it gets.
uvicorn.run(create_app(Settings(data=sys.argv[1])), host="127.0.0.1", port=busy.getsockname()[1])
"""


class WaitedOn(threading.Event):
    """An event that tells when a thread first waits on it."""

    def __init__(self) -> None:
        super().__init__()
        self.waited = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waited.set()
        return super().wait(timeout)


@contextmanager
def held(path: Path):
    """Hold the flock of `path`, as another process building that shard's views would."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def test_background_threads_start_with_the_server_and_are_joined_at_shutdown(served_dir, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))  # no views built there: the views thread has work to do
    before = set(threading.enumerate())
    store = EpisodeStore(served_dir)  # preloads its answer keys in a thread
    app = build_app(Backend(store, TokenSigner(SECRET, store.manifest.params_hash)))
    assert {t.name for t in set(threading.enumerate()) - before} <= {"answer-keys"}, "work started with the app"
    views = app.state.views
    views.folder.mkdir(parents=True)
    views._stop = WaitedOn()  # the views thread waits on it between looks at the held locks
    with ExitStack() as locks:
        for index in range(len(store.shards)):  # every shard "being built elsewhere": the views thread waits
            locks.enter_context(held(views._file(index).with_suffix(".lock")))
        server, thread, _url = serve(app)
        assert views._stop.waited.wait(60), "the views thread never waited for the held locks"
        assert views.thread.is_alive() and not views.ready.is_set()
        server.should_exit = True
        thread.join(timeout=30)
        assert not thread.is_alive()
        left = [t.name for t in set(threading.enumerate()) - before if t.is_alive()]
        assert left == [], f"still running after shutdown: {left}"
    assert app.state.tiers.future.done() and store.key_index.ready.is_set()
    assert list(views.folder.glob("*.views")) == []  # stopped while waiting: nothing half-built


def test_a_bind_failure_after_start_up_exits_without_a_core_dump(served_dir, tmp_path):
    """uvicorn binds after the app's start-up: its failure runs the shutdown, which stops the threads."""
    out = subprocess.run(
        [sys.executable, "-c", BIND_AFTER_START_UP, str(served_dir)],
        cwd=ROOT,
        env={**os.environ, CACHE_ENV: str(tmp_path)},  # views to build: the thread is busy at shutdown
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = out.stdout + out.stderr
    assert out.returncode == 3, output  # uvicorn's start-up failure, not an abort (134)
    assert "address already in use" in output and "Fatal Python error" not in output

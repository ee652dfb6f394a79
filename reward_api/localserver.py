"""Serve a dataset folder with `python -m reward_api` on a free loopback port, for scripts that need a server.

The baselines stage and the serving benchmark start the real server process this way and stop it when
done, so they measure and score exactly what `python -m reward_api` serves.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import httpx


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float) -> float:
    """Seconds until GET /health answers 200; RuntimeError if the process dies or the timeout passes."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with status {proc.returncode} before it was healthy")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return time.monotonic() - start
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"the server at {url} was not healthy after {timeout:.0f} s")


class Served(NamedTuple):
    url: str
    pid: int
    startup_s: float  # from process start to the first healthy answer


@contextmanager
def local_server(data: Path, timeout: float = 120.0, extra_args: tuple[str, ...] = ()) -> Iterator[Served]:
    """`python -m reward_api --data DATA [extra_args]` on a free 127.0.0.1 port; the process is stopped on exit."""
    port = free_port()
    key = os.environ.get("CONTEXTCORRUPTION_STATE_KEY") or secrets.token_hex(16)
    log = tempfile.TemporaryFile(mode="w+")  # a file, not a pipe: nobody reads the log while it runs
    command = [sys.executable, "-m", "reward_api", "--data", str(data), "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(
        [*command, *extra_args],
        env={**os.environ, "CONTEXTCORRUPTION_STATE_KEY": key},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            startup = wait_healthy(url, proc, timeout)
        except RuntimeError as exc:
            log.seek(0)
            raise RuntimeError(f"{exc}; server log:\n{log.read()[-2000:]}") from exc
        yield Served(url, proc.pid, startup)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()

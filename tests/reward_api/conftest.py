"""Fixtures: a served dataset folder, its hidden columns (for expected rewards), and a real uvicorn server."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import uvicorn

from reward_api.env import Backend
from reward_api.scoring import EpisodeKey
from reward_api.server import build_app
from reward_api.store import EpisodeStore
from reward_api.tokens import TokenSigner
from tests.hubstandin import HubStandin, hub_standin, publish

SECRET = b"test-secret"


@pytest.fixture(scope="session")
def served_dir(dataset_dir) -> Path:
    """The suite's small dataset, built by the real pipeline (tests/conftest.py)."""
    return dataset_dir


@pytest.fixture
def moved_hub(served_dir) -> Iterator[HubStandin]:
    """A loopback Hub holding `served_dir` as acme/cc, tagged v1, whose main has moved on since: v1 must be served."""
    published = json.loads((served_dir / "manifest.json").read_text())
    with hub_standin(token="hf_t") as hub:
        api = publish(hub, served_dir, "acme/cc")
        newer = json.dumps({**published, "params_hash": "0" * 64}).encode()
        api.upload_file(path_or_fileobj=newer, path_in_repo="manifest.json", repo_id="acme/cc", repo_type="dataset")
        assert hub.files("acme/cc")["manifest.json"] == newer != hub.files("acme/cc", "v1")["manifest.json"]
        yield hub


@pytest.fixture(scope="session")
def rows(served_dir) -> dict[int, dict]:
    """Every row, hidden columns included, read straight from the Parquet files (test-side truth)."""
    table = pq.read_table(sorted((served_dir / "data").glob("*.parquet")))
    return {row["episode_id"]: row for row in table.to_pylist()}


def truth_key(row: dict) -> EpisodeKey:
    return EpisodeKey.from_row(row["answer"], row["answer_aliases"], row["corrupt_ids"], row["max_budget"])


@pytest.fixture(scope="session")
def backend(served_dir) -> Backend:
    store = EpisodeStore(served_dir, cache_mb=0.5)
    assert store.key_index.ready.wait(60)
    return Backend(store, TokenSigner(SECRET, store.manifest.params_hash))


def serve(app, ready_timeout: float = 20.0) -> tuple[uvicorn.Server, threading.Thread, str]:
    """Run `app` with uvicorn on a free loopback port in a thread; returns once it accepts connections."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + ready_timeout
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    return server, thread, f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture(scope="session")
def base_url(backend) -> Iterator[str]:
    server, thread, url = serve(build_app(backend))
    yield url
    server.should_exit = True
    thread.join(timeout=10)

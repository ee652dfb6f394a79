"""Session slots on a real uvicorn server: OpenEnv's HTTP session methods are refused, and a silent session gives
its slot back after the idle timeout (`--session-timeout`, CONTEXTCORRUPTION_SESSION_TIMEOUT)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from reward_api import server
from reward_api.__main__ import Settings, export, parse_settings
from reward_api.server import SESSION_TIMEOUT_S, build_app
from reward_api.tokens import KEY_ENV
from tests.reward_api.conftest import serve


@contextmanager
def small_server(backend, monkeypatch, slots: int, **options) -> Iterator[str]:
    """A server of the suite's dataset with only `slots` session slots, so filling them takes a few calls."""
    monkeypatch.setattr(server, "MAX_SESSIONS", slots)
    uvicorn_server, thread, url = serve(build_app(backend, **options))
    try:
        yield url
    finally:
        uvicorn_server.should_exit = True
        thread.join(timeout=10)


def ws_url(url: str) -> str:
    return url.replace("http://", "ws://") + "/ws"


def exchange(ws: ClientConnection, message: dict) -> dict:
    ws.send(json.dumps(message))
    return json.loads(ws.recv(timeout=30))


def first_reply(url: str, episode_id: int) -> dict:
    """The answer to a reset on a new /ws connection: an observation, or the error a full server sends and closes."""
    with connect(ws_url(url)) as ws:
        try:
            ws.send(json.dumps({"type": "reset", "data": {"episode_id": episode_id}}))
        except ConnectionClosed:
            pass  # refused before the reset was sent: the error is waiting
        return json.loads(ws.recv(timeout=30))


def rpc(http: httpx.Client, request_id: int, method: str, **params) -> dict:
    return http.post("/mcp", json={"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).json()


def test_http_session_methods_are_refused_and_hold_no_slot(backend, monkeypatch):
    """openenv/session/create over POST /mcp once opened a session that held a slot until closed: as many calls as
    slots, no connection kept, and every /ws client got CAPACITY_REACHED."""
    with small_server(backend, monkeypatch, slots=2) as url, httpx.Client(base_url=url, timeout=30) as http:
        for request_id in range(5):
            reply = rpc(http, request_id, "openenv/session/create")
            assert reply["id"] == request_id and reply["error"]["code"] == -32601, reply
            assert reply["error"]["message"].startswith("openenv/session/create is not offered: this environment has")
        closing = rpc(http, 9, "openenv/session/close", session_id="anything")["error"]
        assert closing["code"] == -32601 and closing["message"].startswith("openenv/session/close is not offered")
        assert rpc(http, 10, "tools/list")["error"]["message"] == "Environment does not support MCP"  # as before
        with connect(ws_url(url)) as ws:
            assert exchange(ws, {"type": "reset", "data": {"episode_id": 3}})["type"] == "observation"


def test_a_call_naming_a_session_is_refused_whatever_its_session_id(backend, monkeypatch):
    """params.session_id reached OpenEnv's handler, which looked it up among the /ws sessions (another client's game
    for a string; a list or an object broke it: a 500)."""
    with small_server(backend, monkeypatch, slots=2) as url, httpx.Client(base_url=url, timeout=30) as http:
        for request_id, session_id in enumerate((["abc"], {"a": 1}, "anything", 5)):
            reply = rpc(http, request_id, "tools/call", name="x", session_id=session_id)
            assert reply["id"] == request_id and reply["error"]["code"] == -32602, reply
            assert reply["error"]["message"].startswith("params.session_id is not taken: this environment has no MCP")


def mcp_frame(request_id: int, method: str, **params) -> dict:
    return {"type": "mcp", "data": {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}}


def test_a_ws_client_cannot_close_its_session_to_free_its_slot(backend, monkeypatch):
    """Over /ws, openenv/session/create gave a client its session id and openenv/session/close took that session out
    of the slots while its socket played on: one client past the limit per close. Over /ws too, every session method
    and session_id is refused, the slot stays held and the game goes on; other calls reach OpenEnv as before."""
    with small_server(backend, monkeypatch, slots=1) as url, connect(ws_url(url)) as ws:
        assert exchange(ws, {"type": "reset", "data": {"episode_id": 3}})["type"] == "observation"
        for request_id, method in enumerate(("openenv/session/create", "openenv/session/close")):
            reply = exchange(ws, mcp_frame(request_id, method, session_id="anything"))
            assert reply["type"] == "mcp" and reply["data"]["id"] == request_id, reply
            assert reply["data"]["error"]["code"] == -32601
            assert reply["data"]["error"]["message"].startswith(f"{method} is not offered: this environment has")
        error = exchange(ws, mcp_frame(5, "tools/list", session_id=["x"]))["data"]["error"]
        assert error["code"] == -32602 and error["message"].startswith("params.session_id is not taken")
        assert exchange(ws, mcp_frame(6, "tools/list"))["data"]["error"]["message"] == (
            "Environment does not support MCP"
        )
        assert first_reply(url, 4)["data"]["code"] == "CAPACITY_REACHED"
        step = exchange(ws, {"type": "step", "data": {"action_type": "flag_suspicious", "doc_id": 2}})
        assert step["type"] == "observation" and step["data"]["observation"]["flagged_ids"] == [2]


@pytest.mark.parametrize(
    "params",
    ['{"x": "\\ud800"}', '{"x": ' + "[" * 5000 + "]" * 5000 + "}"],
    ids=["lone surrogate", "deep nesting"],
)
def test_a_session_call_no_stricter_parser_reads_is_refused_too(backend, monkeypatch, params):
    """A body a strict JSON parser refused (a lone surrogate escape) went on to OpenEnv's json.loads, which read it
    and opened a session: 256 such calls locked every /ws client out. Read as OpenEnv reads it, it is refused."""
    body = '{"jsonrpc": "2.0", "id": 7, "method": "openenv/session/create", "params": ' + params + "}"
    with small_server(backend, monkeypatch, slots=1) as url, httpx.Client(base_url=url, timeout=30) as http:
        for _ in range(3):
            error = http.post("/mcp", content=body, headers={"content-type": "application/json"}).json()["error"]
            assert error["code"] in (-32601, -32700), error
        with connect(ws_url(url)) as ws:
            assert exchange(ws, {"type": "reset", "data": {"episode_id": 3}})["type"] == "observation"


def test_a_silent_session_gives_its_slot_back_after_the_timeout_and_keeps_its_game(backend, monkeypatch):
    with small_server(backend, monkeypatch, slots=1, session_timeout=0.5) as url, connect(ws_url(url)) as first:
        assert exchange(first, {"type": "reset", "data": {"episode_id": 3}})["type"] == "observation"
        assert exchange(first, {"type": "step", "data": {"action_type": "flag_suspicious", "doc_id": 2}})["type"] == (
            "observation"
        )
        assert first_reply(url, 4)["data"]["code"] == "CAPACITY_REACHED"
        deadline = time.monotonic() + 20  # OpenEnv's reaper looks every max(timeout / 4, 5 s)
        while (reply := first_reply(url, 4))["type"] != "observation" and time.monotonic() < deadline:
            time.sleep(0.5)
        assert reply["type"] == "observation", reply
        state = exchange(first, {"type": "state"})["data"]  # the silent client's game is intact and goes on
        assert state["episode_id"] == "3" and state["flagged_ids"] == [2]
        done = exchange(
            first, {"type": "step", "data": {"action_type": "submit_answer", "answer": "x", "confidence": 0}}
        )
        assert done["data"]["done"] is True


def test_the_session_timeout_is_a_setting(monkeypatch):
    monkeypatch.delenv("CONTEXTCORRUPTION_SESSION_TIMEOUT", raising=False)
    assert parse_settings([]).session_timeout == SESSION_TIMEOUT_S == 300
    assert parse_settings(["--session-timeout", "45"]).session_timeout == 45
    monkeypatch.setenv("CONTEXTCORRUPTION_SESSION_TIMEOUT", "90")
    assert parse_settings([]).session_timeout == 90 and parse_settings(["--session-timeout", "5"]).session_timeout == 5
    for bad in ("0", "-1", "nan"):
        with pytest.raises(ValueError, match="^--session-timeout: "):
            parse_settings(["--session-timeout", bad])
    for name, value in {"DATA": "elsewhere", "REVISION": "v0", "CACHE_MB": "64", "SESSION_TIMEOUT": "90"}.items():
        monkeypatch.setenv(f"CONTEXTCORRUPTION_{name}", value)
    every_setting_restored(monkeypatch)
    export(Settings(data="data/episodes", session_timeout=12.5))  # what worker processes read (--workers > 1)
    assert os.environ["CONTEXTCORRUPTION_SESSION_TIMEOUT"] == "12.5" and Settings().session_timeout == 12.5


def every_setting_restored(monkeypatch) -> None:
    """export() sets every setting's variable and the state key: each is put back as it was after the test."""
    for variable in [f"CONTEXTCORRUPTION_{name.upper()}" for name in Settings.model_fields] + [KEY_ENV]:
        monkeypatch.setenv(variable, os.environ.get(variable, ""))
        if not os.environ[variable]:
            monkeypatch.delenv(variable)


def test_workers_read_every_setting_as_the_parent_validated_it(monkeypatch):
    """A stale variable that a flag overrode (CONTEXTCORRUPTION_PORT=abc beside --port) was valid in the parent, but
    each worker read the environment alone, crashed, and was restarted forever: the server never answered."""
    every_setting_restored(monkeypatch)
    for name in ("PORT", "WORKERS", "ACCESS_LOG"):
        monkeypatch.setenv(f"CONTEXTCORRUPTION_{name}", "abc")
    settings = parse_settings(["--data", "data/episodes", "--port", "7001", "--workers", "2", "--access-log"])
    export(settings)
    assert Settings() == settings

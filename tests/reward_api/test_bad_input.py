"""Bad input is a clear 4xx, never a 500; no response on any route carries a hidden column."""

from __future__ import annotations

import asyncio
import codecs
import gzip
import json
import socket

import httpx
import pytest
from openenv.core import GenericEnvClient
from websockets.sync.client import connect

from pipeline.schema import HIDDEN_COLUMNS
from reward_api.limits import MAX_BODY_BYTES, BodySizeLimit

SUB = {"episode_id": 3, "answer": "26", "flagged_ids": [3], "confidence": 0.5}
FLAG = {"action_type": "flag_suspicious", "doc_id": 1}
LONG_ANSWER = {"action_type": "submit_answer", "answer": "x" * 1001, "confidence": 0.5}  # over MAX_ANSWER_CHARS

CASES = [
    ("get", "/episodes/999999", None, 404, "no episode 999999"),
    ("get", "/episodes/-1", None, 422, "greater than or equal to 0, got -1"),
    ("get", "/episodes/abc", None, 422, "valid integer"),
    ("get", "/episodes/3_0", None, 422, "an episode id in digits, got '3_0'"),  # int() reads 30
    ("get", "/episodes/+5", None, 422, "in digits"),
    ("get", "/episodes/1.000", None, 422, "in digits"),
    ("get", "/episodes/%205", None, 422, "in digits"),
    ("post", "/reset", {"episode_id": 999999}, 404, "no episode"),
    ("post", "/reset", {"episode_id": -4}, 422, "non-negative"),
    ("post", "/reset", {"episode_id": "x1"}, 422, "non-negative"),
    ("post", "/reset", {"episode_id": "1" * 4301}, 422, "at most 4,300 digits, got 4,301"),
    ("post", "/reset", {"episode_id": "9" * 20}, 404, "no episode"),  # as the integer 99...9 is: not a 422
    ("post", "/reset", {"episode_id": "9" * 4300}, 404, f"no episode {'9' * 20}...{'9' * 20} (4,300 digits); ids"),
    ("post", "/reset", {"episode_id": 3, "split": "test"}, 404, "in split 'test': it is in split 'train'"),
    ("post", "/reset", {"episode_id": True}, 422, "valid integer"),
    ("post", "/reset", {"episode_id": 2.5}, 422, "valid integer"),
    ("post", "/reset", {"seed": -1}, 422, "greater than or equal"),
    ("post", "/reset", {"seed": 1, "task": "impossible"}, 422, "easy"),
    ("post", "/reset", {"seed": 1, "split": "dev"}, 422, "train"),
    ("post", "/reset", {"episode": 1}, 422, "Extra inputs"),
    ("post", "/reset", {"episode_id": 5, "seed": 7}, 422, "send episode_id or seed, not both"),
    ("post", "/step", {"action": {**FLAG, "doc_id": 8}}, 422, "less than or equal to 7"),
    ("post", "/step", {"action": {**FLAG, "doc_id": -1}}, 422, "greater than or equal to 0"),
    ("post", "/step", {"action": {"action_type": "fly"}}, 422, "read_doc"),
    ("post", "/step", {"action": {"action_type": "read_doc"}}, 422, "needs doc_id"),
    ("post", "/step", {"action": {"action_type": "submit_answer", "answer": "a", "confidence": 2}}, 422, "less than"),
    ("post", "/step", {"action": {**FLAG, "colour": "red"}}, 422, "Extra inputs"),
    ("post", "/step", {}, 422, "Field required"),
    # OpenEnv passed an unknown key on to step(): "func" and "self" collided with its helpers' parameters (a 500).
    ("post", "/step", {"action": FLAG, "func": 1}, 422, "Extra inputs"),
    ("post", "/step", {"action": FLAG, "self": 1}, 422, "Extra inputs"),
    ("post", "/step", {"action": FLAG, "render": True}, 422, "Extra inputs"),
    ("post", "/score", {**SUB, "episode_id": 10**9}, 404, "no episode"),
    ("post", "/score", {**SUB, "episode_id": -1}, 422, "greater than or equal to 0"),
    ("post", "/score", {**SUB, "flagged_ids": [8]}, 422, "less than or equal to 7"),
    ("post", "/score", {**SUB, "flagged_ids": [True]}, 422, "valid integer"),
    ("post", "/score", {**SUB, "episode_id": 3.0}, 422, "valid integer"),
    ("post", "/score", {**SUB, "confidence": 1.5}, 422, "less than or equal to 1"),
    ("post", "/score", {**SUB, "confidence": "high"}, 422, "valid number"),
    ("post", "/score", {**SUB, "bonus": 1}, 422, "Extra inputs"),
    ("post", "/score", {**SUB, "answer": "x" * 1001}, 422, "at most 1000 characters"),
    ("post", "/step", {"action": LONG_ANSWER}, 422, "at most 1000 characters"),
    ("post", "/score", {"episode_id": 3}, 422, "Field required"),
    ("post", "/score", {"episode_id": 3, "actions": []}, 422, "at least 1"),
    ("post", "/score", {"episode_id": 3, "actions": [FLAG]}, 422, "must end with submit_answer"),
    ("post", "/score/batch", {"submissions": []}, 422, "at least 1"),
    ("post", "/score/batch", {"submissions": [SUB, {**SUB, "episode_id": 10**9}]}, 404, "no episode"),
    ("post", "/score/batch", {"submissions": [SUB] * 8193}, 422, "at most 8192"),
    (
        "post",
        "/score/batch",
        {"submissions": [SUB, {"episode_id": 5, "actions": [FLAG]}]},
        422,
        "submissions[1] (episode 5): the trace must end with submit_answer",
    ),
]


@pytest.fixture(scope="module")
def http(base_url):
    with httpx.Client(base_url=base_url, timeout=30) as client:
        yield client


@pytest.mark.parametrize(("method", "path", "body", "status", "needle"), CASES, ids=lambda c: str(c)[:40])
def test_bad_input_gets_a_4xx_that_says_what_is_wrong(http, method, path, body, status, needle):
    if path == "/step" and "action" in body and body["action"].get("action_type") == "read_doc":
        body["action"]["state_token"] = http.post("/reset", json={"episode_id": 1}).json()["observation"][
            "state_token"
        ]
    reply = http.request(method, path, json=body)
    assert reply.status_code == status, reply.text
    assert needle in reply.text


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        ("/score", b'{"episode_id": 3, "answer": "a", "flagged_ids": [], "confidence": NaN}'),
        ("/score/batch", b'{"submissions": [{"episode_id": 3, "answer": "a", "flagged_ids": [], "confidence": NaN}]}'),
        ("/step", b'{"action": {"action_type": "submit_answer", "answer": "a", "confidence": NaN}}'),
        ("/step", b'{"action": {"action_type": "submit_answer", "answer": "a", "confidence": Infinity}}'),
        ("/score", b'{"episode_id": 3, "answer": '),
        ("/reset", b"[1, 2]"),
        # A lone surrogate is valid JSON but no string: echoed back as is, it broke the UTF-8 response (a 500).
        ("/score", b'{"episode_id": 3, "answer": "\\ud800", "flagged_ids": [], "confidence": 0.5}'),
        ("/reset", b'{"task": "\\ud83d"}'),
        ("/reset", b'{"\\ud800": 1}'),
        ("/step", b'{"action": {"action_type": "submit_answer", "answer": "\\udfff", "confidence": 0.5}}'),
    ],
)
def test_nan_infinity_surrogates_and_broken_json_are_422(http, path, raw):
    reply = http.post(path, content=raw, headers={"content-type": "application/json"})
    assert reply.status_code == 422, reply.text
    assert reply.json()["detail"]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"jsonrpc": "2.0", "method": "openenv/session/\\ud800", "id": 1}',
        b'{"jsonrpc": "2.0", "method": "openenv/session/create", "id": "\\ud800"}',
        b'{"jsonrpc": "2.0", "method": "tools/list", "id": "\\ud800"}',
        b'{"jsonrpc": "2.0", "method": "\\ud800", "id": 1}',
        b'{"jsonrpc": "2.0", "method": "tools/list", "id": 1, "params": {"session_id": "\\ud800"}}',
    ],
)
def test_a_lone_surrogate_over_mcp_is_a_parse_error(http, raw):
    """Echoed in the JSON-RPC reply (its id, its method), a lone surrogate broke the reply's UTF-8: a 500."""
    reply = http.post("/mcp", content=raw, headers={"content-type": "application/json"})
    assert reply.status_code == 200 and reply.json()["error"]["code"] == -32700, reply.text


def test_score_batch_reports_errors_as_score_does(http):
    """/score/batch parses its body with pydantic itself, whose errors were located without "body" and echoed the whole
    raw body as the input of a JSON syntax error (2.4 MB for a 760 KB body)."""
    bad = {**SUB, "confidence": 1.5}
    (one,) = http.post("/score", json=bad).json()["detail"]
    (batch,) = http.post("/score/batch", json={"submissions": [SUB, bad]}).json()["detail"]
    assert one["loc"][0] == "body" and batch["loc"] == ["body", "submissions", 1, *one["loc"][1:]]
    raw = json.dumps({"submissions": [SUB] * 5000})[:-2].encode() + b",]}"
    reply = http.post("/score/batch", content=raw, headers={"content-type": "application/json"})
    assert reply.status_code == 422 and len(reply.content) < 1000, reply.text[:300]
    (error,) = reply.json()["detail"]
    assert error["loc"] == ["body"] and error["input"] == {} and "trailing comma" in error["msg"]
    reply = http.post("/score/batch", json={"submissions": [SUB] * 8193})  # too many: the list was echoed whole
    assert reply.status_code == 422 and len(reply.content) < 1000, reply.text[:300]
    assert "at most 8192" in reply.text and "not echoed" in reply.text


def test_a_refused_action_on_the_websocket_is_reported_and_the_session_goes_on(base_url):
    with GenericEnvClient(base_url=base_url).sync() as env:
        env.reset(episode_id=3)
        # A broken cross-field rule once closed the session: its error carried an exception object.
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.step({"action_type": "read_doc"})
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.reset(episode_id="abc")
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):  # int() of it raised an interpreter error
            env.reset(episode_id="1" * 4301)
        assert not env.step(FLAG).done
        assert env.state()["episode_id"] == "3" and env.state()["flagged_ids"] == [1]


def test_a_websocket_frame_that_is_json_but_no_object_is_refused_and_the_session_goes_on(base_url):
    """OpenEnv's handler ended the session on `"hello"`, `5` or `[]` (it called .get on them)."""
    with connect(base_url.replace("http://", "ws://") + "/ws") as ws:
        ws.send(json.dumps({"type": "reset", "data": {"episode_id": 3}}))
        assert json.loads(ws.recv())["type"] == "observation"
        for frame in ('"hello"', "5", " []", "null"):
            ws.send(frame)
            reply = json.loads(ws.recv())
            assert reply["type"] == "error" and reply["data"]["code"] == "INVALID_JSON", reply
        for text in ("{not json", "hello"):  # not JSON at all: the session's own handler answers it
            ws.send(text)
            reply = json.loads(ws.recv())
            assert reply["data"]["code"] == "INVALID_JSON" and reply["data"]["message"].startswith("Invalid JSON: ")
        ws.send(json.dumps({"type": "state"}))
        assert json.loads(ws.recv())["data"]["episode_id"] == "3"


def test_a_websocket_frame_json_loads_would_fail_on_is_refused_and_the_session_goes_on(base_url):
    """Deep nesting, a 5,000-digit integer or a lone surrogate (parsed, but then the reply could not be encoded)
    ended the session with SESSION_ERROR, its game lost; the surrogate's submission had even been played."""
    surrogate = {"type": "step", "data": {"action_type": "submit_answer", "answer": "\ud800", "confidence": 0.5}}
    refused = {
        "lone surrogate": json.dumps(surrogate),
        "lone surrogate in a key": '{"type": "state", "\\udc00": 1}',
        "5,000-digit integer": '{"type": "step", "data": {"action_type": "read_doc", "doc_id": ' + "9" * 5000 + "}}",
        "deep nesting": '{"type": "step", "data": ' + "[" * 5000 + "]" * 5000 + "}",
        "deep nesting, no object": "[" * 5000 + "]" * 5000,
    }
    # Within the limits: they reach the session, which refuses the action and goes on.
    invalid = {
        "4,300-digit integer": '{"type": "step", "data": {"action_type": "read_doc", "doc_id": ' + "9" * 4300 + "}}",
        "150 levels": '{"type": "step", "data": {"action_type": "read_doc", "doc_id": ' + "[" * 150 + "]" * 150 + "}}",
        "surrogate pair": json.dumps({**surrogate, "data": {**surrogate["data"], "answer": "\U0001f600", "x": 1}}),
    }
    with connect(base_url.replace("http://", "ws://") + "/ws", max_size=None) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"episode_id": 3}}))
        ws.recv()
        ws.send(json.dumps({"type": "step", "data": FLAG}))
        ws.recv()
        for name, frame in refused.items():
            ws.send(frame)
            reply = json.loads(ws.recv())["data"]
            assert reply["code"] == "INVALID_JSON" and reply["message"].startswith("Invalid JSON: "), (name, reply)
        for name, frame in invalid.items():
            ws.send(frame)
            assert json.loads(ws.recv())["data"]["code"] == "VALIDATION_ERROR", name
        ws.send(json.dumps({"type": "state"}))
        state = json.loads(ws.recv())["data"]
        assert state["episode_id"] == "3" and state["flagged_ids"] == [1] and state["done"] is False


def test_a_websocket_reset_with_a_key_it_does_not_take_is_refused_naming_it(base_url):
    """OpenEnv passed every key of a reset's data on as an argument: "session_id" or "func" broke its own call, and the
    error named its internals ("_run_in_session_executor() got multiple values for argument 'session_id'")."""
    with connect(base_url.replace("http://", "ws://") + "/ws") as ws:
        ws.send(json.dumps({"type": "reset", "data": {"episode_id": 3}}))
        assert json.loads(ws.recv())["type"] == "observation"
        for key in ("session_id", "func", "self", "episode"):
            ws.send(json.dumps({"type": "reset", "data": {"seed": 1, key: "x"}}))
            reply = json.loads(ws.recv())["data"]
            assert reply["code"] == "VALIDATION_ERROR", reply
            assert reply["message"] == f"reset takes ['episode_id', 'seed', 'split', 'task']; unknown key(s) ['{key}']"
        ws.send(json.dumps({"type": "state"}))
        assert json.loads(ws.recv())["data"]["episode_id"] == "3"


def test_a_binary_websocket_frame_is_read_as_its_utf8_text_and_the_session_goes_on(base_url):
    """OpenEnv's handler reads text frames only: a binary one ended the session (SESSION_ERROR), its game lost."""
    with connect(base_url.replace("http://", "ws://") + "/ws") as ws:
        ws.send(json.dumps({"type": "reset", "data": {"episode_id": 3}}).encode())
        assert json.loads(ws.recv())["type"] == "observation"
        ws.send(json.dumps({"type": "step", "data": FLAG}).encode())
        assert json.loads(ws.recv())["type"] == "observation"
        for frame in (b"\xff\xfe{}", b"5"):
            ws.send(frame)
            reply = json.loads(ws.recv())["data"]
            assert reply["code"] == "INVALID_JSON" and reply["message"].startswith("Invalid"), reply
        ws.send(b'{"type": "state"}')
        state = json.loads(ws.recv())["data"]
        assert state["episode_id"] == "3" and state["flagged_ids"] == [1] and state["done"] is False


BIG = b"9" * 5000
DEEP = b"[" * 2000 + b"]" * 2000
SUB_RAW = b'{"episode_id": 3, "answer": "a", "flagged_ids": [], "confidence": 0.5}'


@pytest.mark.parametrize(
    ("path", "raw", "needle"),
    [
        ("/score", SUB_RAW.replace(b"3", BIG, 1), "Exceeds the limit (4300 digits) for integer string conversion"),
        ("/reset", b'{"episode_id": ' + BIG + b"}", "Exceeds the limit (4300 digits) for integer string conversion"),
        ("/step", b'{"action": ' + DEEP + b"}", "nested too deeply"),
        ("/score", SUB_RAW[:-1] + b", }", "Expecting property name enclosed in double quotes"),
        ("/reset", b'{"episode_id": 3,}', "Expecting property name enclosed in double quotes"),
        ("/step", b'{"action": {"action_type": "read_doc" "doc_id": 1}}', "Expecting ',' delimiter"),
        ("/score", SUB_RAW.replace(b'"a"', b'"\xff"'), "not UTF-8 (byte 0xff at offset 29)"),
        ("/score/batch", b'{"submissions": [' + SUB_RAW.replace(b"3", BIG, 1) + b"]}", "number out of range"),
        ("/score/batch", b'{"submissions": ' + DEEP + b"}", "recursion limit exceeded"),
        ("/score/batch", b'{"submissions": [' + SUB_RAW.replace(b'"a"', b'"\xff"') + b"]}", "invalid unicode"),
    ],
    ids=[
        "score-digits",
        "reset-digits",
        "step-nesting",
        "score-comma",
        "reset-comma",
        "step-delimiter",
        "score-utf8",
        "batch-digits",
        "batch-nesting",
        "batch-utf8",
    ],
)
def test_a_body_json_cannot_read_is_a_422_naming_the_problem(http, path, raw, needle):
    """FastAPI answered these with a bare 400 "There was an error parsing the body"."""
    reply = http.post(path, content=raw, headers={"content-type": "application/json"})
    assert reply.status_code == 422, reply.text
    (error,) = reply.json()["detail"]
    assert error["type"] == "json_invalid" and error["msg"].startswith("Invalid JSON: ") and needle in error["msg"]


@pytest.mark.parametrize("path", ["/score", "/reset", "/step", "/score/batch"])
def test_a_json_syntax_error_says_where_and_is_located_at_the_body(http, path):
    """FastAPI's routes said "Invalid JSON: Invalid control character at" (the position left in the location, as
    ["body", 14]); /score/batch, parsing with pydantic, located the same error at ["body"] with its position in the
    message. Every route now says both in the message."""
    raw = b'{"answer": "a\x1fb"}'
    reply = http.post(path, content=raw, headers={"content-type": "application/json"})
    assert reply.status_code == 422, reply.text
    (error,) = reply.json()["detail"]
    assert error["loc"] == ["body"] and error["type"] == "json_invalid", error
    assert error["msg"] in (
        "Invalid JSON: Invalid control character at character 13",  # json.loads (FastAPI)
        "Invalid JSON: control character (\\u0000-\\u001F) found while parsing a string at line 1 column 14",
    ), error


def test_an_actions_errors_are_located_in_the_action(http):
    """OpenEnv validates /step's action itself and located its errors without "body" and "action" (["doc_id"]), where
    every other error of a body is located from "body" (["body", "timeout_s"])."""
    token = http.post("/reset", json={"episode_id": 1}).json()["observation"]["state_token"]
    action = {"action_type": "read_doc", "doc_id": 1.5, "state_token": token}
    (error,) = http.post("/step", json={"action": action}).json()["detail"]
    assert error["loc"] == ["body", "action", "doc_id"] and "valid integer" in error["msg"], error
    (error,) = http.post("/step", json={"action": {"action_type": "read_doc", "state_token": token}}).json()["detail"]
    assert error["loc"][:2] == ["body", "action"] and "needs doc_id" in error["msg"], error
    (error,) = http.post("/step", json={"action": action, "timeout_s": "x"}).json()["detail"]
    assert error["loc"] == ["body", "timeout_s"], error


@pytest.mark.parametrize(
    ("path", "body"),
    [("/score", SUB), ("/score/batch", {"submissions": [SUB]}), ("/reset", {"episode_id": 3}), ("/step", {})],
)
def test_every_json_route_takes_json_as_application_json_in_utf8_without_a_bom(http, path, body):
    """/score skipped a text/plain body (422 "a valid dictionary") and decoded a BOM; /score/batch did the reverse."""
    raw = json.dumps(body).encode()
    for media in ("text/plain", "application/x-www-form-urlencoded", None):
        reply = http.post(path, content=raw, headers={} if media is None else {"content-type": media})
        assert reply.status_code == 415, (media, reply.text)
        named = f"Content-Type {media}" if media else "no Content-Type"
        assert reply.json()["detail"] == f"the body must be JSON sent as application/json; got {named}"
    for encoded, needle in (
        (codecs.BOM_UTF8 + raw, "starts with a UTF-8 byte order mark"),
        (raw.decode().encode("utf-16"), "is UTF-16 or UTF-32"),
        (raw.decode().encode("utf-16-le"), "is UTF-16 or UTF-32"),
        (raw.decode().encode("utf-32"), "is UTF-16 or UTF-32"),
    ):
        reply = http.post(path, content=encoded, headers={"content-type": "application/json"})
        assert reply.status_code == 422 and needle in reply.json()["detail"][0]["msg"], reply.text
    for coding, encoded in (("gzip", gzip.compress(raw)), ("br", raw), ("GZIP", gzip.compress(raw))):
        reply = http.post(
            path, content=encoded, headers={"content-type": "application/json", "content-encoding": coding}
        )
        assert reply.status_code == 415, (coding, reply.text)  # a gzip body was reported as UTF-16
        assert reply.json()["detail"] == f"the body must be sent uncompressed; got Content-Encoding {coding.lower()}"
    if path.startswith("/score"):
        for media in ("application/json; charset=utf-8", "application/vnd.api+json"):
            assert http.post(path, content=raw, headers={"content-type": media}).status_code == 200, media
        plain = {"content-type": "application/json", "content-encoding": "identity"}
        assert http.post(path, content=raw, headers=plain).status_code == 200


def test_the_batch_limits_are_the_readmes(http):
    """README: up to 8,192 submissions within 1 MiB: about 6,000 with 100-character answers, all 8,192 with answers of
    up to 45 characters (the suite's ids are shorter than a large build's, which the README's figures allow for)."""
    with_answer = [{**SUB, "answer": "x" * 100, "flagged_ids": [1, 2]}]
    assert http.post("/score/batch", json={"submissions": with_answer * 6000}).status_code == 200
    assert http.post("/score/batch", json={"submissions": with_answer * 8192}).status_code == 413
    short = [{**with_answer[0], "answer": "x" * 45}]
    assert http.post("/score/batch", json={"submissions": short * 8192}).status_code == 200


def test_body_over_one_mib_is_413_declared_or_streamed(http, base_url):
    big = b'{"submissions": [' + b" " * MAX_BODY_BYTES + b"]}"
    reply = http.post("/score/batch", content=big, headers={"content-type": "application/json"})
    assert reply.status_code == 413 and "limit is 1048576 bytes" in reply.json()["detail"]

    def chunks():
        for _ in range(40):
            yield b" " * 32768

    streamed = http.post("/score", content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 413 and "streamed" in streamed.json()["detail"]
    host, port = base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as raw:
        raw.sendall(b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n")
        assert b" 413 " in raw.recv(4096).split(b"\r\n")[0] + b" "


def test_a_content_length_that_is_no_number_is_a_400_not_a_413():
    """Read as "too large" before; servers whose HTTP parser lets such a header through reach this middleware."""

    async def app(scope, receive, send):
        raise AssertionError("the request reached the app")

    async def receive():
        return {"type": "http.request", "body": b"{}", "more_body": False}

    for value in (b"abc", b"-1", b"1e3", b" 5"):
        sent = []

        async def send(message, sent=sent):
            sent.append(message)

        asyncio.run(BodySizeLimit(app)({"type": "http", "headers": [(b"content-length", value)]}, receive, send))
        assert sent[0]["status"] == 400, value
        assert json.loads(sent[1]["body"]) == {"detail": f"Content-Length {value.decode()} is not a number of bytes"}


def _keys(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_no_route_returns_a_hidden_column(http, base_url, rows):
    """Every GET route without parameters, /episodes, and the whole game over HTTP and /ws."""
    paths = http.get("/openapi.json").json()["paths"]
    gets = [path for path, ops in paths.items() if "get" in ops and "{" not in path and path != "/schema"]
    replies = [http.get(path).json() for path in gets]
    schema = http.get("/schema").json()  # the action schema names its own "answer" field; what comes back may not
    replies += [schema["observation"]["properties"], schema["state"]["properties"]]
    replies.append(http.get("/episodes/7").json())
    reset = http.post("/reset", json={"episode_id": 7}).json()
    token = reset["observation"]["state_token"]
    replies += [reset, http.post("/reset", json={"seed": 2, "task": "easy"}).json()]
    flagged = http.post("/step", json={"action": {**FLAG, "state_token": token}}).json()
    replies.append(flagged)
    submit = {"action_type": "submit_answer", "answer": "a", "confidence": 0.1}
    replies.append(
        http.post("/step", json={"action": {**submit, "state_token": flagged["observation"]["state_token"]}}).json()
    )
    replies += [http.post("/score", json=SUB).json(), http.post("/score/batch", json={"submissions": [SUB]}).json()]
    with GenericEnvClient(base_url=base_url).sync() as env:
        replies += [env.reset(episode_id=7).observation, env.step(FLAG).observation, env.state()]
    leaked = {name: i for i, reply in enumerate(replies) for name in _keys(reply) & set(HIDDEN_COLUMNS)}
    assert not leaked, leaked
    state = http.get("/state").json()
    assert set(state) <= {"episode_id", "step_count", "flagged_ids", "budget_used", "done"}

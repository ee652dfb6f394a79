"""Access control: with an API token, playing and scoring need it as a bearer token; reading does not."""

from __future__ import annotations

import hmac
import json
import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from reward_api.auth import SCHEME_NAME, TOKEN_ENV
from reward_api.baselines import main as baselines_main
from reward_api.game import GameState
from reward_api.inference import main as inference_main
from reward_api.localserver import free_port, wait_healthy
from reward_api.server import build_app
from reward_api.tokens import TokenSigner
from tests.reward_api.conftest import SECRET, serve

TOKEN = "s3cret-api-token-0123456789"
GOOD = {"Authorization": f"Bearer {TOKEN}"}
SUB = {"episode_id": 3, "answer": "26", "flagged_ids": [3], "confidence": 0.5}
PROTECTED = [
    ("/score", SUB),
    ("/score/batch", {"submissions": [SUB]}),
    ("/reset", {"episode_id": 3}),
    ("/step", {"action": {"action_type": "read_doc", "doc_id": 1, "state_token": "x.y"}}),
]


def protected_server(backend) -> Iterator[str]:
    """A real uvicorn server of the suite's dataset that requires TOKEN (a module fixture here and in fuzzing)."""
    server, thread, url = serve(build_app(backend, api_token=TOKEN))
    yield url
    server.should_exit = True
    thread.join(timeout=10)


protected_url = pytest.fixture(scope="module", name="protected_url")(protected_server)


@pytest.fixture(scope="module")
def http(protected_url):
    with httpx.Client(base_url=protected_url, timeout=30) as client:
        yield client


@pytest.mark.parametrize(("path", "body"), PROTECTED, ids=[p for p, _ in PROTECTED])
@pytest.mark.parametrize(
    ("headers", "error"),
    [
        ({}, "missing"),
        ({"Authorization": f"Basic {TOKEN}"}, "missing"),
        ({"Authorization": "Bearer"}, "missing"),
        ({"Authorization": "Bearer wrong-token"}, "invalid"),
        ({"Authorization": f"Bearer {TOKEN}x"}, "invalid"),
        ({"Authorization": f"Bearer {TOKEN[:-1]}"}, "invalid"),
    ],
    ids=["none", "basic", "empty", "wrong", "longer", "shorter"],
)
def test_protected_routes_need_the_token(http, path, body, headers, error):
    reply = http.post(path, json=body, headers=headers)
    assert reply.status_code == 401, reply.text
    assert reply.json()["detail"].startswith(f"{error} bearer token") and TOKEN not in reply.text
    challenge = reply.headers["www-authenticate"]
    assert challenge.startswith("Bearer realm=") and ('error="invalid_token"' in challenge) == (error == "invalid")


def test_the_token_opens_scoring_and_a_whole_game(http):
    assert http.post("/score", json=SUB, headers=GOOD).json()["episode_id"] == 3
    assert len(http.post("/score/batch", json={"submissions": [SUB] * 2}, headers=GOOD).json()["results"]) == 2
    assert http.post("/score", json=SUB, headers={"authorization": f"bearer {TOKEN}"}).status_code == 200
    token = http.post("/reset", json={"episode_id": 3}, headers=GOOD).json()["observation"]["state_token"]
    submit = {"action_type": "submit_answer", "answer": "26", "confidence": 0.5, "state_token": token}
    assert http.post("/step", json={"action": submit}, headers=GOOD).json()["done"] is True


def test_reading_routes_stay_open(http):
    for path in ("/health", "/episodes/3", "/tasks", "/manifest", "/metadata", "/schema", "/state", "/openapi.json"):
        assert http.get(path).status_code == 200, path


def test_the_websocket_needs_the_token_too(protected_url):
    url = protected_url.replace("http://", "ws://") + "/ws"
    with pytest.raises(InvalidStatus) as refused:
        connect(url, open_timeout=10).close()
    assert refused.value.response.status_code == 403
    with connect(url, additional_headers=GOOD, open_timeout=10) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"episode_id": 3}}))
        assert '"episode_id": 3' in ws.recv(timeout=10).replace('"episode_id":3', '"episode_id": 3')


def test_the_token_is_compared_in_constant_time(http, monkeypatch):
    calls, compare = [], hmac.compare_digest

    def spy(given, expected):
        calls.append((given, expected))
        return compare(given, expected)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    assert http.post("/score", json=SUB, headers={"Authorization": "Bearer nope"}).status_code == 401
    assert calls == [(b"nope", TOKEN.encode())]


def test_openapi_declares_the_scheme_only_where_it_applies(http, base_url):
    spec = http.get("/openapi.json").json()
    assert spec["components"]["securitySchemes"][SCHEME_NAME] == {
        "type": "http",
        "scheme": "bearer",
        "description": f"The value of {TOKEN_ENV} on the server",
    }
    for path, method in (("/score", "post"), ("/score/batch", "post"), ("/reset", "post"), ("/step", "post")):
        operation = spec["paths"][path][method]
        assert operation["security"] == [{SCHEME_NAME: []}] and "401" in operation["responses"], path
    for path in ("/episodes/{episode_id}", "/tasks", "/manifest", "/health"):
        assert "security" not in spec["paths"][path]["get"], path
    open_spec = httpx.get(f"{base_url}/openapi.json").json()
    assert "securitySchemes" not in open_spec["components"]
    assert httpx.post(f"{base_url}/score", json=SUB).status_code == 200


def test_the_served_process_takes_the_token_from_the_environment_and_never_logs_it(served_dir, tmp_path):
    port = free_port()
    log_path = tmp_path / "server.log"
    env = {**os.environ, TOKEN_ENV: TOKEN, "CONTEXTCORRUPTION_STATE_KEY": "k", "CONTEXTCORRUPTION_ACCESS_LOG": "1"}
    command = [sys.executable, "-m", "reward_api", "--data", str(served_dir), "--port", str(port)]
    with log_path.open("w") as log:
        proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, proc, timeout=120)
        assert httpx.post(f"{url}/score", json=SUB).status_code == 401
        assert httpx.post(f"{url}/score", json=SUB, headers={"Authorization": "Bearer guess"}).status_code == 401
        assert httpx.post(f"{url}/score", json=SUB, headers=GOOD).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    text = log_path.read_text()
    assert "bearer token required" in text and '"POST /score HTTP/1.1" 401' in text, text[-2000:]
    assert TOKEN not in text and "guess" not in text


def test_a_state_token_signed_with_the_servers_secret_for_another_dataset_is_refused(http):
    """The signing key is derived from the secret and the dataset's params hash (the key binding over HTTP)."""
    token = TokenSigner(SECRET, "params-hash-of-another-dataset").sign(GameState(3))
    action = {"action_type": "read_doc", "doc_id": 0, "state_token": token}
    reply = http.post("/step", json={"action": action}, headers=GOOD)
    assert reply.status_code == 403 and "another server or dataset" in reply.json()["detail"]


def test_the_inference_script_sends_the_token_from_the_environment(protected_url, monkeypatch, capsys):
    """It sent no Authorization header: its first POST /reset got a 401 and the run died."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    assert inference_main(["--heuristic", "--url", protected_url, "--tasks", "easy", "--split", "validation"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("[START] task=easy") and lines[-1].startswith("[END] ")
    assert all(line.endswith("error=null") for line in lines[1:-1]), lines


def test_a_refused_reset_ends_the_episode_with_no_step_and_the_run_goes_on(protected_url, monkeypatch, capsys):
    """Without the token every POST /reset is a 401: it raised, leaving a [START] without its [END]."""
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert inference_main(["--heuristic", "--url", protected_url, "--tasks", "easy,hard", "--episodes", "2"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert [line.split(" env=")[0] for line in lines[::2]] == ["[START] task=easy"] * 2 + ["[START] task=hard"] * 2
    assert lines[1::2] == ["[END] success=false steps=0 score=0.0000 rewards="] * 4
    reasons = captured.err.splitlines()
    assert len(reasons) == 4 and all(r.startswith("POST /reset {") and "Bearer" in r for r in reasons), reasons


def test_the_baselines_stage_sends_the_token_to_the_server_it_starts(served_dir, monkeypatch, tmp_path):
    """local_server hands CONTEXTCORRUPTION_API_TOKEN to the server it starts, which then requires it: the stage's
    client must send it too (it did not, and the stage failed with a 401 whenever the variable was set)."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    out = tmp_path / "baselines.json"
    assert baselines_main(["--data", str(served_dir), "--episodes", "8", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["episodes"] == 8


def test_the_baselines_stage_refused_by_the_server_ends_in_one_line(served_dir, protected_url, monkeypatch, tmp_path):
    """Without the token a protected server answers /reset with a 401: the stage ended in a RuntimeError traceback
    through its thread pool."""
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    out = tmp_path / "baselines.json"
    with pytest.raises(SystemExit) as exit_:
        baselines_main(["--data", str(served_dir), "--url", protected_url, "--episodes", "4", "--out", str(out)])
    assert str(exit_.value.code).startswith("baselines: POST /reset answered 401: ") and not out.exists()

"""The inference script against a real server: its LLM path through a loopback chat-completions stand-in
(scripted replies, the real `openai` client), and its heuristic mode, checking the exact evaluator lines."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from reward_api.env import ENV_NAME, Backend, seeded_episode
from reward_api.inference import main, parse_action
from reward_api.scoring import score_key
from reward_api.server import build_app
from reward_api.store import EpisodeStore
from reward_api.tokens import TokenSigner
from tests.hiddenbuild import build_hidden
from tests.reward_api.conftest import SECRET, serve, truth_key

ROOT = Path(__file__).resolve().parents[2]
START = re.compile(r"^\[START\] task=(\w+) env=(\S+) model=(\S+)$")
STEP = re.compile(r"^\[STEP\] step=(\d+) action=(.+) reward=(-?\d+\.\d\d) done=(true|false) error=(.+)$")
END = re.compile(r"^\[END\] success=(true|false) steps=(\d+) score=(-?\d+\.\d{4}) rewards=((?:-?\d+\.\d\d,?)+)$")


def answer(handler: BaseHTTPRequestHandler, status: int, body: bytes, kind: str = "application/json") -> None:
    handler.send_response(status)
    handler.send_header("content-type", kind)
    handler.send_header("content-length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class LoopbackStandIn:
    """An HTTP server on 127.0.0.1 answering with `handler`, in a thread, until close()."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        handler.log_message = lambda *args: None
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class ChatStandIn(LoopbackStandIn):
    """POST /v1/chat/completions, answering scripted replies in order and recording requests."""

    def __init__(self, replies: list[str | bytes | int | None]) -> None:
        self.replies, self.requests = list(replies), []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                stand_in.requests.append((self.path, self.headers.get("authorization"), body))
                content = stand_in.replies.pop(0)
                if isinstance(content, bytes):  # a 200 that is no chat completion (an error object, a proxy's page)
                    answer(self, 200, content, "application/json" if content.startswith(b"{") else "text/html")
                elif isinstance(content, int):  # the API refuses (400: not retried by the client)
                    refusal = {"error": {"message": "overloaded", "type": "invalid_request"}}
                    answer(self, content, json.dumps(refusal).encode())
                else:
                    answer(self, 200, json.dumps(completion(body["model"], len(stand_in.requests), content)).encode())

        super().__init__(Handler)
        self.url = f"{self.origin}/v1"


def completion(model: str, number: int, content: str | None) -> dict:
    """A chat completion holding `content` (None: no choice)."""
    choices = [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [] if content is None else choices,
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def lines_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("[")]


def test_parse_action_explains_bad_replies():
    assert parse_action('Sure! {"action_type": "read_doc", "doc_id": 2} done') == {
        "action_type": "read_doc",
        "doc_id": 2,
    }
    # Braces in prose before the action, and an object without an action_type, are passed over.
    assert parse_action('I would flag {doc 3}. {"note": 1} {"action_type": "flag_suspicious", "doc_id": 3}') == {
        "action_type": "flag_suspicious",
        "doc_id": 3,
    }
    # A model's runaway object (an endless number, brackets nested past the interpreter's limit) ended the whole run
    # (RecursionError), or hid the action after it (ValueError).
    for runaway in ["9" * 5000, "[" * 3000 + "]" * 3000]:
        assert parse_action(f'{{"a": {runaway}}} {{"action_type": "read_doc", "doc_id": 1}}')["doc_id"] == 1
        with pytest.raises(ValueError, match="unreadable JSON action: an integer of over 4,300 digits, or nested"):
            parse_action(f'{{"a": {runaway}}}')
    # With the interpreter's limit off, only nesting is too much: the message names no 0-digit limit.
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        with pytest.raises(ValueError, match="^unreadable JSON action: nested too deep$"):
            parse_action('{"a": ' + "[" * 3000 + "]" * 3000 + "}")
    finally:
        sys.set_int_max_str_digits(limit)
    for reply, message in [
        ("no idea", "no JSON"),
        ("{'a': 1}", "no JSON"),
        ('{"a": 1,}', "unreadable"),
        ('{"doc_id": 1}', "action_type"),
        # json reads these, JSON has none: sending them raised in httpx and ended the whole run in a traceback
        ('{"action_type": "submit_answer", "answer": "x", "confidence": NaN}', "NaN, an infinity or a lone"),
        ('{"action_type": "read_doc", "doc_id": 1e400}', "NaN, an infinity or a lone surrogate"),
        ('{"action_type": "submit_answer", "answer": "\\ud800", "confidence": 1}', "NaN, an infinity or a lone"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_action(reply)


def played(monkeypatch, capsys, replies: list, argv: list[str]) -> tuple[list[str], ChatStandIn]:
    """The output lines of `python -m reward_api.inference argv` whose model is a stand-in answering `replies`."""
    chat = ChatStandIn(replies)
    monkeypatch.setenv("API_BASE_URL", chat.url)
    monkeypatch.setenv("MODEL_NAME", "test-model")
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    try:
        assert main(argv) == 0
    finally:
        chat.close()
    return lines_of(capsys.readouterr().out), chat


def test_model_path_prints_the_evaluator_lines(base_url, backend, rows, monkeypatch, capsys):
    episode_id = seeded_episode(backend.store, 5, "test", "medium")
    row = rows[episode_id]
    corrupt = sorted(row["corrupt_ids"])
    replies = [
        "Let me think about it.",  # not an action: an error step, no budget spent
        json.dumps({"action_type": "flag_suspicious", "doc_id": 9}),  # refused by the server (422)
        json.dumps({"action_type": "flag_suspicious", "doc_id": corrupt[0]}),
        "I am fairly sure. "
        + json.dumps({"action_type": "submit_answer", "answer": row["answer"], "confidence": 0.9}),
    ]
    out, chat = played(
        monkeypatch, capsys, replies, ["--url", base_url, "--tasks", "medium", "--split", "test", "--seed", "5"]
    )
    assert START.match(out[0]).groups() == ("medium", ENV_NAME, "test-model")
    steps = [STEP.match(line).groups() for line in out[1:-1]]
    assert [s[0] for s in steps] == ["1", "2", "3", "4"]
    assert steps[0][1] == "invalid" and "no JSON" in steps[0][4]
    assert steps[1][1] == "flag_suspicious(doc_id=9)" and steps[1][4] != "null"
    assert steps[2] == ("3", f"flag_suspicious(doc_id={corrupt[0]})", "0.00", "false", "null")
    expected = score_key(row["answer"], frozenset(corrupt[:1]), 0.9, 2, truth_key(row))["total"]
    assert steps[3][2:] == (f"{expected:.2f}", "true", "null")
    success, count, score, rewards = END.match(out[-1]).groups()
    threshold = {t["name"]: t["success_threshold"] for t in httpx.get(f"{base_url}/tasks").json()}["medium"]
    assert (success, count, score) == (str(expected >= threshold).lower(), "4", f"{expected:.4f}")
    assert rewards == f"0.00,0.00,0.00,{expected:.2f}"
    paths, auths, bodies = zip(*chat.requests, strict=True)
    assert set(paths) == {"/v1/chat/completions"} and set(auths) == {"Bearer hf_test_token"}
    assert {b["model"] for b in bodies} == {"test-model"}
    assert row["question"] in bodies[0]["messages"][1]["content"]
    assert all(doc["content"] in bodies[0]["messages"][1]["content"] for doc in row["documents"])
    assert len(bodies[-1]["messages"]) == 2 * len(bodies)  # the system prompt, then a user/assistant pair per turn
    # Each refusal reaches the model in the next turn: the reply that held no action, the action the server refused.
    told = [b["messages"][-1]["content"] for b in bodies[1:]]
    assert told[0].startswith("Your last reply was refused: no JSON action in the reply. Flagged: []")
    assert told[1].startswith(f"Your last reply was refused: {steps[1][4]}. Flagged: []")
    assert not told[2].startswith("Your last reply was refused")


def test_model_that_never_submits_is_closed_with_an_empty_answer(base_url, monkeypatch, capsys):
    replies = [json.dumps({"action_type": "read_doc", "doc_id": 0})] * 12
    out, _ = played(monkeypatch, capsys, replies, ["--url", base_url, "--tasks", "easy", "--split", "validation"])
    assert len(out) == 14 and STEP.match(out[-2]).group(4) == "true"  # the 12th read uses up the budget
    assert END.match(out[-1]).group(2) == "12"


def test_a_failing_model_ends_its_episode_and_the_run_goes_on(base_url, monkeypatch, capsys):
    """An API error (after the client's retries) or an answer with no choice ended the whole run in a traceback, a
    [START] without its [END], every later episode skipped."""
    flag = json.dumps({"action_type": "flag_suspicious", "doc_id": 0})
    argv = ["--url", base_url, "--tasks", "easy", "--split", "validation", "--episodes", "2"]
    out, _ = played(monkeypatch, capsys, [flag, 400, flag, None], argv)
    assert [line.split(" ", 1)[0] for line in out] == ["[START]", "[STEP]", "[STEP]", "[END]"] * 2
    for failed, end in ((out[2], out[3]), (out[6], out[7])):
        action, error = STEP.match(failed).group(2, 5)
        assert action == "none" and error.startswith("model: ") and END.match(end).group(1) == "false"
    assert "BadRequestError" in out[2] and "the API's answer holds no reply" in out[6]


def test_a_reply_that_is_no_chat_completion_or_no_json_value_ends_no_run(base_url, monkeypatch, capsys):
    """A 200 holding an error object or a proxy's page, and an action holding NaN, raised out of the run (a
    TypeError, an AttributeError, httpx's ValueError): a [START] without its [END], every later episode skipped."""
    nan = '{"action_type": "submit_answer", "answer": "x", "confidence": NaN}'
    submit = json.dumps({"action_type": "submit_answer", "answer": "x", "confidence": 0.5})
    replies = [nan, submit, b'{"error": {"message": "rate limited"}}', b"<html>busy</html>"]
    argv = ["--url", base_url, "--tasks", "easy", "--split", "validation", "--episodes", "3"]
    out, _ = played(monkeypatch, capsys, replies, argv)
    assert [line.split(" ", 1)[0] for line in out] == ["[START]", "[STEP]", "[STEP]", "[END]"] + [
        "[START]",
        "[STEP]",
        "[END]",
    ] * 2
    refusal = "the JSON action holds NaN, an infinity or a lone surrogate: no JSON value"
    assert STEP.match(out[1]).group(2, 5) == ("invalid", refusal)
    assert STEP.match(out[2]).group(2, 4) == ('submit_answer(answer="x",confidence=0.5)', "true")
    for failed in (out[5], out[8]):
        assert STEP.match(failed).group(2) == "none" and "model: the API's answer holds no reply" in failed


NO_SERVER = "{url} is no reward server: GET /tasks and /metadata do not answer as one does"


class PageStandIn(LoopbackStandIn):
    """GET answering one status and body to every path: a server that is not a reward server."""

    def __init__(self, status: int, body: bytes) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                answer(self, status, body, "text/html")

        super().__init__(Handler)


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (500, b'{"detail": "tiers failed"}', "the reward server at {url} refused GET /tasks: tiers failed"),
        (200, b"<html>another service</html>", NO_SERVER),
        (200, b'[{"title": "x"}]', NO_SERVER),
    ],
    ids=["refused", "html", "other-json"],
)
def test_a_server_that_refuses_or_is_none_ends_the_run_in_one_line(status, body, message):
    """A 500 said "no reward server at ..." over two lines; a 200 that was no JSON, a traceback."""
    page = PageStandIn(status, body)
    try:
        with pytest.raises(SystemExit) as exit_:
            main(["--heuristic", "--url", page.origin])
    finally:
        page.close()
    assert str(exit_.value.code) == message.format(url=page.origin)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--split", "bogus"], "argument --split: invalid choice: 'bogus'"),
        (["--seed", "-1"], "--seed + --episodes - 1 in 0..9223372036854775807 (got -1)"),
        (["--episodes", "0"], "--episodes must be >= 1"),
    ],
)
def test_arguments_the_server_would_refuse_are_refused_before_any_request(args, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--heuristic", "--url", "http://127.0.0.1:9", *args])  # nothing listens there: no request is made
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def run_heuristic(url: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """The inference script in heuristic mode against `url`, with no key and no token in its environment."""
    return subprocess.run(
        [sys.executable, "-m", "reward_api.inference", "--heuristic", "--url", url, *args],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_heuristic_mode_needs_no_key(base_url):
    result = run_heuristic(base_url, "--episodes", "2")
    assert result.returncode == 0, result.stderr
    out = lines_of(result.stdout)
    assert len(out) == len(result.stdout.splitlines())  # nothing else on stdout
    starts = [i for i, line in enumerate(out) if line.startswith("[START]")]
    assert [START.match(out[i]).group(1) for i in starts] == ["easy", "easy", "medium", "medium", "hard", "hard"] + [
        "adversarial"
    ] * 2
    for begin, end in zip(starts, [*starts[1:], len(out)], strict=True):
        steps = [STEP.match(line) for line in out[begin + 1 : end - 1]]
        assert all(steps) and [s.group(5) for s in steps] == ["null"] * len(steps)
        success, count, score, rewards = END.match(out[end - 1]).groups()
        assert int(count) == len(steps) and rewards.split(",")[-1] == f"{float(score):.2f}" == steps[-1].group(3)


@pytest.fixture(scope="module")
def sealed_url(tmp_path_factory, hidden_facts_dir) -> Iterator[str]:
    """A build whose test split is hidden, served without its answers: its episodes play, every submission is a 403."""
    episodes, _ = build_hidden(tmp_path_factory.mktemp("sealed"), hidden_facts_dir)
    store = EpisodeStore(episodes, cache_mb=1)
    server, thread, url = serve(build_app(Backend(store, TokenSigner(SECRET, store.manifest.params_hash))))
    yield url
    server.should_exit = True
    thread.join(timeout=10)


def test_a_refusal_that_asking_again_cannot_change_ends_the_episode_unsuccessfully(sealed_url):
    """The script retried a 403 until its turns ran out, then retried the closing empty submission forever."""
    result = run_heuristic(sealed_url, "--split", "test", "--tasks", "easy,hard", timeout=120)
    assert result.returncode == 0, result.stderr
    out = lines_of(result.stdout)
    starts = [i for i, line in enumerate(out) if line.startswith("[START]")]
    assert len(starts) == 2
    for begin, end in zip(starts, [*starts[1:], len(out)], strict=True):
        steps = [STEP.match(line).groups() for line in out[begin + 1 : end - 1]]
        assert [s[4] for s in steps[:-1]] == ["null"] * (len(steps) - 1)  # flags are played, not scored
        assert steps[-1][1].startswith("submit_answer(") and steps[-1][3] == "false"
        assert steps[-1][4].startswith("ground truth of split test is not on this server")
        assert END.match(out[end - 1]).groups()[:3] == ("false", str(len(steps)), "0.0000")

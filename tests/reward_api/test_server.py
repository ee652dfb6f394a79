"""The served API on a real uvicorn server: games over HTTP and /ws, scoring routes, one reward everywhere."""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path

import httpx
import pytest
from openenv.core import GenericEnvClient

from pipeline.schema import MAX_BUDGET, NUM_DOCS
from reward_api.env import Backend
from reward_api.game import GameState
from reward_api.scoring import REWARD_VERSION, score_key, score_submission_key
from reward_api.server import build_app
from reward_api.store import EpisodeStore
from reward_api.tokens import TokenSigner
from tests.reward_api.conftest import SECRET, serve, truth_key


@pytest.fixture(scope="module")
def http(base_url):
    with httpx.Client(base_url=base_url, timeout=30) as client:
        yield client


def step(http, token, **action):
    return http.post("/step", json={"action": {**action, "state_token": token}})


def test_a_full_game_over_plain_http_with_state_tokens(http, rows):
    episode_id = 101
    truth = rows[episode_id]
    first = http.post("/reset", json={"episode_id": episode_id}).json()
    obs = first["observation"]
    assert obs["episode_id"] == episode_id and obs["budget_remaining"] == MAX_BUDGET and obs["turn"] == 0
    assert [d["doc_id"] for d in obs["documents"]] == list(range(NUM_DOCS)) and obs["question"] == truth["question"]
    token = obs["state_token"]
    wrong = next(i for i in range(NUM_DOCS) if i not in truth["corrupt_ids"])
    plays = [{"action_type": "read_doc", "doc_id": 0}, {"action_type": "flag_suspicious", "doc_id": wrong}]
    plays += [{"action_type": "flag_suspicious", "doc_id": i} for i in truth["corrupt_ids"]]
    plays += [{"action_type": "unflag_doc", "doc_id": wrong}]
    for turn, action in enumerate(plays, start=1):
        reply = step(http, token, **action)
        assert reply.status_code == 200, reply.text
        obs = reply.json()["observation"]
        assert obs["turn"] == turn and obs["budget_remaining"] == MAX_BUDGET - turn and not reply.json()["done"]
        token = obs["state_token"]
    assert obs["flagged_ids"] == sorted(truth["corrupt_ids"])
    assert [d["doc_id"] for d in obs["documents"] if d["is_flagged"]] == sorted(truth["corrupt_ids"])
    final = step(http, token, action_type="submit_answer", answer=truth["answer"].upper(), confidence=0.75).json()
    expected = score_key(truth["answer"], frozenset(truth["corrupt_ids"]), 0.75, len(plays) + 1, truth_key(truth))
    assert final["done"] and final["observation"]["reward_breakdown"] == expected
    assert final["observation"]["reward_version"] == REWARD_VERSION
    assert final["reward"] == expected["total"]
    late = step(http, final["observation"]["state_token"], action_type="read_doc", doc_id=1)
    assert late.status_code == 409 and "is over" in late.json()["detail"]


def _payload(token):
    text = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def _forge(token, **change):
    raw = json.dumps({**_payload(token), **change}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode() + "." + token.split(".")[1]


def test_tampered_foreign_and_moved_tokens_are_refused(http, backend):
    token = http.post("/reset", json={"episode_id": 5}).json()["observation"]["state_token"]
    foreign = TokenSigner(b"another-secret", backend.store.manifest.params_hash)
    cases = {
        "moved to another episode": _forge(token, e=6),
        "budget rewound": _forge(token, u=0, f=[1, 2, 3]),
        "signed by another server": foreign.sign(GameState(5)),
        "garbage": "not-a-token",
    }
    for name, bad in cases.items():
        reply = step(http, bad, action_type="read_doc", doc_id=1)
        assert reply.status_code == 403, name
        assert "state_token" in reply.json()["detail"], name
    missing = http.post("/step", json={"action": {"action_type": "read_doc", "doc_id": 1}})
    assert missing.status_code == 422 and "state_token is required" in missing.json()["detail"]


def test_budget_exhaustion_forces_the_empty_submission(http, rows):
    token = http.post("/reset", json={"episode_id": "60"}).json()["observation"]["state_token"]
    for turn in range(MAX_BUDGET):
        reply = step(http, token, action_type="flag_suspicious" if turn == 0 else "read_doc", doc_id=3).json()
        token = reply["observation"]["state_token"]
    assert reply["done"] and reply["observation"]["budget_remaining"] == 0
    assert reply["observation"]["reward_breakdown"] == score_key(
        "", frozenset({3}), 0.0, MAX_BUDGET, truth_key(rows[60])
    )


def test_the_openenv_client_plays_an_episode_over_ws(base_url, rows):
    truth = rows[140]
    with GenericEnvClient(base_url=base_url).sync() as env:
        first = env.reset(episode_id=140)
        assert first.observation["episode_id"] == 140 and first.observation["question"] == truth["question"]
        for doc_id in truth["corrupt_ids"]:
            result = env.step({"action_type": "flag_suspicious", "doc_id": doc_id})
        state = env.state()
        assert state["episode_id"] == "140" and state["budget_used"] == len(truth["corrupt_ids"])
        assert set(state) == {"episode_id", "step_count", "flagged_ids", "budget_used", "done"}
        result = env.step({"action_type": "submit_answer", "answer": truth["answer"], "confidence": 1.0})
        assert result.done and result.observation["flagged_ids"] == sorted(truth["corrupt_ids"])
        assert (
            result.reward
            == score_submission_key(truth["answer"], truth["corrupt_ids"], 1.0, truth_key(truth))["total"]
        )
        other = env.reset(episode_id=141).observation["state_token"]
        env.reset(episode_id=140)
        with pytest.raises(RuntimeError, match="belongs to episode 141"):
            env.step({"action_type": "read_doc", "doc_id": 0, "state_token": other})


def test_a_ws_session_takes_only_its_current_token_and_no_step_once_its_game_is_over(base_url, rows):
    """Resending an older token (the reset's) replayed the session's game from it: a finished episode could be
    submitted again with another answer."""
    truth = rows[150]
    submit = {"action_type": "submit_answer", "answer": truth["answer"], "confidence": 1.0}
    with GenericEnvClient(base_url=base_url).sync() as env:
        first = env.reset(episode_id=150).observation["state_token"]
        flagged = env.step({"action_type": "flag_suspicious", "doc_id": 0}).observation["state_token"]
        with pytest.raises(RuntimeError, match="state_token is not this session's current state"):
            env.step({**submit, "state_token": first})
        over = env.step({"action_type": "submit_answer", "answer": "wrong", "confidence": 1.0, "state_token": flagged})
        assert over.done and over.observation["reward_breakdown"]["answer_correctness"] == 0
        for token in (first, flagged, over.observation["state_token"], None):
            with pytest.raises(RuntimeError, match="episode 150 is over; reset to play again"):
                env.step(submit if token is None else {**submit, "state_token": token})
        state = env.state()
        assert state["done"] and state["budget_used"] == 2 and state["flagged_ids"] == [0]
        assert env.reset(episode_id=150).observation["turn"] == 0  # the session itself goes on
        assert env.step(submit).reward == score_submission_key(truth["answer"], [], 1.0, truth_key(truth))["total"]


def test_one_submission_gets_one_breakdown_in_process_and_on_every_route(http, rows):
    for episode_id, answer, flags, confidence in (
        (3, "26", [3], 0.5),
        (120, "wrong", [0, 1, 2, 7], 0.9),
        (170, "x", [], 0),
    ):
        truth = rows[episode_id]
        in_process = score_submission_key(answer, flags, confidence, truth_key(truth))
        one_shot = {"episode_id": episode_id, "answer": answer, "flagged_ids": flags, "confidence": confidence}
        actions = [{"action_type": "flag_suspicious", "doc_id": d} for d in flags]
        actions.append({"action_type": "submit_answer", "answer": answer, "confidence": confidence})
        trace = {"episode_id": episode_id, "actions": actions}
        expected = {"episode_id": episode_id, "reward": in_process["total"], "breakdown": in_process}
        expected["reward_version"] = REWARD_VERSION
        assert http.post("/score", json=one_shot).json() == expected
        assert http.post("/score", json=trace).json() == expected
        assert http.post("/score/batch", json={"submissions": [one_shot, trace] * 3}).json() == {
            "results": [expected] * 6
        }
        token = http.post("/reset", json={"episode_id": episode_id}).json()["observation"]["state_token"]
        for action in actions:
            reply = step(http, token, **action).json()
            token = reply["observation"]["state_token"]
        assert reply["observation"]["reward_breakdown"] == in_process


def _plain(text: str) -> str:
    """Lowercase, punctuation dropped, spaces collapsed: written here, not taken from the code under test."""
    return " ".join(re.sub(r"[^\w\s]", "", text.lower()).split())


def test_an_alias_or_a_respelling_of_the_answer_is_correct_on_every_route(http, rows):
    """Expected values come from the reward's definition, not from the server's own answer keys."""
    row = next(r for r in rows.values() if any(_plain(a) != _plain(r["answer"]) for a in r["answer_aliases"]))
    alias = next(a for a in row["answer_aliases"] if _plain(a) != _plain(row["answer"]))
    for answer, correct in ((alias, 0.4), (f" {row['answer'].upper()}!", 0.4), ("no such answer", 0.0)):
        one_shot = {"episode_id": row["episode_id"], "answer": answer, "flagged_ids": [], "confidence": 1.0}
        trace = {"episode_id": row["episode_id"], "actions": [{"action_type": "submit_answer", "answer": answer,
                                                               "confidence": 1.0}]}  # fmt: skip
        for body in (one_shot, trace):
            breakdown = http.post("/score", json=body).json()["breakdown"]
            assert breakdown["answer_correctness"] == correct, (answer, row["answer"], row["answer_aliases"])
            assert breakdown["confidence_calibration"] == (0.1 if correct else -0.2)


def test_a_batch_of_1024_is_scored_in_order(http, rows):
    submissions = [
        {
            "episode_id": i % 176,
            "answer": rows[i % 176]["answer"] if i % 2 else "no",
            "flagged_ids": [i % 8],
            "confidence": 0.5,
        }
        for i in range(1024)
    ]
    results = http.post("/score/batch", json={"submissions": submissions}).json()["results"]
    assert [r["episode_id"] for r in results] == [s["episode_id"] for s in submissions]
    for sub, result in zip(submissions, results, strict=True):
        key = truth_key(rows[sub["episode_id"]])
        assert result["breakdown"] == score_submission_key(sub["answer"], sub["flagged_ids"], 0.5, key)


def test_seeded_resets_are_deterministic_within_split_and_task(http, rows):
    picks = set()
    for seed in range(12):
        body = {"seed": seed, "split": "validation", "task": "hard"}
        first = http.post("/reset", json=body).json()["observation"]["episode_id"]
        assert http.post("/reset", json=body).json()["observation"]["episode_id"] == first
        assert rows[first]["split"] == "validation" and rows[first]["task"] == "hard"
        picks.add(first)
    assert len(picks) > 1
    assert (
        rows[http.post("/reset", json={"seed": 3, "split": "test"}).json()["observation"]["episode_id"]]["split"]
        == "test"
    )


def test_a_split_or_task_sent_with_an_episode_id_must_be_that_episodes(http, rows):
    """They choose seeded resets; beside an id they were ignored, so a caller asking for a hard test episode by a
    wrong id played something else."""
    episode = rows[5]
    own = {"episode_id": 5, "split": episode["split"], "task": episode["task"]}
    assert http.post("/reset", json=own).json()["observation"]["episode_id"] == 5
    other = next(task for task in ("easy", "medium", "hard", "adversarial") if task != episode["task"])
    reply = http.post("/reset", json={**own, "task": other})
    assert reply.status_code == 404
    assert reply.json()["detail"] == (
        f"no episode 5 in task {other!r}: it is in split {episode['split']!r}, task {episode['task']!r}"
    )


def test_episode_view_and_listing_routes(http, rows, backend):
    view = http.get("/episodes/42").json()
    assert view == {k: rows[42][k] for k in ("episode_id", "split", "task", "question", "documents", "max_budget")}
    tasks = http.get("/tasks").json()
    assert [(t["name"], t["corrupt_docs"]) for t in tasks] == [
        ("easy", 1),
        ("medium", 2),
        ("hard", 3),
        ("adversarial", 4),
    ]
    assert all(0.6 < t["success_threshold"] <= 1.05 for t in tasks)
    manifest = http.get("/manifest").json()
    assert manifest == backend.store.manifest.model_dump(mode="json") and manifest["reward_version"] == REWARD_VERSION
    assert http.get("/health").json() == {"status": "healthy"}
    assert http.get("/metadata").json()["name"] == "context_corruption"
    schema = http.get("/schema").json()
    assert (
        "state_token" in schema["action"]["properties"] and "reward_breakdown" in schema["observation"]["properties"]
    )


def test_openapi_documents_every_body_with_examples(http):
    spec = http.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for name in ("ResetBody", "SubmissionIn", "TraceIn"):
        assert schemas[name].get("examples"), name
    assert spec["paths"]["/step"]["post"]["requestBody"]["content"]["application/json"]["examples"]["submit"]
    batch = spec["paths"]["/score/batch"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert batch["examples"] and "submissions" in batch["properties"]
    for path in ("/episodes/{episode_id}", "/score", "/score/batch", "/tasks", "/manifest", "/reset"):
        operation = next(iter(spec["paths"][path].values()))
        assert operation.get("description") and operation.get("summary"), path


def test_a_shard_damaged_after_start_up_is_a_503_naming_it(served_dir, tmp_path):
    """A shard cut short (or replaced) under a running server was a bare text/plain 500 on /reset and /score, while
    /health said healthy; now a JSON 503 names the file (the request is not at fault). /episodes may still answer
    from the agent views cached beside the build."""
    data = tmp_path / "episodes"
    shutil.copytree(served_dir, data)
    store = EpisodeStore(data, cache_mb=0.5, preload_keys=False)
    server, thread, url = serve(build_app(Backend(store, TokenSigner(SECRET, store.manifest.params_hash))))
    train = [shard for shard in store.manifest.shards if shard.split == "train"]
    try:
        cut = data / train[1].path
        cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])  # its last row groups are gone
        last = train[1].first_id + train[1].num_rows - 1
        with httpx.Client(base_url=url, timeout=30) as http:
            for reply, shard in (
                (http.post("/reset", json={"split": "train", "task": "easy", "seed": 1}), train[1]),
                (
                    http.post(
                        "/score",
                        json={
                            "episode_id": last - 1,
                            "answer": "x",
                            "flagged_ids": [],
                            "confidence": 0.5,
                        },
                    ),
                    train[1],
                ),
            ):
                assert reply.status_code == 503 and reply.headers["content-type"] == "application/json", reply.text
                assert Path(shard.path).name in reply.json()["detail"], reply.text
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_head_answers_as_get_without_a_body(http):
    """Monitors probe with HEAD: it was a 405 on every route."""
    for path in ("/health", "/episodes/3", "/tasks"):
        got, head = http.get(path), http.head(path)
        assert head.status_code == got.status_code == 200 and head.content == b"", path
        assert head.headers["content-type"] == got.headers["content-type"]
        assert head.headers["content-length"] == got.headers["content-length"] == str(len(got.content))
    assert http.head("/episodes/999999").status_code == 404
    refused = http.head("/score")
    assert refused.status_code == 405 and refused.headers["allow"] == "POST"

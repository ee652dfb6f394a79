"""Parity: the reward training computes equals what the served API returns, against a real uvicorn server
(`python -m reward_api`) on a loopback port, for one-shot completions and for tool-mode traces."""

from __future__ import annotations

import json

import httpx
import pytest

from reward_api.localserver import local_server
from train.rewards import EMPTY_SUBMISSION, episode_reward, parse_completion
from train.tools import ContextCorruptionEnv


@pytest.fixture(scope="module")
def server(episodes_dir):
    with local_server(episodes_dir) as served:
        yield served.url


def _completions(row: dict) -> list[str]:
    corrupt, answer = row["corrupt_ids"], row["answer"]
    wrong = next((c for c in row["doc_claims"] if c and c != answer), "nobody")
    return [
        f'{{"answer": "{answer}", "flagged_ids": {corrupt}, "confidence": 0.9}}',
        f'<think>hmm</think> {{"answer": "{wrong}", "flagged_ids": [0, 1, 2], "confidence": 0.35}}',
        f'{{"answer": "{answer.upper()}!", "flagged_ids": [], "confidence": 1}}',
        f'{{"answer": "{answer}"}}',
        '{"answer": "x", "flagged_ids": [9], "confidence": 0.5}',
        "I am not sure.",
    ]


def test_oneshot_reward_equals_the_servers_score(server, episode_rows):
    rows = episode_rows[:20]
    items = [(row, text) for row in rows for text in _completions(row)]
    training = episode_reward(
        [[{"role": "assistant", "content": text}] for _, text in items],
        *([row[col] for row, _ in items] for col in ("answer", "answer_aliases", "corrupt_ids", "max_budget")),
    )
    submissions = []
    for row, text in items:
        sub = parse_completion(text)[0]
        submissions.append(
            {
                "episode_id": row["episode_id"],
                "answer": sub.answer,
                "flagged_ids": list(sub.flagged_ids),
                "confidence": sub.confidence,
            }
        )
    response = httpx.post(f"{server}/score/batch", json={"submissions": submissions}, timeout=30)
    assert response.status_code == 200, response.text
    served = [result["reward"] for result in response.json()["results"]]
    assert training == served
    single = httpx.post(f"{server}/score", json=submissions[0], timeout=30).json()
    assert single["reward"] == training[0] and single["breakdown"]["total"] == training[0]


def _replies(row: dict) -> list[tuple[dict, int]]:
    """JSON replies a client could send with the episode id, and the status the server answers them with."""
    answer, corrupt = row["answer"], row["corrupt_ids"]
    return [
        ({"answer": answer, "flagged_ids": [corrupt[0]] * 3, "confidence": 0.9}, 200),  # duplicates: one flag
        ({"answer": answer, "confidence": 1}, 200),  # no flags; an integer confidence
        ({"answer": answer, "flagged_ids": corrupt}, 422),  # no confidence
        ({"answer": answer, "flagged_ids": corrupt, "confidence": 0.9, "note": "x"}, 422),  # an extra key
        ({"answer": answer, "flagged_ids": [corrupt[0]] * 9, "confidence": 0.9}, 422),  # over 8 flags
        ({"flagged_ids": corrupt, "confidence": 0.9}, 422),  # no answer
    ]


def test_a_reply_the_server_refuses_is_scored_as_the_empty_submission(server, episode_rows):
    """Training accepts a reply exactly when the server does; one it refuses (422) is malformed, which training
    scores as the empty submission, and what it accepts earns what the server returns."""
    for row in episode_rows[:5]:
        columns = [[row[col]] for col in ("answer", "answer_aliases", "corrupt_ids", "max_budget")]
        empty = {"episode_id": row["episode_id"], "answer": "", "flagged_ids": [], "confidence": 0.0}
        empty_reward = httpx.post(f"{server}/score", json=empty, timeout=30).json()["reward"]
        for reply, status in _replies(row):
            response = httpx.post(f"{server}/score", json={**reply, "episode_id": row["episode_id"]}, timeout=30)
            assert response.status_code == status, (reply, response.text)
            training = episode_reward([json.dumps(reply)], *columns)[0]
            if status == 200:
                assert training == response.json()["reward"], reply
            else:
                assert parse_completion(json.dumps(reply)) == (EMPTY_SUBMISSION, False), reply
                assert training == empty_reward, reply


def test_tool_mode_reward_equals_the_servers_score_for_the_trace(server, episode_rows):
    for row in episode_rows[:10]:
        env = ContextCorruptionEnv()
        env.reset(**row)
        actions = [{"action_type": "read_doc", "doc_id": 0}, {"action_type": "flag_suspicious", "doc_id": 5}]
        actions += [{"action_type": "flag_suspicious", "doc_id": i} for i in row["corrupt_ids"]]
        actions += [{"action_type": "unflag_doc", "doc_id": 5}]
        actions += [{"action_type": "submit_answer", "answer": row["answer"], "confidence": 0.6}]
        for action in actions:
            getattr(env, action["action_type"])(**{k: v for k, v in action.items() if k != "action_type"})
        body = {"episode_id": row["episode_id"], "actions": actions}
        response = httpx.post(f"{server}/score", json=body, timeout=30)
        assert response.status_code == 200, response.text
        assert response.json()["breakdown"] == env.breakdown

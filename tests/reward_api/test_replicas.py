"""Replicas: two server processes of one dataset and one state key answer as one server (README: any replica
answers any request), whatever each interpreter's hash seed; a server with another key refuses the tokens."""

from __future__ import annotations

from contextlib import ExitStack

import httpx

from pipeline.schema import MAX_BUDGET
from reward_api.localserver import local_server
from reward_api.tokens import KEY_ENV


def _start(stack: ExitStack, monkeypatch, data, key: str, hash_seed: str) -> httpx.Client:
    monkeypatch.setenv(KEY_ENV, key)
    monkeypatch.setenv("PYTHONHASHSEED", hash_seed)
    served = stack.enter_context(local_server(data))
    return stack.enter_context(httpx.Client(base_url=served.url, timeout=30))


def _step(client: httpx.Client, token: str, **action) -> httpx.Response:
    return client.post("/step", json={"action": {**action, "state_token": token}})


def test_two_processes_with_one_key_play_one_game_and_pick_one_episode_per_seed(served_dir, monkeypatch):
    with ExitStack() as stack:
        a, b, other = (
            _start(stack, monkeypatch, served_dir, key, seed)
            for key, seed in (("replica-key", "1"), ("replica-key", "2"), ("another-key", "1"))
        )
        for seed in range(8):
            body = {"seed": seed, "split": "validation", "task": "hard"}
            picks = {c.post("/reset", json=body).json()["observation"]["episode_id"] for c in (a, b, other)}
            assert len(picks) == 1, (seed, picks)
        token = a.post("/reset", json={"episode_id": 3}).json()["observation"]["state_token"]
        flagged = _step(b, token, action_type="flag_suspicious", doc_id=1)
        assert flagged.status_code == 200 and flagged.json()["observation"]["flagged_ids"] == [1]
        token = flagged.json()["observation"]["state_token"]
        read = _step(a, token, action_type="read_doc", doc_id=2)
        assert read.status_code == 200 and read.json()["observation"]["budget_remaining"] == MAX_BUDGET - 2
        refused = _step(other, token, action_type="read_doc", doc_id=2)
        assert refused.status_code == 403 and "signature" in refused.json()["detail"]

"""A hidden test split served by a real `python -m reward_api`: with --answers it is scored exactly like any
split (equal to scoring in-process with the true key); without, it is served and played but every way of
scoring it gets a clear 403; no route reveals a hidden column; start-up refuses a missing, truncated or foreign
answers file by name."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest
from openenv.core import GenericEnvClient

from pipeline.schema import HIDDEN_COLUMNS, VISIBLE_COLUMNS
from reward_api.game import Move, play
from reward_api.keys import GroundTruthMissing, SealedKey
from reward_api.localserver import free_port, local_server
from reward_api.scoring import score_submission_key
from reward_api.store import EpisodeStore, StoreError
from tests.hiddenbuild import build_hidden
from tests.hubstandin import hub_standin, publish
from tests.reward_api.conftest import truth_key
from tests.reward_api.test_bad_input import _keys

ROOT = Path(__file__).resolve().parents[2]
TEST_PATH = "data/test-00000-of-00001.parquet"
SEALED = "ground truth of split test is not on this server"


@pytest.fixture(scope="session")
def hidden_served(tmp_path_factory, hidden_facts_dir) -> tuple[Path, Path]:
    return build_hidden(tmp_path_factory.mktemp("hidden-served"), hidden_facts_dir)


@pytest.fixture(scope="module")
def truth(hidden_served) -> dict[int, dict]:
    """Every test episode with its ground truth, read straight from both files (test-side truth)."""
    episodes, answers = hidden_served
    published = pq.read_table(episodes / TEST_PATH).to_pylist()
    kept = pq.read_table(answers / TEST_PATH).to_pylist()
    return {row["episode_id"]: row | extra for row, extra in zip(published, kept, strict=True)}


@pytest.fixture(scope="module")
def with_answers(hidden_served):
    episodes, answers = hidden_served
    with (
        local_server(episodes, extra_args=("--answers", str(answers))) as served,
        httpx.Client(base_url=served.url) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def without_answers(hidden_served):
    with local_server(hidden_served[0]) as served, httpx.Client(base_url=served.url) as client:
        yield client


def submissions(truth: dict[int, dict]) -> list[dict]:
    """Right and wrong answers, true and false flags, over test episodes spread through the split."""
    picked = sorted(truth)[::23]
    return [
        {
            "episode_id": i,
            "answer": truth[i]["answer"] if n % 2 else "nothing like it",
            "flagged_ids": truth[i]["corrupt_ids"][: n % 3] + ([7] if n % 4 == 0 else []),
            "confidence": round(0.1 * (n % 10), 1),
        }
        for n, i in enumerate(picked)
    ]


def expected(sub: dict, row: dict) -> float:
    return score_submission_key(sub["answer"], sub["flagged_ids"], sub["confidence"], truth_key(row))["total"]


def test_with_answers_the_test_split_scores_as_with_the_true_key(with_answers, truth):
    subs = submissions(truth)
    for sub in subs:
        reply = with_answers.post("/score", json=sub)
        assert reply.status_code == 200, reply.text
        assert reply.json()["reward"] == expected(sub, truth[sub["episode_id"]])
    batch = with_answers.post("/score/batch", json={"submissions": subs}).json()["results"]
    assert [r["reward"] for r in batch] == [expected(s, truth[s["episode_id"]]) for s in subs]


def test_with_answers_a_game_over_step_scores_as_with_the_true_key(with_answers, truth):
    episode_id = sorted(truth)[-1]
    row = truth[episode_id]
    moves = [
        Move("read_doc", 0),
        Move("flag_suspicious", row["corrupt_ids"][0]),
        Move("submit_answer", None, "x", 0.3),
    ]
    token = with_answers.post("/reset", json={"episode_id": episode_id}).json()["observation"]["state_token"]
    for move in moves:
        action = {k: v for k, v in move._asdict().items() if v is not None}
        reply = with_answers.post("/step", json={"action": {**action, "state_token": token}}).json()
        token = reply["observation"]["state_token"]
    assert reply["done"] and reply["reward"] == play(episode_id, moves, truth_key(row)).breakdown["total"]


def test_without_answers_the_test_split_plays_but_any_scoring_is_a_403(without_answers, truth):
    episode_id = sorted(truth)[5]
    view = without_answers.get(f"/episodes/{episode_id}")
    assert view.status_code == 200 and set(view.json()) == set(VISIBLE_COLUMNS)
    reset = without_answers.post("/reset", json={"episode_id": episode_id}).json()
    flag = {"action_type": "flag_suspicious", "doc_id": 2, "state_token": reset["observation"]["state_token"]}
    flagged = without_answers.post("/step", json={"action": flag})
    assert flagged.status_code == 200 and not flagged.json()["done"]
    submit = {"action_type": "submit_answer", "answer": "a", "confidence": 0.5}
    token = flagged.json()["observation"]["state_token"]
    sub = {"episode_id": episode_id, "answer": "a", "flagged_ids": [1], "confidence": 0.5}
    trace = {"episode_id": episode_id, "actions": [{"action_type": "submit_answer", "answer": "a", "confidence": 0}]}
    refused = [
        without_answers.post("/step", json={"action": {**submit, "state_token": token}}),
        without_answers.post("/score", json=sub),
        without_answers.post("/score", json=trace),
        without_answers.post("/score/batch", json={"submissions": [{**sub, "episode_id": 0}, sub]}),
    ]
    for reply in refused:
        assert reply.status_code == 403, reply.text
        assert SEALED in reply.json()["detail"] and "--answers" in reply.json()["detail"]
    assert without_answers.post("/score", json={**sub, "episode_id": 1200}).status_code == 200  # validation
    assert without_answers.post("/reset", json={"seed": 3, "split": "test"}).json()["observation"]["split"] == "test"


def test_without_answers_a_websocket_game_is_refused_at_the_submission_only(without_answers, truth):
    with GenericEnvClient(base_url=str(without_answers.base_url)).sync() as env:
        assert env.reset(episode_id=sorted(truth)[0]).observation["split"] == "test"
        assert not env.step({"action_type": "flag_suspicious", "doc_id": 1}).done
        with pytest.raises(RuntimeError, match=SEALED):
            env.step({"action_type": "submit_answer", "answer": "a", "confidence": 0.2})
        assert env.state()["flagged_ids"] == [1]  # the session goes on


@pytest.mark.parametrize("server", ["with_answers", "without_answers"])
def test_no_route_reveals_a_hidden_column_of_the_test_split(server, request, truth, hidden_served):
    client: httpx.Client = request.getfixturevalue(server)
    paths = client.get("/openapi.json").json()["paths"]
    gets = [path for path, ops in paths.items() if "get" in ops and "{" not in path and path != "/schema"]
    replies = [client.get(path) for path in gets]
    schema = client.get("/schema").json()  # the action schema names its own "answer" field; what comes back may not
    replies_json = [schema["observation"]["properties"], schema["state"]["properties"]]
    for episode_id in sorted(truth)[::50]:
        replies.append(client.get(f"/episodes/{episode_id}"))
        reset = client.post("/reset", json={"episode_id": episode_id})
        flag = {
            "action_type": "flag_suspicious",
            "doc_id": 0,
            "state_token": reset.json()["observation"]["state_token"],
        }
        sub = {"episode_id": episode_id, "answer": "a", "flagged_ids": [0], "confidence": 0.2}
        replies += [reset, client.post("/step", json={"action": flag}), client.post("/score", json=sub)]
        replies.append(client.post("/score/batch", json={"submissions": [sub]}))
    replies.append(client.post("/reset", json={"seed": 11, "split": "test"}))
    replies_json += [reply.json() for reply in replies]
    leaked = {name: i for i, reply in enumerate(replies_json) for name in _keys(reply) & set(HIDDEN_COLUMNS)}
    assert not leaked, leaked
    assert not any(str(hidden_served[1]) in reply.text for reply in replies)  # nor where the ground truth lies


def test_store_reads_the_keys_from_the_answers_preloaded_or_not(hidden_served, truth):
    episodes, answers = hidden_served
    warm = EpisodeStore(episodes, answers=answers)
    assert warm.key_index.ready.wait(60)
    cold = EpisodeStore(episodes, answers=answers, preload_keys=False)
    ids = sorted(truth)[::17]
    assert warm.keys(ids) == cold.keys(ids) == {i: truth_key(truth[i]) for i in ids}
    assert warm.view(ids[0]) == {name: truth[ids[0]][name] for name in VISIBLE_COLUMNS}

    sealed = EpisodeStore(episodes, preload_keys=False).key(ids[0])
    assert isinstance(sealed, SealedKey) and sealed.max_budget == 12
    with pytest.raises(GroundTruthMissing, match=SEALED):
        score_submission_key("a", [], 0.5, sealed)


def _copy(hidden_served, tmp_path) -> tuple[Path, Path]:
    for folder in hidden_served:
        shutil.copytree(folder, tmp_path / folder.name)
    return tmp_path / "episodes", tmp_path / "answers"


def test_start_up_refuses_a_missing_truncated_or_foreign_answers_file(hidden_served, dataset_dir, tmp_path):
    episodes, answers = _copy(hidden_served, tmp_path)
    victim = answers / TEST_PATH
    data = victim.read_bytes()
    cases = [
        (lambda: victim.unlink(), f"{victim}: shard listed in the manifest is missing"),
        (lambda: victim.write_bytes(data[:-100]), f"{victim}: {len(data) - 100} bytes, the manifest says {len(data)}"),
        (lambda: victim.write_bytes(data[:200] + bytes([data[200] ^ 1]) + data[201:]), f"{victim}: sha256 differs"),
    ]
    for damage, message in cases:
        damage()
        with pytest.raises(StoreError, match=message):
            EpisodeStore(episodes, answers=answers, preload_keys=False)
        victim.write_bytes(data)
    EpisodeStore(episodes, answers=answers, preload_keys=False)  # restored: served again

    manifest = json.loads((answers / "manifest.json").read_text())
    (answers / "manifest.json").write_text(json.dumps({**manifest, "params_hash": "0" * 64}))
    with pytest.raises(StoreError, match=f"{answers / 'manifest.json'}: answers of another build"):
        EpisodeStore(episodes, answers=answers, preload_keys=False)
    with pytest.raises(StoreError, match=f"{hidden_served[1] / 'manifest.json'}: answers of another build"):
        EpisodeStore(dataset_dir, answers=hidden_served[1], preload_keys=False)  # answers of another dataset
    with pytest.raises(StoreError, match=f"{tmp_path / 'nowhere' / 'manifest.json'}: missing"):
        EpisodeStore(episodes, answers=tmp_path / "nowhere", preload_keys=False)


def test_python_m_reward_api_exits_2_naming_a_broken_answers_file(hidden_served, tmp_path):
    episodes, answers = _copy(hidden_served, tmp_path)
    (answers / TEST_PATH).write_bytes((answers / TEST_PATH).read_bytes()[:-10])
    env = {**os.environ, "CONTEXTCORRUPTION_ANSWERS": str(answers)}
    command = [sys.executable, "-m", "reward_api", "--data", str(episodes), "--port", str(free_port())]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert (
        done.returncode == 2
        and f"{answers / TEST_PATH}: " in done.stderr
        and "bytes, the manifest says" in done.stderr
    )


@pytest.mark.parametrize("pinned", [False, True], ids=["latest", "answers-revision"])
def test_answers_from_a_private_hub_repo_are_downloaded_at_start_up(
    hidden_served, truth, tmp_path, monkeypatch, pinned
):
    """Latest, or pinned with --answers-revision after main has moved on to another build's answers."""
    episodes, answers = hidden_served
    with hub_standin(token="hf_t") as hub:
        api = publish(hub, answers, "acme/cc-answers", tag="v1" if pinned else None, private=True)
        if pinned:
            other = tmp_path / "other-build"
            shutil.copytree(answers, other)
            manifest = json.loads((other / "manifest.json").read_text())
            (other / "manifest.json").write_text(json.dumps({**manifest, "params_hash": "0" * 64}))
            api.upload_folder(folder_path=other, repo_id="acme/cc-answers", repo_type="dataset")
        for name, value in {"HF_ENDPOINT": hub.endpoint, "HF_HOME": str(tmp_path / "hf"), "HF_TOKEN": "hf_t"}.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("HF_HUB_OFFLINE", "0")
        pin = ("--answers-revision", "v1") if pinned else ()
        with local_server(episodes, extra_args=("--answers", "acme/cc-answers", *pin)) as served:
            sub = submissions(truth)[0]
            reply = httpx.post(f"{served.url}/score", json=sub)
    assert reply.status_code == 200 and reply.json()["reward"] == expected(sub, truth[sub["episode_id"]])

"""Baseline agents over the HTTP API of a real server, the visible-text reader, and the metrics."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
import yaml

from pipeline.schema import TASKS, VISIBLE_COLUMNS
from pipeline.wording import FRAMES
from reward_api.agents import AGENTS, Submission, random_submissions, reader_submissions
from reward_api.baselines import episode_ids, main
from reward_api.heuristics import read
from reward_api.metrics import stats
from reward_api.scoring import accepted_answers, normalize, score_submission_key
from reward_api.tasks import task_list
from tests.conftest import SMALL_EPISODES
from tests.pipeline.test_crash import run_killed, snapshot, staged
from tests.reward_api.conftest import truth_key

ROOT = Path(__file__).resolve().parents[2]


def _view(row: dict) -> dict:
    return {name: row[name] for name in VISIBLE_COLUMNS}


def test_reader_keeps_only_the_corrections_of_rejected_claims():
    docs = [
        "A common misconception holds that Lyon is the capital of France. In reality, the capital of France is Paris.",
        "Contrary to a widespread belief that Marseille is the capital of France, the capital of France is Paris.",
        "Standard references state that the capital of France is Nice.",
        "In short, Paris is given as the capital of France. Road and rail links connect France with Europe.",
    ]
    reading = read("What is the capital of France?", docs)
    assert reading.answer == "Paris" and reading.votes == 3
    assert reading.dissenting == (2,)


@pytest.mark.parametrize("frame", FRAMES)
def test_reader_keeps_the_correction_of_every_claim_sentence(frame):
    """Each claim sentence the documents use sets its claim against a denied value, which the reader must drop: a
    denied "Marseille" kept would tie "Paris" and win as the longer."""
    claim, denied = "the capital of France is Paris", "Marseille is the capital of France"
    fields = {
        "c": claim,
        "C": claim[0].upper() + claim[1:],
        "cd": denied,
        "Cd": denied,
        "year": "2019",
        "report": "survey",
    }
    bodies = ("National Mapping Agency", "Atlas Standards Committee", "Gazetteer Standards Board")
    reading = read("What is the capital of France?", [frame.format(body=body, **fields) for body in bodies])
    assert (reading.answer, reading.votes) == ("Paris", 3)


def test_a_cited_year_is_a_candidate_only_where_the_question_asks_a_year():
    """Company facts cite reports of 2024-2026 only: the year most documents cite outvoted an answer that opens
    sentences ("Byrdberg is the headquarters of ..."). A count of that size is written "2,025"."""
    docs = [f"In its {2024 + i % 2} annual report, the registry gave the head count as 1,560." for i in range(3)]
    docs += [f"Its {2024 + i % 2} survey put the staff of Orbit Ltd at {n}." for i, n in enumerate(["2,025", "980"])]
    docs += [f"A {2024 + i % 2} bulletin gave 1,200." for i in range(3)]
    assert read("How many employees does Orbit Ltd have?", docs).answer == "1,560"  # not 2024, cited five times
    founded = [f"Orbit Ltd was founded in 1998, says the {2024 + i % 2} bulletin." for i in range(4)]
    assert read("In what year was Orbit Ltd founded?", founded).answer == "1998"


def test_reader_takes_sentence_case_answers_whole():
    docs = [
        "Records show that the occupation of Ann Lee is given as Holiday representative.",
        "The Office of National Records has cited Holiday representative consistently since 2002.",
        "Ann Lee's profession is listed as Holiday representative. Ann Lee keeps a low profile.",
        "It is sometimes claimed that Ann Lee is a Farm manager, but in fact Ann Lee works as a Tax adviser.",
    ]
    reading = read("What is Ann Lee's occupation?", docs)
    assert (reading.answer, reading.votes, reading.dissenting) == ("Holiday representative", 3, (3,))


def test_a_sentence_case_answer_counts_its_own_votes():
    """Its first word alone ("Tour", in "Tour operator" too) once lent it every vote of the word: the majority agent
    then submitted 5/8 as its confidence where 3 documents state the answer."""
    docs = ["She works as Tour guide.", "She works as Tour guide.", "She works as Tour operator."]
    docs += ["She works as Tour operator.", "The recorded trade is Tour guide, says X.", "x", "x", "x"]
    reading = read("What job does Ann Lee hold?", docs)
    assert (reading.answer, reading.votes, reading.dissenting) == ("Tour guide", 3, (2, 3, 5, 6, 7))


def test_reader_does_not_run_a_name_into_a_phrase_about_it():
    """ "repeat Stockholm without revision": the answer is Stockholm, even where most documents say so; a
    sentence-case answer whose tail opens with another word ("English as a second language teacher") stays whole."""
    docs = [
        "The capital of Sweden is Stockholm. Later releases of the survey repeat Stockholm without revision.",
        "Records give the capital of Sweden as Stockholm. Later reviews repeat Stockholm without revision.",
        "As the Bureau noted, the capital of Sweden is Stockholm; some summaries mistakenly say that it is Uppsala.",
    ]
    assert read("What is the capital of Sweden?", docs).answer == "Stockholm"
    teacher = ["Ann Lee's profession is listed as English as a second language teacher."] * 2
    assert read("What is Ann Lee's occupation?", teacher).answer == "English as a second language teacher"
    repeated = ["Later releases of the survey repeat Production assistant without revision."] * 2
    assert read("What is Ann Lee's occupation?", repeated).answer == "Production assistant"
    cited = [
        "The occupation of Ann Lee is Civil Service administrator, according to the 1998 survey of the Board.",
        "As the Board noted, Ann Lee's occupation is Civil Service administrator; some say that it is Nurse.",
        "The Board has not changed this entry (Civil Service administrator).",
    ]
    assert read("What is Ann Lee's occupation?", cited).answer == "Civil Service administrator"
    for job in (
        "Research scientist (medical)",
        "Barrister's clerk",
        "Research Scientist (maths)",
        "Barrister's Clerk",
        "Chartered Legal Executive (England and Wales)",
    ):
        docs = [f"Ann Lee's occupation is {job}, according to the Board.", f"The Board has kept this entry ({job})."]
        assert read("What is Ann Lee's occupation?", docs).answer == job
    symbol = ["Records state that Kr is given as the chemical symbol of krypton."] * 2
    assert read("What is the chemical symbol of krypton?", symbol).answer == "Kr"


def test_reader_answers_the_suite_dataset_from_visible_text(rows):
    episodes = [row for row in rows.values() if row["split"] == "validation"]
    correct = [
        normalize(read(row["question"], [d["content"] for d in row["documents"]]).answer)
        in accepted_answers(row["answer"], row["answer_aliases"])
        for row in episodes
    ]
    assert np.mean(correct) > 0.9


def test_reader_agents_see_the_agent_view_only(rows):
    row = next(iter(rows.values()))
    submissions = reader_submissions(_view(row))
    assert set(submissions) == {"majority", "flag_all", "majority_flag_dissent"}
    assert submissions["majority"].flagged_ids == () and submissions["flag_all"].flagged_ids == tuple(range(8))
    assert 0 <= submissions["majority"].confidence <= 1


def test_random_agent_is_the_original_spec_and_reproducible():
    ids = np.arange(100, 400, dtype=np.int64)
    first = random_submissions(ids, seed=3)
    assert first == random_submissions(ids, seed=3)
    assert first != random_submissions(ids, seed=4)
    assert {s.answer for s in first} == {"unknown"} and {s.confidence for s in first} == {0.5}
    assert {len(s.flagged_ids) for s in first} == {0, 1, 2, 3, 4}
    assert all(len(set(s.flagged_ids)) == len(s.flagged_ids) and set(s.flagged_ids) <= set(range(8)) for s in first)


def test_stats_count_flags_against_the_truth():
    hidden = {1: {"corrupt_ids": [2, 5], "task": "medium"}, 2: {"corrupt_ids": [0], "task": "easy"}}
    plays = [
        (Submission(1, "a", (2, 3), 0.5), {"total": 0.5, "answer_correctness": 0.4}),
        (Submission(2, "b", (), 0.5), {"total": 0.1, "answer_correctness": 0.0}),
    ]
    assert stats(plays, hidden) == {
        "episodes": 2,
        "mean_reward": 0.3,
        "answer_accuracy": 0.5,
        "flag_precision": 0.5,
        "flag_recall": round(1 / 3, 4),
    }
    assert stats(plays[1:], hidden)["flag_precision"] is None


def test_bad_split_or_count_is_refused_by_name(dataset_dir):
    with pytest.raises(SystemExit, match="splits"):
        episode_ids(dataset_dir, "dev", 10)
    with pytest.raises(SystemExit, match="--episodes must be at least 1"):
        episode_ids(dataset_dir, "validation", 0)
    whole = episode_ids(dataset_dir, "validation", 10**6)
    assert whole.tolist() == list(range(SMALL_EPISODES.train, SMALL_EPISODES.train + SMALL_EPISODES.validation))


def test_a_hidden_split_is_refused_by_name(dataset_dir, tmp_path):
    """A hidden split's truth is not in the dataset folder: playing it ended in a pyarrow traceback."""
    manifest = json.loads((dataset_dir / "manifest.json").read_text())
    (tmp_path / "manifest.json").write_text(json.dumps(manifest | {"hidden_splits": ["test"]}))
    with pytest.raises(SystemExit, match="--split 'test': published without its ground truth"):
        episode_ids(tmp_path, "test", 10)
    assert len(episode_ids(tmp_path, "validation", 10)) == 10


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_a_missing_or_damaged_dataset_ends_in_one_line(dataset_dir, tmp_path, damage):
    """Before any server starts: the message names the file, with no traceback."""
    data = tmp_path / "episodes"
    if damage == "truncated":
        shutil.copytree(dataset_dir, data)
        shard = sorted((data / "data").glob("train-*.parquet"))[-1]
        shard.write_bytes(shard.read_bytes()[:1000])
    done = subprocess.run(
        [sys.executable, "-m", "reward_api.baselines", "--data", str(data), "--out", str(tmp_path / "m.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    named = data / ("manifest.json" if damage == "missing" else f"data/{shard.name}")
    assert done.returncode == 1 and done.stderr.startswith(f"baselines: {named}"), done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "m.json").exists()


def test_baselines_over_a_running_server(dataset_dir, base_url, backend, rows, tmp_path):
    out = tmp_path / "baselines.json"
    assert main(["--data", str(dataset_dir), "--url", base_url, "--episodes", "120", "--out", str(out)]) == 0
    metrics = json.loads(out.read_text())
    assert set(metrics["agents"]) == set(AGENTS) and metrics["episodes"] == 120
    ids = episode_ids(dataset_dir, "validation", 120).tolist()
    oracle = [
        score_submission_key(rows[i]["answer"], rows[i]["corrupt_ids"], 1.0, truth_key(rows[i]))["total"] for i in ids
    ]
    agents = metrics["agents"]
    assert agents["oracle"]["all"]["mean_reward"] == round(sum(oracle) / len(oracle), 4)
    assert agents["oracle"]["all"]["flag_precision"] == agents["oracle"]["all"]["flag_recall"] == 1.0
    assert agents["random"]["all"]["answer_accuracy"] == 0.0
    assert agents["majority"]["all"]["flag_precision"] is None and agents["majority"]["all"]["flag_recall"] == 0.0
    corrupt_share = sum(len(rows[i]["corrupt_ids"]) for i in ids) / (8 * len(ids))
    assert agents["flag_all"]["all"]["flag_precision"] == round(corrupt_share, 4)
    assert agents["random"]["all"]["mean_reward"] < agents["majority"]["all"]["mean_reward"]
    assert agents["majority"]["all"]["mean_reward"] < agents["oracle"]["all"]["mean_reward"]
    tiers = task_list(backend.store)  # what GET /tasks serves for this dataset
    assert httpx.get(f"{base_url}/tasks").json() == [tier.model_dump() for tier in tiers]
    assert metrics["success_thresholds"] == {tier.name: tier.success_threshold for tier in tiers}
    assert metrics["tiers"] == {tier.name: tier.model_dump(include=set(metrics["tiers"][tier.name])) for tier in tiers}
    assert metrics["threshold_rule"] == tiers[0].threshold_rule
    for task, threshold in metrics["success_thresholds"].items():
        assert task in TASKS
        assert (
            agents["majority"]["tasks"][task]["mean_reward"]
            < threshold
            < agents["oracle"]["tasks"][task]["mean_reward"]
        )
    declared = yaml.safe_load((ROOT / "openenv.yaml").read_text())["validation"]["reward"]
    best = declared["range"][1]
    assert min(t["mean_reward"] for t in agents["oracle"]["tasks"].values()) >= best - declared["oracle_tolerance"]
    assert agents["random"]["all"]["mean_reward"] <= best - declared["floor_margin"]
    table = out.with_suffix(".md").read_text()
    assert table.count("| oracle |") == len(agents["oracle"]["tasks"]) + 1


def test_baselines_serve_the_folder_themselves(dataset_dir, tmp_path):
    """Without --url the script starts `python -m reward_api` on a free loopback port and stops it."""
    out = tmp_path / "b.json"
    assert main(["--data", str(dataset_dir), "--episodes", "20", "--split", "test", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["split"] == "test" and report["episodes"] == 20
    assert report["agents"]["oracle"]["all"] == report["agents"]["oracle"]["all"] | {
        "episodes": 20,
        "answer_accuracy": 1.0,
        "flag_precision": 1.0,
        "flag_recall": 1.0,
    }


@pytest.mark.parametrize("rename", [0, 1])
def test_a_run_killed_before_its_metrics_are_in_place_reruns_identically(dataset_dir, base_url, tmp_path, rename):
    args = ["--data", str(dataset_dir), "--url", base_url, "--episodes", "16", "--out", "out/b.json"]
    run_killed(f"from reward_api.baselines import main\nmain({args!r})", rename, tmp_path)
    assert not (tmp_path / "out" / "b.json").exists(), "no metrics for DVC to read"
    assert staged(tmp_path / "out") == [[".b.md.tmp"], [".b.json.tmp"]][rename], "killed with an output staged"

    args[-1] = str(tmp_path / "out" / "b.json")
    assert main(args) == 0
    rerun = snapshot(tmp_path / "out")
    assert sorted(rerun) == ["b.json", "b.md"]
    args[-1] = str(tmp_path / "reference" / "b.json")
    assert main(args) == 0
    assert snapshot(tmp_path / "reference") == rerun


def test_a_server_of_another_dataset_or_none_is_refused(dataset_dir, base_url, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(dataset_dir, other)
    manifest = json.loads((other / "manifest.json").read_text())
    (other / "manifest.json").write_text(json.dumps({**manifest, "params_hash": "0" * 64}))
    with pytest.raises(SystemExit, match="serves another dataset"):
        main(["--data", str(other), "--url", base_url, "--episodes", "5"])
    with pytest.raises(SystemExit, match="no reward server at http://127.0.0.1:9"):
        main(["--data", str(dataset_dir), "--url", "http://127.0.0.1:9", "--episodes", "5"])

"""The tiers of GET /tasks: thresholds measured from the baseline agents on the validation split, checked
against a recomputation from the dataset files; the formula fallback for a tier without validation episodes."""

from __future__ import annotations

import threading
from statistics import fmean

import pytest

from pipeline.episodes import build_episodes
from pipeline.params import EpisodesParams
from pipeline.schema import TASKS, VISIBLE_COLUMNS
from reward_api.agents import reader_submissions
from reward_api.scoring import score_submission_key
from reward_api.store import EpisodeStore
from reward_api.tasks import (
    FORMULA_RULE,
    MEASURED_RULE,
    BackgroundTiers,
    Stopped,
    success_threshold,
    task_list,
)
from tests.conftest import SEED
from tests.reward_api.conftest import truth_key


def expected_tiers(rows: dict[int, dict], episodes: int) -> dict[str, tuple[int, float, float]]:
    """(count, majority mean, oracle mean) per tier from the Parquet rows: the oracle answers the `answer` column."""
    tiers = {}
    for task in TASKS:
        chosen = sorted(i for i, row in rows.items() if row["split"] == "validation" and row["task"] == task)
        chosen = chosen[:episodes]
        majority, oracle = [], []
        for i in chosen:
            row, key = rows[i], truth_key(rows[i])
            agent = reader_submissions({name: row[name] for name in VISIBLE_COLUMNS})["majority"]
            majority.append(score_submission_key(agent.answer, (), agent.confidence, key)["total"])
            oracle.append(score_submission_key(row["answer"], row["corrupt_ids"], 1.0, key)["total"])
        tiers[task] = (len(chosen), round(fmean(majority), 4), round(fmean(oracle), 4))
    return tiers


@pytest.mark.parametrize("episodes", [256, 15])
def test_thresholds_are_the_midpoint_of_majority_and_oracle_on_the_validation_split(backend, rows, episodes):
    tiers = task_list(backend.store, episodes)
    assert [(t.name, t.corrupt_docs) for t in tiers] == [(task, k) for k, task in enumerate(TASKS, start=1)]
    for tier, (name, (count, majority, oracle)) in zip(tiers, expected_tiers(rows, episodes).items(), strict=True):
        assert (tier.name, tier.episodes) == (name, count) and 0 < count <= episodes
        assert tier.baseline_means == {"majority": majority, "oracle": oracle}
        assert tier.success_threshold == round((majority + oracle) / 2, 2)
        assert majority < tier.success_threshold < oracle
        assert tier.threshold_rule == MEASURED_RULE


def test_thresholds_are_deterministic_and_measured_in_the_background_alike(backend, served_dir):
    tiers = task_list(backend.store)
    assert task_list(EpisodeStore(served_dir, cache_mb=0, preload_keys=False)) == tiers
    background = BackgroundTiers(backend.store)
    background.start()
    assert background.future.result(timeout=120) == tiers
    background.stop()
    assert not background.thread.is_alive()


def test_measuring_stops_when_asked_and_its_thread_is_joined(backend):
    stop = threading.Event()
    stop.set()
    with pytest.raises(Stopped, match="tier easy: stopped after 0 of"):
        task_list(backend.store, stop=stop)
    background = BackgroundTiers(backend.store)
    background.stop()
    background.start()  # after stop: nothing starts
    assert background.thread is None and not background.future.done()


def test_stopping_a_measurement_in_progress_ends_it_with_stopped(served_dir, monkeypatch):
    store = EpisodeStore(served_dir, cache_mb=0, preload_keys=False)
    background = BackgroundTiers(store)
    third, view, calls = threading.Event(), store.view, []

    def held_at_the_third(episode_id: int):
        calls.append(episode_id)
        if len(calls) == 3:
            third.set()
            assert background._stop.wait(60)  # until the stop: this episode is scored, the next is not begun
        return view(episode_id)

    monkeypatch.setattr(store, "view", held_at_the_third)
    background.start()
    assert third.wait(60)
    background.stop()
    assert not background.thread.is_alive() and len(calls) == 3
    with pytest.raises(Stopped, match="^tier easy: stopped after 3 of "):
        background.future.result(timeout=0)


def test_a_tier_without_validation_episodes_falls_back_to_the_formula(facts_dir, tmp_path):
    tiny = EpisodesParams(train=8, validation=2, test=2, workers=1, shard_rows=8, row_group_rows=4)
    build_episodes(facts_dir, tmp_path / "tiny", tiny, SEED)
    store = EpisodeStore(tmp_path / "tiny", preload_keys=False)
    tiers = task_list(store)
    measured = [t for t in tiers if t.episodes]
    assert 1 <= len(measured) <= 2 and sum(t.episodes for t in measured) == 2
    for k, tier in enumerate(tiers, start=1):
        if tier.episodes:
            assert tier.threshold_rule == MEASURED_RULE and set(tier.baseline_means) == {"majority", "oracle"}
        else:
            assert tier.success_threshold == success_threshold(k) and tier.baseline_means == {}
            assert tier.threshold_rule == FORMULA_RULE and "no validation episodes" in tier.threshold_rule


def test_without_a_dataset_every_tier_has_the_formula_threshold_no_wrong_answer_reaches():
    tiers = task_list()
    assert [t.threshold_rule for t in tiers] == [FORMULA_RULE] * len(TASKS)
    # A wrong answer scores at most 0 + 0.3 + 0.2 + 0.05 efficiency: below every formula threshold.
    assert all(t.episodes == 0 and 0.55 < t.success_threshold <= 1.05 for t in tiers)

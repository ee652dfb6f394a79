"""Difficulty tiers (task k has k corrupt documents) and their success thresholds, measured from baseline agents.

A tier's threshold sits halfway between two baseline agents' mean rewards over its first
`THRESHOLD_EPISODES` episodes of the validation split: 'majority' (answers by majority vote, flags nothing)
and 'oracle' (a perfect play). Success thus means more than answering correctly: it needs corrupt documents
found. The agents (`reward_api.agents`) are played in-process with the server's own scoring, so the figures
are deterministic per dataset and equal to what `python -m reward_api.baselines` reports for it. Measuring
1,024 episodes takes ~4 s of CPU on the default build (the reader dominates), hence `BackgroundTiers`.

A tier with no validation episode (or no dataset) falls back to a threshold from the reward formula alone:
the reward of the weakest play still called a success (correct answer, half of the corrupt documents
flagged, no false flag, confidence 0, the whole budget spent); its rule text says so.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import NamedTuple

from pipeline.schema import MAX_BUDGET, TASKS
from reward_api.agents import oracle_submission, reader_submissions
from reward_api.models import TaskOut
from reward_api.scoring import EpisodeKey, score_key, score_submission_key
from reward_api.store import EpisodeNotFound, EpisodeStore

THRESHOLD_SPLIT = "validation"
THRESHOLD_EPISODES = 256  # per tier: ~0.01 standard error on a mean, bounded cost
DESCRIPTIONS = {
    "easy": "One corrupt document (a near-miss number, or another value of its kind where the answer is no number); "
    "the true answer is a clear majority.",
    "medium": "Two corrupt documents; the second swaps the answer for another value of its kind.",
    "hard": "Three corrupt documents, adding an inverted statement.",
    "adversarial": "Four corrupt documents, including a coherent, authoritative-sounding fabrication.",
}
MEASURED_RULE = (
    "midpoint of the mean rewards of the baseline agents 'majority' (majority-vote answer, no flag) and 'oracle' "
    f"over the tier's first (up to {THRESHOLD_EPISODES}) {THRESHOLD_SPLIT} episodes, rounded to 2 decimals"
)
FORMULA_RULE = (
    "reward of: correct answer, ceil(k/2) of the k corrupt documents flagged, no false flag, confidence 0, "
    f"all {MAX_BUDGET} actions used (formula fallback: no {THRESHOLD_SPLIT} episodes of this tier to measure)"
)


class Stopped(Exception):
    """Measuring was stopped before it was done (the server is shutting down)."""


class TierMeans(NamedTuple):
    episodes: int
    majority: float
    oracle: float

    @property
    def threshold(self) -> float:
        return round((self.majority + self.oracle) / 2, 2)


def success_threshold(corrupt_docs: int) -> float:
    """The formula fallback (see the module docstring)."""
    corrupt = frozenset(range(corrupt_docs))
    key = EpisodeKey(frozenset({"answer"}), corrupt, MAX_BUDGET)
    flagged = frozenset(range(-(-corrupt_docs // 2)))
    return score_key("answer", flagged, 0.0, MAX_BUDGET, key)["total"]


def tier_means(
    store: EpisodeStore, task: str, episodes: int = THRESHOLD_EPISODES, stop: threading.Event | None = None
) -> TierMeans | None:
    """'majority' and 'oracle' mean rewards (4 decimals, like the baselines' metrics); None without episodes.

    Stopped once `stop` is set (looked at before each episode)."""
    try:
        ids = store.ids_of(THRESHOLD_SPLIT, task)[:episodes].tolist()
    except EpisodeNotFound:  # a dataset without a validation split
        return None
    if not ids:
        return None
    majority = oracle = 0.0
    for done, episode_id in enumerate(ids):
        if stop is not None and stop.is_set():
            raise Stopped(f"tier {task}: stopped after {done} of {len(ids)} episodes")
        key = store.key(episode_id)
        agent = reader_submissions(store.view(episode_id))["majority"]
        best = oracle_submission(episode_id, min(key.accepted), key.corrupt)  # any accepted form is the answer
        majority += score_submission_key(agent.answer, agent.flagged_ids, agent.confidence, key)["total"]
        oracle += score_submission_key(best.answer, best.flagged_ids, best.confidence, key)["total"]
    return TierMeans(len(ids), round(majority / len(ids), 4), round(oracle / len(ids), 4))


def task_list(
    store: EpisodeStore | None = None, episodes: int = THRESHOLD_EPISODES, stop: threading.Event | None = None
) -> list[TaskOut]:
    """The tiers of GET /tasks; thresholds measured on `store` (the formula's for every tier without one)."""
    tiers = []
    for k, name in enumerate(TASKS, start=1):
        means = None if store is None else tier_means(store, name, episodes, stop)
        common = {"name": name, "corrupt_docs": k, "description": DESCRIPTIONS[name]}
        if means is None:
            tiers.append(TaskOut(**common, success_threshold=success_threshold(k), threshold_rule=FORMULA_RULE))
        else:
            tiers.append(
                TaskOut(
                    **common,
                    success_threshold=means.threshold,
                    threshold_rule=MEASURED_RULE,
                    episodes=means.episodes,
                    baseline_means={"majority": means.majority, "oracle": means.oracle},
                )
            )
    return tiers


class BackgroundTiers:
    """`task_list(store)` measured in a thread of its own, started with the server so that start-up does not wait.

    `stop` (at server shutdown) ends the measuring within an episode and waits for the thread: a thread still
    reading Parquet while the interpreter finalizes aborts the process. `future` then holds Stopped.
    """

    def __init__(self, store: EpisodeStore) -> None:
        self._store = store
        self.future: Future[list[TaskOut]] = Future()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        """Start measuring; once only, and not after `stop`."""
        with self._lock:
            if self.thread is None and not self._stop.is_set():
                self.thread = threading.Thread(target=self._measure, name="task-thresholds", daemon=True)
                self.thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        with self._lock:
            self._stop.set()
        if self.thread is not None:
            self.thread.join(timeout)

    def _measure(self) -> None:
        try:
            self.future.set_result(task_list(self._store, stop=self._stop))
        except BaseException as exc:  # handed to whoever awaits the tiers
            self.future.set_exception(exc)

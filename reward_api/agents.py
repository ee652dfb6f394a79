"""The baseline agents' submissions: the original spec's random agent, three readers of the visible text, and
the oracle. Played through the HTTP API by `reward_api.baselines` and in-process by `reward_api.tasks` (the
tiers' success thresholds), so both score exactly the same plays.

- random: flags 0-4 random documents, answers "unknown" with confidence 0.5.
- majority: flags nothing, answers what most documents state (`heuristics.read`), confidence = its share.
- flag_all: the majority answer, with all 8 documents flagged.
- majority_flag_dissent: the majority answer, flagging each document that does not state it.
- oracle: the true answer and exactly the corrupt documents, confidence 1 (from hidden columns: the upper
  bound, not an agent).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from pipeline.randomness import integers, permutations
from pipeline.schema import NUM_DOCS
from reward_api.heuristics import read

AGENTS = ("random", "majority", "flag_all", "majority_flag_dissent", "oracle")
# Draw slots of pipeline.randomness for the random agent.
RANDOM_COUNT_SLOT, RANDOM_DOCS_SLOT = 7001, 7002


class Submission(NamedTuple):
    episode_id: int
    answer: str
    flagged_ids: tuple[int, ...]
    confidence: float

    def body(self) -> dict:
        return {**self._asdict(), "flagged_ids": list(self.flagged_ids)}


def random_submissions(ids: np.ndarray, seed: int) -> list[Submission]:
    """The original spec's random agent, drawn from (seed, episode id) so a run is reproducible."""
    counts = integers(seed, ids, RANDOM_COUNT_SLOT, 5)
    orders = permutations(seed, ids, RANDOM_DOCS_SLOT, NUM_DOCS)
    return [
        Submission(int(i), "unknown", tuple(sorted(int(d) for d in order[:k])), 0.5)
        for i, k, order in zip(ids, counts, orders, strict=True)
    ]


def reader_submissions(observation: dict) -> dict[str, Submission]:
    """The three agents that read the visible text only (an observation or an agent view)."""
    docs = observation["documents"]
    reading = read(observation["question"], [d["content"] for d in docs])
    share = round(reading.votes / len(docs), 4)
    episode_id = observation["episode_id"]
    return {
        "majority": Submission(episode_id, reading.answer, (), share),
        "flag_all": Submission(episode_id, reading.answer, tuple(range(len(docs))), share),
        "majority_flag_dissent": Submission(episode_id, reading.answer, reading.dissenting, share),
    }


def oracle_submission(episode_id: int, answer: str, corrupt_ids: Iterable[int]) -> Submission:
    return Submission(episode_id, answer, tuple(sorted(corrupt_ids)), 1.0)

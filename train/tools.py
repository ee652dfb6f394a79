"""Tool mode: an environment for TRL's `environment_factory`, one instance per rollout.

Its public methods are the four actions of the game, README: Reward v2 (TRL turns their signatures and `Args:`
docstrings into the tool schema); `reset(**row)` starts an episode from a dataset row and returns
the observation; `breakdown` is the reward, which `train.rewards.environment_reward` hands to TRL
with its parts logged (a `get_reward` method would be a second reward source, with no parts). The
rules (one budget per action, forced empty submission when the budget runs out) are the server's own
state machine, `reward_api.game`, so a trace earns the same reward in training as through `/step`.
An invalid action raises: TRL shows the error to the model, and nothing is charged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.schema import MAX_BUDGET, NUM_DOCS
from reward_api.game import GameState, Move, apply, forfeit
from reward_api.scoring import Breakdown, EpisodeKey
from train.prompts import episode_text


class ContextCorruptionEnv:
    """One rollout's episode: the game state, the episode's scoring key, and the reward once it ends."""

    def __init__(self) -> None:
        self._documents: Sequence[Mapping[str, Any]] = ()
        self._key = EpisodeKey(frozenset(), frozenset())
        self._state = GameState(episode_id=-1)
        self._final: Breakdown | None = None

    def reset(
        self,
        episode_id: int,
        question: str,
        documents: Sequence[Mapping[str, Any]],
        answer: str,
        answer_aliases: Sequence[str],
        corrupt_ids: Sequence[int],
        max_budget: int = MAX_BUDGET,
        **row: Any,
    ) -> str:
        self._documents = documents
        self._key = EpisodeKey.from_row(answer, answer_aliases, corrupt_ids, max_budget)
        self._state = GameState(episode_id=episode_id)
        self._final = None
        return f"{episode_text(question, documents)}\n\nBudget: {max_budget} actions."

    def read_doc(self, doc_id: int) -> str:
        """Return the full text of one document.

        Args:
            doc_id: Id of the document to read, 0 to 7.
        """
        doc = self._documents[_doc_id(doc_id)]
        return f"[{doc['doc_id']}] {doc['title']}\n{doc['content']}\n({self._play(Move('read_doc', doc_id))})"

    def flag_suspicious(self, doc_id: int) -> str:
        """Mark a document as corrupted.

        Args:
            doc_id: Id of the document to flag, 0 to 7.
        """
        return self._play(Move("flag_suspicious", _doc_id(doc_id)))

    def unflag_doc(self, doc_id: int) -> str:
        """Remove the flag from a document.

        Args:
            doc_id: Id of the document to unflag, 0 to 7.
        """
        return self._play(Move("unflag_doc", _doc_id(doc_id)))

    def submit_answer(self, answer: str, confidence: float) -> str:
        """Submit the final answer together with the current flags; this ends the episode.

        Args:
            answer: The short answer to the question.
            confidence: Probability from 0 to 1 that the answer is correct.
        """
        if not isinstance(answer, str):
            raise ValueError(f"answer must be a string, got {answer!r}")
        # An int past float's range (10**400) raised OverflowError converting: ruled out by its range first.
        if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 <= confidence <= 1:
            raise ValueError(f"confidence must be a number from 0 to 1, got {confidence!r}")
        return self._play(Move("submit_answer", None, answer, float(confidence)))

    @property
    def breakdown(self) -> Breakdown:
        """The reward; an episode left unfinished counts as the empty submission made then, that action charged."""
        return self._final or forfeit(self._state, self._key).breakdown

    def _play(self, move: Move) -> str:
        outcome = apply(self._state, move, self._key)
        self._state, self._final = outcome.state, outcome.breakdown
        if outcome.state.done:
            return f"{outcome.message}. The episode is over."
        left = self._key.max_budget - outcome.state.budget_used
        return f"{outcome.message}; flagged {sorted(outcome.state.flagged)}; budget left {left}"


def _doc_id(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < NUM_DOCS:
        raise ValueError(f"doc_id must be an integer from 0 to {NUM_DOCS - 1}, got {value!r}")
    return value

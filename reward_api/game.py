"""The episode as a pure state machine (README: Reward v2): the one place where actions and budget rules live.

`/step` over HTTP and `/ws`, `/score` with an action trace, `/score/batch` and training's tool mode all
go through `apply`/`play`, so a trace gets the same reward whichever way it arrives. Every action costs
one budget; reaching the budget without submitting forces an empty-answer, confidence-0 submission.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import NamedTuple

from pipeline.schema import NUM_DOCS
from reward_api.scoring import Breakdown, EpisodeKey, score_key

ACTION_TYPES = ("read_doc", "flag_suspicious", "unflag_doc", "submit_answer")
MAX_ANSWER_CHARS = 1000  # one limit for the API, one-shot training and tool play
DOC_ACTIONS = frozenset(ACTION_TYPES[:3])


class MoveError(ValueError):
    """An action that is malformed, or not allowed in the current state; the message says which."""


class EpisodeOver(MoveError):
    """An action after the episode ended."""


class Move(NamedTuple):
    action_type: str
    doc_id: int | None = None
    answer: str | None = None
    confidence: float | None = None


@dataclass(frozen=True, slots=True)
class GameState:
    """Everything the agent has done in an episode; holds nothing hidden (it travels in the state token)."""

    episode_id: int
    flagged: frozenset[int] = frozenset()
    budget_used: int = 0
    done: bool = False


@dataclass(frozen=True, slots=True)
class Outcome:
    state: GameState
    breakdown: Breakdown | None
    message: str


def check_move(move: Move) -> None:
    """Refuse a malformed action, whatever the state: unknown type, missing or extra arguments, bad ranges."""
    if move.action_type not in ACTION_TYPES:
        raise MoveError(f"action_type must be one of {list(ACTION_TYPES)}, got {move.action_type!r}")
    if move.action_type in DOC_ACTIONS:
        if move.doc_id is None:
            raise MoveError(f"{move.action_type} needs doc_id (0..{NUM_DOCS - 1})")
        if not 0 <= move.doc_id < NUM_DOCS:
            raise MoveError(f"doc_id must be in 0..{NUM_DOCS - 1}, got {move.doc_id}")
        if move.answer is not None or move.confidence is not None:
            raise MoveError(f"{move.action_type} takes only doc_id; answer and confidence belong to submit_answer")
        return
    if move.answer is None or move.confidence is None:
        raise MoveError("submit_answer needs answer (a string) and confidence (0..1)")
    if not 0.0 <= move.confidence <= 1.0:
        raise MoveError(f"confidence must be in [0, 1], got {move.confidence}")
    if len(move.answer) > MAX_ANSWER_CHARS:
        raise MoveError(f"answer must be at most {MAX_ANSWER_CHARS} characters, got {len(move.answer)}")
    try:  # the server's JSON parsers refuse a lone surrogate; training's tool calls (json.loads) do not
        move.answer.encode()
    except UnicodeEncodeError as err:
        raise MoveError(f"answer must be Unicode text; character {err.start} is a lone surrogate") from None
    if move.doc_id is not None:
        raise MoveError("submit_answer takes no doc_id")


def apply(state: GameState, move: Move, key: EpisodeKey) -> Outcome:
    """One action: costs one budget; a submission, or running out of budget, ends the episode with a reward."""
    check_move(move)
    if state.done:
        raise EpisodeOver(f"episode {state.episode_id} is over; reset to play again")
    used = state.budget_used + 1
    flagged = state.flagged
    episode_id = state.episode_id
    if move.action_type == "submit_answer":
        breakdown = score_key(move.answer, flagged, move.confidence, used, key)
        return Outcome(
            GameState(episode_id, flagged, used, True), breakdown, f"submitted; reward {breakdown['total']}"
        )
    if move.action_type == "flag_suspicious":
        flagged = flagged | {move.doc_id}
        message = f"flagged document {move.doc_id}"
    elif move.action_type == "unflag_doc":
        flagged = flagged - {move.doc_id}
        message = f"unflagged document {move.doc_id}"
    else:
        message = f"read document {move.doc_id}"
    if used >= key.max_budget:
        breakdown = score_key("", flagged, 0.0, used, key)
        message += f"; budget exhausted, empty answer submitted; reward {breakdown['total']}"
        return Outcome(GameState(episode_id, flagged, used, True), breakdown, message)
    return Outcome(GameState(episode_id, flagged, used, False), None, message)


def forfeit(state: GameState, key: EpisodeKey) -> Outcome:
    """End an unfinished episode as if it submitted the empty answer at confidence 0 now, that action charged.

    For callers whose episode can stop without a submission (a training rollout that ran out of turns). Charging
    the submission it never made keeps stopping from ever scoring above submitting (every action costs 1).
    """
    if state.done:
        raise EpisodeOver(f"episode {state.episode_id} is over")
    breakdown = score_key("", state.flagged, 0.0, min(state.budget_used + 1, key.max_budget), key)
    return Outcome(replace(state, done=True), breakdown, f"no answer submitted; reward {breakdown['total']}")


def play(episode_id: int, moves: Iterable[Move], key: EpisodeKey) -> Outcome:
    """A whole trace; it must end the episode (a submission, or the budget running out) and stop there."""
    outcome = Outcome(GameState(episode_id), None, "")
    for index, move in enumerate(moves):
        try:
            outcome = apply(outcome.state, move, key)
        except MoveError as exc:
            raise MoveError(f"action {index}: {exc}") from exc
    if not outcome.state.done:
        raise MoveError("the trace must end with submit_answer (or use up the budget)")
    return outcome


def submission_moves(answer: str, flagged_ids: Iterable[int], confidence: float) -> list[Move]:
    """The trace a one-shot submission stands for: flag each distinct id, then submit."""
    flags = [Move("flag_suspicious", doc_id) for doc_id in sorted(set(flagged_ids))]
    return [*flags, Move("submit_answer", None, answer, confidence)]

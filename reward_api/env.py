"""The OpenEnv environment: a thin shell around the pure state machine in `game`.

Built fresh for every HTTP request (OpenEnv's create_app does that), so construction costs nothing:
the store and the token signer live in a shared `Backend`. Over HTTP the game state arrives in the
signed state_token of each action; over /ws the instance keeps it between messages (a token sent there must be
its current state, and a finished game takes no step until the next reset).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from pipeline.randomness import integers
from reward_api.game import EpisodeOver, GameState, MoveError, Outcome, apply
from reward_api.models import (
    MAX_SEED,
    ContextCorruptionAction,
    ContextCorruptionObservation,
    ContextCorruptionState,
    DocumentView,
    ResetBody,
)
from reward_api.scoring import REWARD_VERSION
from reward_api.store import EpisodeNotFound, EpisodeStore
from reward_api.tokens import TokenError, TokenSigner

ENV_NAME = "context_corruption"
# Draw slot of pipeline.randomness used to map a reset seed to an episode.
RESET_SLOT = 9001


@dataclass(frozen=True)
class Backend:
    """What every request shares: the episode store and the state-token signer."""

    store: EpisodeStore
    signer: TokenSigner


def seeded_episode(store: EpisodeStore, seed: int, split: str, task: str | None) -> int:
    """The episode a seed picks in a split (and task): a hash of (dataset seed, seed), stable across replicas."""
    ids = store.ids_of(split, task)
    if len(ids) == 0:
        raise EpisodeNotFound(f"split {split!r} has no episodes" + (f" of task {task!r}" if task else ""))
    index = int(integers(store.manifest.seed, np.array([seed]), RESET_SLOT, len(ids))[0])
    return int(ids[index])


class ContextCorruptionEnv(Environment[ContextCorruptionAction, ContextCorruptionObservation, ContextCorruptionState]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, backend: Backend) -> None:
        super().__init__()
        self._backend = backend
        self._game: GameState | None = None

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> ContextCorruptionObservation:
        body = ResetBody.model_validate({"seed": seed, "episode_id": episode_id, **kwargs})
        store = self._backend.store
        if body.episode_id is not None:
            chosen = body.episode_id
            _check_chosen(store, chosen, {name: getattr(body, name) for name in body.model_fields_set & CHOOSERS})
        else:
            chosen = seeded_episode(
                store, secrets.randbelow(MAX_SEED + 1) if body.seed is None else body.seed, body.split, body.task
            )
        self._game = GameState(chosen)
        return self._observe(Outcome(self._game, None, "new episode: read the documents, flag corrupt ones, submit"))

    def step(self, action: ContextCorruptionAction, timeout_s: float | None = None) -> ContextCorruptionObservation:
        state = self._current(action.state_token)
        outcome = apply(state, action.move(), self._backend.store.key(state.episode_id))
        self._game = outcome.state
        return self._observe(outcome)

    def _current(self, token: str | None) -> GameState:
        """The state an action applies to: over HTTP the token's; in a session (/ws) the session's own."""
        if self._game is None:
            if token is None:
                raise MoveError(
                    "state_token is required over HTTP: send the one from the last /reset or /step "
                    "(over /ws, reset first)"
                )
            return self._backend.signer.verify(token)
        return self._session_state(token)

    def _session_state(self, token: str | None) -> GameState:
        """The session's game; a token, optional here, must be its current state.

        An older token (the reset's, say) once replayed the game from that point, so a finished episode could be
        submitted again with another answer; now a finished game takes no step until the next reset.
        """
        game = self._game
        if game.done:
            raise EpisodeOver(f"episode {game.episode_id} is over; reset to play again")
        if token is None:
            return game
        state = self._backend.signer.verify(token)
        if state.episode_id != game.episode_id:
            raise TokenError(
                f"state_token belongs to episode {state.episode_id}, this session plays {game.episode_id}"
            )
        if state != game:
            raise TokenError(
                "state_token is not this session's current state (an older one?): send the token of the last "
                "observation, or none (the session keeps the state)"
            )
        return state

    def _observe(self, outcome: Outcome) -> ContextCorruptionObservation:
        state = outcome.state
        view = self._backend.store.view(state.episode_id)
        breakdown = outcome.breakdown
        return ContextCorruptionObservation(
            episode_id=state.episode_id,
            split=view["split"],
            task=view["task"],
            question=view["question"],
            documents=[DocumentView(**doc, is_flagged=doc["doc_id"] in state.flagged) for doc in view["documents"]],
            flagged_ids=sorted(state.flagged),
            budget_remaining=view["max_budget"] - state.budget_used,
            turn=state.budget_used,
            done=state.done,
            reward=None if breakdown is None else breakdown["total"],
            reward_breakdown=None if breakdown is None else dict(breakdown),
            message=outcome.message,
            state_token=self._backend.signer.sign(state),
        )

    @property
    def state(self) -> ContextCorruptionState:
        game = self._game
        if game is None:
            return ContextCorruptionState()
        return ContextCorruptionState(
            episode_id=str(game.episode_id),
            step_count=game.budget_used,
            flagged_ids=sorted(game.flagged),
            budget_used=game.budget_used,
            done=game.done,
        )

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=ENV_NAME,
            description=(
                "Answer a question from 8 retrieved documents, some deliberately corrupted: flag the corrupt ones "
                f"and submit an answer with a calibrated confidence. Reward {REWARD_VERSION} in [-0.2, 1.05]."
            ),
            version=self._backend.store.manifest.reward_version,
        )


CHOOSERS = {"split", "task"}  # how a seeded reset chooses; sent with an episode_id, they must be that episode's


def _check_chosen(store: EpisodeStore, episode_id: int, asked: dict[str, str | None]) -> None:
    """EpisodeNotFound when `episode_id` is no episode, or not one of the split and task also asked for."""
    store.locate(episode_id)
    if not asked:
        return
    view = store.view(episode_id)
    wrong = {name: value for name, value in asked.items() if value is not None and view[name] != value}
    if wrong:
        raise EpisodeNotFound(
            f"no episode {episode_id} in {', '.join(f'{name} {value!r}' for name, value in wrong.items())}: "
            f"it is in split {view['split']!r}, task {view['task']!r}"
        )

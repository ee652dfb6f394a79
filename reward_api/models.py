"""Pydantic models at the API boundary: the OpenEnv action/observation/state and the extra routes' bodies.

Field ranges here turn bad input into a 422 naming the field; the action's cross-field rules are
`game.check_move`, so HTTP, WebSocket and training refuse the same actions with the same message.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Path
from openenv.core.env_server.types import Action, Observation, State, StepRequest
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    StrictInt,
    Tag,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from pipeline.schema import MAX_BUDGET, NUM_DOCS, SPLITS, TASKS
from reward_api.game import ACTION_TYPES, Move, MoveError, check_move
from reward_api.scoring import REWARD_VERSION, Breakdown
from reward_api.submission import Answer, Closed, Confidence, DocId, EpisodeId, SubmissionIn

ActionType = Literal[ACTION_TYPES]  # type: ignore[valid-type]
MAX_BATCH = 8192
MAX_SEED = 2**63 - 1  # a seeded reset's seed: a non-negative int64
# int() reads at most this many digits (the interpreter's limit, as for a JSON integer): a longer id is refused, a
# shorter one that names no episode is a 404, as an integer id is.
MAX_ID_DIGITS = 4300


def _invalid(kind: str, message: str) -> PydanticCustomError:
    """A validation error whose context holds only text: a ValueError's context holds the exception itself, which
    the WebSocket session cannot serialise (it closed the session instead of reporting the error)."""
    return PydanticCustomError(kind, "{reason}", {"reason": message})


def _digits(value: Any) -> Any:
    """An id in a path is written in digits: int() would also read "3_0" as 30, and "+5", " 5" or "1.000"."""
    if isinstance(value, str) and not (value.isascii() and value.isdigit()):
        if value.startswith("-") and value[1:].isascii() and value[1:].isdigit():
            raise _invalid("greater_than_equal", f"Input should be greater than or equal to 0, got {value}")
        raise _invalid("int_parsing", f"Input should be a valid integer: an episode id in digits, got {value!r}")
    return value


PathId = Annotated[int, Path(ge=0, description="Global episode id"), BeforeValidator(_digits)]


class _MoveFields(BaseModel):
    """The four actions of the game (README: Reward v2); each costs one budget."""

    action_type: ActionType = Field(description="read_doc, flag_suspicious, unflag_doc (need doc_id) or submit_answer")
    doc_id: DocId | None = None
    answer: Answer | None = Field(default=None, description="submit_answer only")
    confidence: Confidence | None = Field(default=None, description="submit_answer only")

    @model_validator(mode="after")
    def _check(self):
        try:
            check_move(self.move())
        except MoveError as exc:
            raise _invalid("move_error", str(exc)) from None
        return self

    def move(self) -> Move:
        return Move(self.action_type, self.doc_id, self.answer, self.confidence)


class ContextCorruptionAction(_MoveFields, Action):
    """An action for /step or /ws; over plain HTTP it carries the state_token of the previous observation."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"action_type": "flag_suspicious", "doc_id": 3, "state_token": "<token from the last observation>"},
                {"action_type": "submit_answer", "answer": "Paris", "confidence": 0.8, "state_token": "<token>"},
            ]
        }
    )
    state_token: str | None = Field(
        default=None, max_length=512, description="Required over HTTP; optional over /ws, where the session keeps it"
    )


class DocumentView(BaseModel):
    doc_id: int = Field(description=f"0..{NUM_DOCS - 1}")
    title: str
    content: str
    is_flagged: bool = Field(description="Whether the agent has flagged this document as corrupt")


class ContextCorruptionObservation(Observation):
    """What the agent sees: the question, the documents, its own progress, and the reward once done."""

    episode_id: int
    split: str
    task: str = Field(description=f"Difficulty tier, one of {list(TASKS)}")
    question: str
    documents: list[DocumentView]
    flagged_ids: list[int] = Field(description="Documents flagged so far, ascending")
    budget_remaining: int = Field(description="Actions left; every action costs 1")
    turn: int = Field(description="Actions taken so far")
    reward_breakdown: Breakdown | None = Field(default=None, description="Every reward term, once the episode is over")
    reward_version: str = Field(default=REWARD_VERSION, description="Version of the reward formula")
    message: str = Field(description="What the last action did")
    state_token: str = Field(description="Signed game state: send it back with the next action over HTTP")


class ContextCorruptionState(State):
    """The agent's progress only; never answers or corrupt ids. Over HTTP a fresh server holds none."""

    flagged_ids: list[int] = Field(default_factory=list)
    budget_used: int = 0
    done: bool = False


class StepBody(StepRequest):
    """POST /step: one action of the game, with the state_token of the last observation inside it over HTTP."""

    # Closed: OpenEnv hands a key it does not know to the environment's step as an argument, and one named as a
    # parameter of its own helpers ("func", "self") broke the call (a 500).
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"action": {"action_type": "read_doc", "doc_id": 0, "state_token": "<token>"}}]
        },
    )


class ResetBody(Closed):
    """POST /reset: an episode by id, or a seed mapped deterministically to an episode of a split (and task).

    A split or task sent with an episode_id must be that episode's (else 404), and a seed is refused beside one: none
    is silently ignored."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"episode_id": 42}, {"seed": 7, "split": "test", "task": "hard"}, {}]}
    )
    episode_id: StrictInt | str | None = Field(
        default=None, description="Episode id, as an integer or a decimal string"
    )
    seed: StrictInt | None = Field(default=None, ge=0, le=MAX_SEED, description="Picks an episode of `split` by hash")
    split: Literal[SPLITS] = Field(default="train", description="Split for seeded resets")  # type: ignore[valid-type]
    task: Literal[TASKS] | None = Field(default=None, description="Restrict seeded resets to one tier")  # type: ignore[valid-type]

    @field_validator("episode_id")
    @classmethod
    def _as_int(cls, value: int | str | None) -> int | None:
        if isinstance(value, str):
            digits = value.strip()
            if not (digits.isascii() and digits.isdigit()):
                raise _invalid("episode_id", f"episode_id must be a non-negative integer, got {value!r}")
            if len(digits) > MAX_ID_DIGITS:
                raise _invalid(
                    "episode_id", f"episode_id must have at most {MAX_ID_DIGITS:,} digits, got {len(digits):,}"
                )
            value = int(digits)
        if value is not None and value < 0:
            raise _invalid("episode_id", f"episode_id must be a non-negative integer, got {value}")
        return value

    @model_validator(mode="after")
    def _one_chooser(self):
        if self.episode_id is not None and self.seed is not None:
            raise _invalid("episode_or_seed", "send episode_id or seed, not both: a seed picks an episode")
        return self


class DocumentOut(BaseModel):
    doc_id: int
    title: str
    content: str


class EpisodeView(BaseModel):
    """GET /episodes/{id}: the visible columns of an episode (README: The episode)."""

    episode_id: int
    split: str
    task: str
    question: str
    documents: list[DocumentOut]
    max_budget: int


class TraceAction(_MoveFields, Closed):
    """One action of a trace."""


class TraceIn(Closed):
    """A whole episode as actions; it must end with submit_answer or use up the budget."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "episode_id": 0,
                    "actions": [
                        {"action_type": "read_doc", "doc_id": 1},
                        {"action_type": "flag_suspicious", "doc_id": 2},
                        {"action_type": "submit_answer", "answer": "Paris", "confidence": 0.7},
                    ],
                }
            ]
        }
    )
    episode_id: EpisodeId
    actions: list[TraceAction] = Field(min_length=1, max_length=MAX_BUDGET)


def _shape(body: Any) -> str:
    return "trace" if isinstance(body, dict) and "actions" in body else "submission"


ScoreIn = Annotated[
    Annotated[SubmissionIn, Tag("submission")] | Annotated[TraceIn, Tag("trace")], Discriminator(_shape)
]


class BatchIn(Closed):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "submissions": [
                        {"episode_id": 0, "answer": "Paris", "flagged_ids": [2], "confidence": 0.9},
                        {"episode_id": 0, "answer": "Lyon", "flagged_ids": [], "confidence": 0.4},
                    ]
                }
            ]
        }
    )
    submissions: list[ScoreIn] = Field(min_length=1, max_length=MAX_BATCH)


class ScoreOut(BaseModel):
    episode_id: int
    reward: float
    breakdown: Breakdown
    reward_version: str


class BatchOut(BaseModel):
    results: list[ScoreOut] = Field(description="One result per submission, in order")


class TaskOut(BaseModel):
    name: str
    corrupt_docs: int
    description: str
    success_threshold: float
    threshold_rule: str
    episodes: int = Field(0, description="Validation episodes the threshold was measured on (0: formula fallback)")
    baseline_means: dict[str, float] = Field(
        default_factory=dict, description="Mean reward of each baseline agent the threshold came from"
    )

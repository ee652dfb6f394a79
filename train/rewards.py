"""Completion → submission → reward, with the server's own scoring function (`reward_api.scoring`).

Parsing never raises: a completion that is malformed, truncated, oversized or hostile becomes the
empty submission (no answer, no flags, confidence 0), which the reward scores like any other.
The reward functions follow TRL's contract, `f(completions, **columns) -> list[float]`, where the
hidden ground-truth columns of the episode arrive as keyword lists.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from statistics import fmean
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError, field_validator

from pipeline.schema import NUM_DOCS
from reward_api.game import MAX_ANSWER_CHARS
from reward_api.scoring import Breakdown, EpisodeKey, score_submission_key

# Longer completions are not searched: scanning them costs more than they could be worth.
MAX_COMPLETION_CHARS = 32_768
# At most this many "{" positions are tried as the start of a JSON object.
MAX_JSON_CANDIDATES = 64
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_DECODER = json.JSONDecoder()


class Submission(BaseModel):
    """A one-shot submission; extra keys in the model's JSON are ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore", strict=True)

    answer: Annotated[StrictStr, Field(max_length=MAX_ANSWER_CHARS)]
    flagged_ids: tuple[Annotated[int, Field(ge=0, lt=NUM_DOCS)], ...] = ()
    confidence: Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)] = 0.0

    @field_validator("flagged_ids", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> Any:
        # JSON gives a list; duplicates are one flag.
        if not isinstance(value, list | tuple):
            raise ValueError("flagged_ids must be a list of document ids")
        if any(isinstance(v, bool) for v in value):
            raise ValueError("flagged_ids must hold integers, not booleans")
        return tuple(sorted(set(value))) if all(isinstance(v, int) for v in value) else tuple(value)


EMPTY_SUBMISSION = Submission(answer="", flagged_ids=(), confidence=0.0)


def strip_thinking(text: str) -> str:
    """Drop <think>…</think> blocks; text after an unclosed <think> or before a lone </think> is thinking too."""
    text = _THINK.sub("", text)
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    return text.split("<think>", 1)[0]


def _json_objects(text: str) -> Iterable[dict]:
    """Every top-level JSON object in the text, in order (nested ones are skipped with their parent)."""
    pos, tried = text.find("{"), 0
    while pos != -1 and tried < MAX_JSON_CANDIDATES:
        tried += 1
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):
            pos = text.find("{", pos + 1)
            continue
        if isinstance(value, dict):
            yield value
        pos = text.find("{", end)


def parse_completion(text: str) -> tuple[Submission, bool]:
    """The last valid submission in the text and whether it had all three keys; else (EMPTY_SUBMISSION, False)."""
    if not isinstance(text, str) or len(text) > MAX_COMPLETION_CHARS:
        return EMPTY_SUBMISSION, False
    found: tuple[Submission, bool] = (EMPTY_SUBMISSION, False)
    for obj in _json_objects(strip_thinking(text)):
        try:
            submission = Submission.model_validate(obj)
        except ValidationError:
            continue
        found = (submission, {"answer", "flagged_ids", "confidence"} <= obj.keys())
    return found


def completion_text(completion: str | Sequence[dict]) -> str:
    """TRL gives a string (standard format) or a list of messages (conversational): take the last assistant turn."""
    if isinstance(completion, str):
        return completion
    contents = [m.get("content") for m in completion if isinstance(m, dict) and m.get("role") == "assistant"]
    return contents[-1] if contents and isinstance(contents[-1], str) else ""


def score_episode(
    submission: Submission, answer: str, answer_aliases: Iterable[str], corrupt_ids: Iterable[int], max_budget: int
) -> Breakdown:
    key = EpisodeKey.from_row(answer, answer_aliases, corrupt_ids, max_budget)
    return score_submission_key(submission.answer, submission.flagged_ids, submission.confidence, key)


def episode_reward(
    completions: list, answer: list, answer_aliases: list, corrupt_ids: list, max_budget: list, **kwargs: Any
) -> list[float]:
    """The v1 reward of each one-shot completion; the breakdown's parts are logged as metrics when TRL allows."""
    breakdowns = [
        score_episode(parse_completion(completion_text(c))[0], a, aliases, corrupt, budget)
        for c, a, aliases, corrupt, budget in zip(
            completions, answer, answer_aliases, corrupt_ids, max_budget, strict=True
        )
    ]
    _log_parts(breakdowns, kwargs.get("log_metric"))
    return [b["total"] for b in breakdowns]


def format_reward(completions: list, **kwargs: Any) -> list[float]:
    """1.0 when the completion holds a valid submission with all three keys, else 0.0."""
    return [float(parse_completion(completion_text(c))[1]) for c in completions]


def _log_parts(breakdowns: Sequence[Breakdown], log_metric: Callable[[str, float], None] | None) -> None:
    if log_metric is None or not breakdowns:
        return
    for key in breakdowns[0]:
        if key != "total":
            log_metric(f"reward_parts/{key}", fmean(b[key] for b in breakdowns))

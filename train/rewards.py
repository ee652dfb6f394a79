"""Completion → submission → reward, with the server's own submission rules and scoring function.

A completion's JSON submission is validated by the model `POST /score` validates with
(`reward_api.submission.SubmissionIn`) and scored by `reward_api.scoring`, so training rewards exactly what
the server would return. Parsing never raises: a completion that is malformed, truncated, oversized or
hostile, or that the server would refuse, becomes the empty submission (no answer, no flags,
confidence 0), which the reward scores like any other. The reward functions follow TRL's contract,
`f(completions, **columns) -> list[float]`, where the hidden ground-truth columns of the episode arrive
as keyword lists.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from pydantic import ValidationError

from reward_api.scoring import Breakdown, EpisodeKey, score_submission_key
from reward_api.submission import JSON_OBJECT_START, SubmissionIn

# Longer completions are not searched: scanning them costs more than they could be worth.
MAX_COMPLETION_CHARS = 32_768
# At most this many places that open an object with a key ("{" then '"') are tried as the start of a JSON object.
MAX_JSON_CANDIDATES = 64
# The reply carries no episode id (one it writes is replaced): the trainer knows the row's, any valid id stands in.
_ROW_ID = 0
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Submission:
    """A submission as scored: flagged ids sorted, duplicates as one flag (as scoring counts them)."""

    answer: str
    flagged_ids: tuple[int, ...] = ()
    confidence: float = 0.0


EMPTY_SUBMISSION = Submission(answer="")


def strip_thinking(text: str) -> str:
    """Drop <think>…</think> blocks; text after an unclosed <think> or before a lone </think> is thinking too."""
    text = _THINK.sub("", text)
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    return text.split("<think>", 1)[0]


def _json_objects(text: str) -> Iterable[dict]:
    """Every top-level JSON object with a key in the text, in order (nested ones are skipped with their parent); a
    brace that opens no key ("{a}", "{}", a set in prose) is not a candidate, so it never uses up the limit."""
    start, tried = JSON_OBJECT_START.search(text), 0
    while start and tried < MAX_JSON_CANDIDATES:
        tried += 1
        try:
            value, end = _DECODER.raw_decode(text, start.start())
        except (ValueError, RecursionError):
            start = JSON_OBJECT_START.search(text, start.start() + 1)
            continue
        if isinstance(value, dict):
            yield value
        start = JSON_OBJECT_START.search(text, end)


def _accepted(obj: dict) -> Submission | None:
    """The submission the server makes of this JSON object sent with the row's episode id, or None if it refuses it
    (a missing answer or confidence, an extra key, a value out of range...)."""
    try:
        item = SubmissionIn.model_validate({**obj, "episode_id": _ROW_ID})
    except ValidationError:
        return None
    return Submission(item.answer, tuple(sorted(set(item.flagged_ids))), item.confidence)


def parse_completion(text: str) -> tuple[Submission, bool]:
    """The last submission in the text the server accepts, and whether it had all three keys;
    else (EMPTY_SUBMISSION, False)."""
    if not isinstance(text, str) or len(text) > MAX_COMPLETION_CHARS:
        return EMPTY_SUBMISSION, False
    found: tuple[Submission, bool] = (EMPTY_SUBMISSION, False)
    for obj in _json_objects(strip_thinking(text)):
        submission = _accepted(obj)
        if submission is not None:
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
    """The reward of each one-shot completion; the breakdown's parts are logged as metrics when TRL allows."""
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


def environment_reward(environments: Sequence[Any], **kwargs: Any) -> list[float]:
    """Tool mode: the reward each rollout's environment (`train.tools`) scored, its parts logged as in one-shot."""
    breakdowns = [env.breakdown for env in environments]
    _log_parts(breakdowns, kwargs.get("log_metric"))
    return [b["total"] for b in breakdowns]


def _log_parts(breakdowns: Sequence[Breakdown], log_metric: Callable[[str, float], None] | None) -> None:
    if log_metric is None or not breakdowns:
        return
    for key in breakdowns[0]:
        if key != "total":
            log_metric(f"reward_parts/{key}", fmean(b[key] for b in breakdowns))

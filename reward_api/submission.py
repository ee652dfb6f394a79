"""The one-shot submission and its field types: what `POST /score` accepts and training scores alike.

Apart from the OpenEnv models (reward_api.models), so training validates a completion by the server's rules
without importing openenv (about 4 s of imports in every training process).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from pipeline.schema import NUM_DOCS
from reward_api.game import MAX_ANSWER_CHARS

# Strict: true/false or 2.0 are not ids, and false is not a confidence.
DocId = Annotated[int, Field(strict=True, ge=0, le=NUM_DOCS - 1, description=f"Document id, 0..{NUM_DOCS - 1}")]
EpisodeId = Annotated[
    int, Field(strict=True, ge=0, description="Global episode id (see GET /manifest for the ranges)")
]
Confidence = Annotated[
    float, Field(strict=True, ge=0.0, le=1.0, allow_inf_nan=False, description="Confidence in the answer")
]
Answer = Annotated[str, Field(max_length=MAX_ANSWER_CHARS, description="The final answer")]
# Where a model's reply can open a JSON object with a key (JSON's whitespace only): training reads its submissions
# and the inference client its actions from there, so braces in prose ("{doc 3}", "{}") are passed over.
JSON_OBJECT_START = re.compile(r'\{[ \t\n\r]*"')


class Closed(BaseModel):
    """A body with no key but its own."""

    model_config = ConfigDict(extra="forbid")


class SubmissionIn(Closed):
    """A one-shot submission: the trace "flag each id, then submit" (one action per distinct flagged id, plus the
    submission, at most the budget)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"episode_id": 0, "answer": "Paris", "flagged_ids": [2, 5], "confidence": 0.8}]
        }
    )
    episode_id: EpisodeId
    answer: Answer
    flagged_ids: list[DocId] = Field(
        default_factory=list, max_length=NUM_DOCS, description="Documents flagged as corrupt"
    )
    confidence: Confidence

"""Chat prompts for both training modes, built only from the agent-visible columns (README: The episode).

One-shot: the system prompt asks for a single JSON submission. Tool mode: the system prompt
describes the four actions, and the episode text arrives through the environment's `reset`.
Both render the episode with the same `episode_text`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.schema import MAX_BUDGET
from reward_api.scoring import reward_rules

_TASK = (
    "You answer a question using retrieved documents. Some of the documents are deliberately corrupted: "
    "they state a false answer, sometimes convincingly. Cross-check the documents, answer with the answer "
    "the trustworthy documents support, flag every document you believe is corrupted, and state how "
    "confident you are that your answer is correct."
)


_REWARD = reward_rules()
_FORMAT = (
    'Reply with one JSON object and nothing else: {"answer": "<short answer>", "flagged_ids": [<doc ids>], '
    '"confidence": <number from 0 to 1>}'
)

ONESHOT_SYSTEM_PROMPT = f"{_TASK}\n\n{_REWARD}\n\n{_FORMAT}"

TOOLS_SYSTEM_PROMPT = (
    f"{_TASK}\n\n{_REWARD}\n\n"
    f"You act through tools, with a budget of {MAX_BUDGET} actions per episode:\n"
    "- read_doc(doc_id): return the full text of a document\n"
    "- flag_suspicious(doc_id): mark a document as corrupted\n"
    "- unflag_doc(doc_id): remove a flag\n"
    "- submit_answer(answer, confidence): submit your answer with your flags; this ends the episode\n"
    "If the budget runs out before you submit, an empty answer is submitted for you."
)


def episode_text(question: str, documents: Sequence[Mapping[str, Any]]) -> str:
    """The user message: the question, then each document with its id, title and text."""
    docs = "\n\n".join(f"[{doc['doc_id']}] {doc['title']}\n{doc['content']}" for doc in documents)
    return f"Question: {question}\n\nDocuments:\n\n{docs}"


def oneshot_prompt(question: str, documents: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": ONESHOT_SYSTEM_PROMPT},
        {"role": "user", "content": episode_text(question, documents)},
    ]


def tools_prompt() -> list[dict[str, str]]:
    """Tool mode: the user turn starts empty; TRL appends the environment's `reset` observation to it."""
    return [{"role": "system", "content": TOOLS_SYSTEM_PROMPT}, {"role": "user", "content": ""}]

"""A reader that needs no model: the answer most documents assert, from the visible text only.

Used by the baseline agents and the inference script's `--heuristic` mode. It sees exactly what an agent
sees (question and document texts), never a hidden column. Each document's candidate answers are the
numbers and capitalised names it states, minus what the question already names; a statement the
document itself presents as wrong ("a common misconception holds that ...", "contrary to a widespread
belief that A, B") counts only for its correction. The answer is the candidate stated by most documents.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from reward_api.scoring import normalize

# A sentence that reports a claim in order to reject it; its correction comes last, in it or in the next sentence.
_REFUTES = re.compile(
    r"misconception holds|widespread belief|sometimes claimed|older sources state|mistakenly|wrongly", re.I
)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=[^\W\d_])")
_UPPER = "A-ZÀ-ÖØ-ÞĀĂĄĆĈĊČĎĐĒĖĘĚĜĞĠĢĤĦĪĮİĴĶĹĻĽŁŃŅŇŌŐŒŔŖŘŚŜŞŠŢŤŪŮŰŲŴŶŸŹŻŽ"
_WORD = rf"[{_UPPER}][\w'’&.-]*"
_NAME = re.compile(rf"{_WORD}(?:(?:,? | and | of | of the | de | du | la | von | van | y ){_WORD})*")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_POSSESSIVE = re.compile(r"['’]s?$")
_POSSESSIVE_IN_TEXT = re.compile(r"['’]s\b")


@dataclass(frozen=True)
class Reading:
    """The majority answer, how many documents state it, and which documents do not."""

    answer: str
    votes: int
    dissenting: tuple[int, ...]


def _names(sentence: str) -> list[str]:
    found = []
    for match in _NAME.finditer(sentence):
        text = _POSSESSIVE.sub("", match.group().rstrip(".,"))
        if match.start() == 0 and " " not in text:  # a capitalised first word is usually just a first word
            continue
        found.append(text)
    return found


def _sentence_candidates(sentence: str) -> list[str]:
    """Candidates in order of appearance: numbers and capitalised names."""
    spans = [(m.start(), m.group().rstrip(".,")) for m in _NUMBER.finditer(sentence)]
    spans += [(sentence.find(name), name) for name in _names(sentence)]
    return [text for _, text in sorted(spans)]


def _asserted(content: str, question: str) -> tuple[list[str], str]:
    """A document's candidates and asserted text: a sentence rejecting a claim keeps only its correction."""
    asked = f" {normalize(_POSSESSIVE_IN_TEXT.sub('', question))} "
    candidates, text = [], []
    for sentence in _SENTENCE.split(content):
        found = [c for c in _sentence_candidates(sentence) if normalize(c) and f" {normalize(c)} " not in asked]
        if _REFUTES.search(sentence):
            found = found[-1:] if len(found) > 1 else []
            text.extend(found)
        else:
            text.append(sentence)
        candidates.extend(found)
    return candidates, " ".join(text)


def read(question: str, contents: Sequence[str]) -> Reading:
    """The candidate stated by most documents (ties: the one stated first); 'unknown' if none is found.

    A document dissents when its asserted text does not contain the majority answer at all.
    """
    votes: Counter[str] = Counter()
    surface: dict[str, str] = {}
    texts = []
    for content in contents:
        candidates, text = _asserted(content, question)
        texts.append(f" {normalize(text)} ")
        for candidate in candidates:
            surface.setdefault(normalize(candidate), candidate)
        votes.update({normalize(c) for c in candidates})
    if not votes:
        return Reading("unknown", 0, ())
    key = max(surface, key=lambda k: votes[k])
    dissenting = tuple(i for i, text in enumerate(texts) if f" {key} " not in text)
    return Reading(surface[key], votes[key], dissenting)

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

# A sentence that reports a claim in order to reject it (the wordings of pipeline.wording.FRAMES); its correction
# comes last in it, or in a sentence of its own before or after it.
_REFUTES = re.compile(
    r"misconception holds|widespread belief|sometimes claimed|older sources state|mistakenly|wrongly|still circulate"
    r"|an error to hold|number of accounts say",
    re.I,
)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=[^\W\d_])")
_UPPER = "A-ZÀ-ÖØ-ÞĀĂĄĆĈĊČĎĐĒĖĘĚĜĞĠĢĤĦĪĮİĴĶĹĻĽŁŃŅŇŌŐŒŔŖŘŚŜŞŠŢŤŪŮŰŲŴŶŸŹŻŽ"
_WORD = rf"[{_UPPER}][\w'’&./-]*"
_NAME = re.compile(rf"{_WORD}(?:(?:,? | and | of | of the | de | du | la | von | van | y ){_WORD})*")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
# A year as documents cite one ("its 2025 annual report"): four digits, no separator, which a count of that size has
# ("2,025 employees"). A candidate only where the question asks a year; elsewhere the report years, a few for facts
# of one time (populations cite 2019-2021), outvoted an answer some documents open a sentence with.
_BARE_YEAR = re.compile(r"(?:1\d|20)\d\d")
_ASKS_YEAR = re.compile(r"\b(?:year|when)\b", re.IGNORECASE)
_POSSESSIVE = re.compile(r"['’]s?$")
_POSSESSIVE_IN_TEXT = re.compile(r"['’]s\b")
_TAIL = re.compile(r"((?: [a-z][\w'’/-]*)*(?: \([\w'’/ -]+\))?)(?=[.,;:)]|$)")
# A tail ends before the first of these: what follows is a phrase about the name ("Stockholm without revision",
# "Production assistant without revision") or what it does ("Kr is given as ..."), not part of it.
_NOT_A_TAIL = re.compile(
    r" (without|with|since|from|after|before|in|on|at|by|for|to|until|is|are|was|were|has|have|had)\b"
)


@dataclass(frozen=True)
class Reading:
    """The majority answer, how many documents state it, and which documents do not."""

    answer: str
    votes: int
    dissenting: tuple[int, ...]


def _sentence_candidates(sentence: str, asked: str) -> list[tuple[int, str]]:
    """(position, text) of the numbers and capitalised names a sentence states that the question does not name.

    A capitalised name that only lowercase words (and a parenthesis of them) follow to a punctuation mark or the end
    of the sentence also counts with them, up to a word opening a phrase about it (_NOT_A_TAIL), for answers written
    in sentence case ("... the recorded trade of Ann Lee is Tourist information centre manager.", "Civil Service
    administrator, according to", "Research scientist (medical)", "Barrister's clerk"), and a parenthesis alone
    ("Research Scientist (maths)", "Chartered Legal Executive (England and Wales)").
    """
    spans = [(m.start(), m.group().rstrip(".,")) for m in _NUMBER.finditer(sentence)]
    if not _ASKS_YEAR.search(asked):
        spans = [(start, number) for start, number in spans if not _BARE_YEAR.fullmatch(number)]
    for match in _NAME.finditer(sentence):
        written = match.group().rstrip(".,")
        name = _POSSESSIVE.sub("", written)
        if f" {normalize(name)} " in asked:
            continue
        if match.start() == 0 and " " not in name:  # a capitalised first word is usually just a first word
            continue
        spans.append((match.start(), name))
        tail = _TAIL.match(sentence, match.end())
        words = _NOT_A_TAIL.split(tail.group(1), maxsplit=1)[0] if tail else ""
        if words and match.start() > 0:
            spans.append((match.start(), written + words))  # "Barrister's clerk" keeps its possessive
    return sorted((start, text) for start, text in spans if normalize(text) and f" {normalize(text)} " not in asked)


def _asserted(content: str, question: str) -> tuple[list[str], str]:
    """A document's candidates and asserted text: a sentence rejecting a claim keeps only its correction."""
    asked = f" {normalize(_POSSESSIVE_IN_TEXT.sub('', question))} "
    candidates, text = [], []
    for sentence in _SENTENCE.split(content):
        found = _sentence_candidates(sentence, asked)
        if _REFUTES.search(sentence):
            last = found[-1][0] if len({start for start, _ in found}) > 1 else None
            found = [(start, c) for start, c in found if start == last]
            text.extend(c for _, c in found)
        else:
            text.append(sentence)
        candidates.extend(c for _, c in sorted(found, key=lambda span: (span[0], -len(span[1]))))
    return candidates, " ".join(text)


def read(question: str, contents: Sequence[str]) -> Reading:
    """The candidate stated by most documents (ties: the longest); 'unknown' if none is found.

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
    key = max(surface, key=lambda k: (votes[k], len(k)))
    count = votes[key]
    # A sentence-case answer is also counted by its first word alone, wherever the sentence goes on after it.
    longer = [k for k in surface if k.startswith(f"{key} ") and 2 * votes[k] >= count]
    key = max(longer, key=lambda k: (votes[k], len(k)), default=key)
    dissenting = tuple(i for i, text in enumerate(texts) if f" {key} " not in text)
    return Reading(surface[key], len(texts) - len(dissenting), dissenting)  # those stating it, not its first word

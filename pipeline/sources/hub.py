"""Real QA sets through `datasets.load_dataset`: Natural Questions (nq_open), PopQA, FaithEval counterfactual.

Each loader takes the dataset path (the Hub id by default, or a local folder with the same files) and
keeps only short answers (at most five words), with their aliases. Off by default: the build
machines reach package registries only.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable

import polars as pl

from pipeline.sources.common import FactRows, canonical_number, folded_aliases, infer_answer_type

MAX_ANSWER_WORDS = 5
NQ_OPEN, POPQA, FAITHEVAL = "nq_open", "akariasai/PopQA", "Salesforce/FaithEval-counterfactual-v1.0"
# PopQA relations whose objects are people or places; the others are inferred from the answer text.
POPQA_TYPES = {
    **dict.fromkeys(("father", "mother", "director", "producer", "screenwriter", "composer", "author"), "person"),
    **dict.fromkeys(("place_of_birth", "country", "capital", "capital_of"), "place"),
}
POPQA_COLUMNS = {"id", "subj", "prop", "obj", "question", "possible_answers", "o_aliases"}
_ARTICLE = re.compile(r"^(?:the|an?)\s+", re.IGNORECASE)  # "the United States" also answers as "United States"
# FaithEval questions that only make sense next to their answer options.
_NEEDS_OPTIONS = re.compile(r"^(which|what) of (the|these) (following|options|choices)\b", re.IGNORECASE)


class HubSourceError(RuntimeError):
    """A Hub source could not be read, or does not have the columns its loader reads."""


def _rows(source: str, path: str, split: str, limit: int, columns: set[str]) -> Iterable[dict]:
    # Imported here: `datasets` takes over a second to import and the default build never needs it.
    from datasets import load_dataset

    try:
        rows = load_dataset(path, split=f"{split}[:{limit}]")
    except (OSError, ValueError) as err:
        raise HubSourceError(
            f"facts.sources: {source} could not be read from {path!r} ({type(err).__name__}: {err}); it needs the "
            "Hugging Face Hub or a local copy of the dataset: remove it from facts.sources to build offline"
        ) from err
    missing = columns - set(rows.column_names)
    if missing:
        raise HubSourceError(f"{source} at {path!r} lacks the columns {sorted(missing)}; it has {rows.column_names}")
    return rows


def _json_list(value: object) -> list:
    """PopQA stores lists as JSON strings; an empty cell reads back as a missing value."""
    return json.loads(value) if isinstance(value, str) and value.strip() else []


def is_short(answer: str) -> bool:
    return bool(answer.strip()) and len(answer.split()) <= MAX_ANSWER_WORDS


def as_question(text: str) -> str:
    """nq_open questions are lower-case without a question mark: 'who wrote x' → 'Who wrote x?'."""
    text = text.strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith("?") else "?")


def snake_case(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _add(
    rows: FactRows,
    fact_id: str,
    relation: str,
    subject: str,
    question: str,
    answers: list[str],
    kind: str | None = None,
):
    """First answer is canonical (numbers get thousands separators), the rest aliases, each also without its accents
    or a leading article: "United States" answers "the United States", "Beyonce" answers "Beyoncé"."""
    answer, number_aliases = canonical_number(answers[0])
    kind = kind or infer_answer_type(answer)
    spellings = [*number_aliases, *answers]
    spellings += [other for text in spellings for other in folded_aliases(text) + _unarticled(text)]
    rows.add(fact_id, relation, subject, question, answer, spellings, kind)


def _unarticled(text: str) -> list[str]:
    bare = _ARTICLE.sub("", text)
    return [bare] if bare and bare != text else []


def nq_open(path: str | None, limit: int, split: str = "train") -> pl.DataFrame:
    """nq_open rows: question (str), answer (list[str]); the first short answer is canonical."""
    rows = FactRows("nq_open")
    for row in _rows("nq_open", path or NQ_OPEN, split, limit, {"question", "answer"}):
        answers = [a.strip() for a in row["answer"] if is_short(a)]
        if answers:
            question = as_question(row["question"])
            digest = hashlib.blake2b(row["question"].strip().lower().encode(), digest_size=8).hexdigest()
            _add(rows, f"nq_open:{digest}", "open", question, question, answers)
    return rows.frame()


def popqa(path: str | None, limit: int, split: str = "test") -> pl.DataFrame:
    """PopQA rows: id, subj, prop, obj, question, and JSON-encoded possible_answers / o_aliases."""
    rows = FactRows("popqa")
    for row in _rows("popqa", path or POPQA, split, limit, POPQA_COLUMNS):
        obj = str(row["obj"]).strip()
        answers = [obj, *_json_list(row["possible_answers"]), *_json_list(row["o_aliases"])]
        answers = [a.strip() for a in answers if isinstance(a, str)]
        if is_short(obj):
            relation = snake_case(row["prop"])
            _add(
                rows,
                f"popqa:{row['id']}",
                relation,
                str(row["subj"]),
                row["question"],
                answers,
                POPQA_TYPES.get(relation),
            )
    return rows.frame()


def faitheval(path: str | None, limit: int, split: str = "test") -> pl.DataFrame:
    """FaithEval counterfactual rows: id, question, context, choices{label, text}, answerKey, "num of options".

    The keyed answer is the one its own context supports (the benchmark's counterfactual), kept as given.
    """
    rows = FactRows("faitheval")
    for row in _rows("faitheval", path or FAITHEVAL, split, limit, {"id", "question", "choices", "answerKey"}):
        labels, texts = row["choices"]["label"], row["choices"]["text"]
        if row["answerKey"] not in labels or _NEEDS_OPTIONS.match(row["question"].strip()):
            continue
        answer = texts[labels.index(row["answerKey"])].strip()
        if is_short(answer):
            question = as_question(row["question"])
            _add(rows, f"faitheval:{row['id']}", "open", question, question, [answer])
    return rows.frame()


LOADERS: dict[str, Callable[[str | None, int], pl.DataFrame]] = {
    "nq_open": nq_open,
    "popqa": popqa,
    "faitheval": faitheval,
}

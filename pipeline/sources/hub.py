"""Real QA sets through `datasets.load_dataset`: Natural Questions (nq_open), PopQA, FaithEval counterfactual.

Each loader takes the dataset path (the Hub id by default, or a local folder with the same files) and the commit
to read it at (`locate`: a tag or branch resolves to its commit, which the facts table records, so a build can be
pinned and repeated), and keeps only short answers (at most five words), with their aliases. Off by default: the
build machines reach package registries only.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

import polars as pl

from pipeline.schema import OPEN
from pipeline.sources.common import FactRows, canonical_number, infer_answer_type

MAX_ANSWER_WORDS = 5
# Full ids: the legacy `nq_open` is a redirect, and a bare name would also be a folder of the working directory.
NQ_OPEN, POPQA, FAITHEVAL = (
    "google-research-datasets/nq_open",
    "akariasai/PopQA",
    "Salesforce/FaithEval-counterfactual-v1.0",
)
DEFAULT_PATHS = {"nq_open": NQ_OPEN, "popqa": POPQA, "faitheval": FAITHEVAL}
_COMMIT = re.compile(r"[0-9a-f]{40}")
# PopQA relations whose objects are people or places; the others are inferred from the answer text.
POPQA_TYPES = {
    **dict.fromkeys(("father", "mother", "director", "producer", "screenwriter", "composer", "author"), "person"),
    **dict.fromkeys(("place_of_birth", "country", "capital", "capital_of"), "place"),
}
POPQA_COLUMNS = {"id", "subj", "prop", "obj", "question", "possible_answers", "o_aliases"}
# "the United States" also answers as "United States"; not "a"/"an", which open names too ("An Giang", "A Yun Pa")
_ARTICLE = re.compile(r"^the\s+", re.IGNORECASE)
# FaithEval questions that only make sense next to their answer options ("Which of these is a mammal?").
_NEEDS_OPTIONS = re.compile(
    r"\bthe (following|options|choices)\b|\b(listed|shown) below\b"
    r"|^(which|what)( one| two| three)? of (these|those)\b",
    re.IGNORECASE,
)


class HubSourceError(RuntimeError):
    """A Hub source could not be read, or does not have the columns its loader reads."""


class Location(NamedTuple):
    """Where a Hub source is read: its path (a Hub dataset id or a local folder) and, on the Hub, the commit."""

    path: str
    commit: str | None


def _unreadable(source: str, path: str, err: Exception) -> HubSourceError:
    return HubSourceError(
        f"facts.sources: {source} could not be read from {path!r} ({type(err).__name__}: {err}); it needs the "
        "Hugging Face Hub or a local copy of the dataset: remove it from facts.sources to build offline"
    )


def locate(source: str, path: str | None, revision: str | None) -> Location:
    """The repo and commit `revision` (a tag, branch or commit; None: the default branch) of the source's Hub dataset
    names now: the repo by its full id (a legacy id such as `nq_open` is a redirect), a full commit sha as given, so
    a pinned build also reads from the cache offline. `path` (a Hub id, or a local folder, which has no revision: one
    given for it is refused) replaces the source's default id, which is never taken for a folder."""
    if path is not None and Path(path).is_dir():
        if revision is not None:
            raise HubSourceError(
                f"facts.hub_revisions.{source}: {revision!r} names a Hub revision, but {source} is read from the "
                f"local folder {path!r}"
            )
        return Location(path, None)
    path = path or DEFAULT_PATHS[source]
    if revision is not None and _COMMIT.fullmatch(revision):
        return Location(path, revision)
    # Imported here, as `datasets` is: the default build reads no Hub source.
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HFValidationError, HTTPError, RevisionNotFoundError

    try:
        info = HfApi().dataset_info(path, revision=revision)
    except RevisionNotFoundError:
        raise HubSourceError(
            f"facts.hub_revisions.{source}: {path!r} has no revision {revision!r}; name one of its tags, branches "
            "or commits"
        ) from None
    except (HTTPError, HFValidationError, OSError) as err:
        raise _unreadable(source, path, err) from err
    return Location(info.id, info.sha)


def _rows(source: str, where: Location, split: str, limit: int, columns: set[str]) -> Iterable[dict]:
    """The first `limit` rows of `split`. A Hub source is fetched at its commit (`snapshot_download`, whose cache
    is kept per commit) and read from there: `load_dataset(repo, revision=...)` offline reads whichever version it
    cached last, whatever the commit, while the facts would record the pinned one."""
    # Imported here: `datasets` takes over a second to import and the default build never needs it.
    from datasets import load_dataset
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HTTPError  # the transport's errors are no OSError

    try:
        path = where.path
        if where.commit is not None:
            path = snapshot_download(where.path, repo_type="dataset", revision=where.commit)
        rows = load_dataset(path, split=f"{split}[:{limit}]")
    except (HTTPError, OSError, ValueError) as err:
        raise _unreadable(source, where.path, err) from err
    missing = columns - set(rows.column_names)
    if missing:
        raise HubSourceError(
            f"{source} at {where.path!r} lacks the columns {sorted(missing)}; it has {rows.column_names}"
        )
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
    distractors: Sequence[str] = (),
):
    """First answer is canonical (numbers get thousands separators), the rest aliases, each also without a leading
    "the" ("United States" answers "the United States"; `FactRows` adds each without its accents)."""
    answer, number_aliases = canonical_number(answers[0])
    kind = kind or infer_answer_type(answer)
    spellings = [*number_aliases, *answers]
    spellings += [other for text in spellings for other in _unarticled(text)]
    rows.add(fact_id, relation, subject, question, answer, spellings, kind, distractors)


def _unarticled(text: str) -> list[str]:
    bare = _ARTICLE.sub("", text)
    return [bare] if bare and bare != text else []


def nq_open(where: Location, limit: int, split: str = "train") -> pl.DataFrame:
    """nq_open rows: question (str), answer (list[str]); the first short answer is canonical."""
    rows = FactRows("nq_open")
    for row in _rows("nq_open", where, split, limit, {"question", "answer"}):
        answers = [a.strip() for a in row["answer"] if is_short(a)]
        if answers:
            question = as_question(row["question"])
            digest = hashlib.blake2b(row["question"].strip().lower().encode(), digest_size=8).hexdigest()
            _add(rows, f"nq_open:{digest}", OPEN, question, question, answers)
    return rows.frame()


def popqa(where: Location, limit: int, split: str = "test") -> pl.DataFrame:
    """PopQA rows: id, subj, prop, obj, question, and JSON-encoded possible_answers / o_aliases."""
    rows = FactRows("popqa")
    for row in _rows("popqa", where, split, limit, POPQA_COLUMNS):
        if not isinstance(row["subj"], str) or not isinstance(row["obj"], str):
            continue  # the TSV reader takes a cell "NaN", "N/A" or "null" for a missing value: not a name to write
        obj, subject = row["obj"].strip(), row["subj"].strip()
        answers = [obj, *_json_list(row["possible_answers"]), *_json_list(row["o_aliases"])]
        answers = [a.strip() for a in answers if isinstance(a, str)]
        if is_short(obj) and subject:
            relation = snake_case(row["prop"])
            _add(
                rows,
                f"popqa:{row['id']}",
                relation,
                subject,
                row["question"],
                answers,
                POPQA_TYPES.get(relation),
            )
    return rows.frame()


def faitheval(where: Location, limit: int, split: str = "test") -> pl.DataFrame:
    """FaithEval counterfactual rows: id, question, context, choices{label, text}, answerKey, "num of options".

    The keyed answer is the one its own context supports (the benchmark's counterfactual), kept as given. Only
    questions are kept: not completion stems, nor questions that need their options to be read.
    """
    rows = FactRows("faitheval")
    for row in _rows("faitheval", where, split, limit, {"id", "question", "choices", "answerKey"}):
        labels, texts = row["choices"]["label"], row["choices"]["text"]
        stem = row["question"].strip()
        if row["answerKey"] not in labels or _NEEDS_OPTIONS.search(stem) or not stem.endswith("?"):
            continue  # a completion stem ("..., the switch can") is no question
        answer = texts[labels.index(row["answerKey"])].strip()
        if is_short(answer):
            question = as_question(row["question"])
            others = [text.strip() for text in texts if text.strip() != answer and is_short(text)]
            _add(rows, f"faitheval:{row['id']}", OPEN, question, question, [answer], distractors=others)
    return rows.frame()


LOADERS: dict[str, Callable[[Location, int], pl.DataFrame]] = {
    "nq_open": nq_open,
    "popqa": popqa,
    "faitheval": faitheval,
}

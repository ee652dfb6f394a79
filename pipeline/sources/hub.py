"""Real QA sets through `datasets.load_dataset`: Natural Questions (nq_open), PopQA, FaithEval counterfactual.

Each loader takes the dataset path (the Hub id by default, or a local folder with the same files) and the commit
to read it at (`locate`: a tag or branch resolves to its commit, which the facts table records, so a build can be
pinned and repeated), and keeps only short answers (at most five words), with their aliases. A row whose cell is
not what its loader reads (null, not text, PopQA's lists not JSON) is left out and counted, naming the first such row:
a handful of bad rows in a real dataset leave the rest usable; a source none of whose rows can be read fails the stage.
(PopQA's subjects and objects that its TSV reader takes for missing values, "N/A" or "NaN", are no fact, not a bad
row: left out uncounted.)
Off by default: the build machines reach package registries only.
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
from pipeline.sources.common import FactRows, asks_count, canonical_number, has_word, infer_answer_type

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


class Malformed(NamedTuple):
    """Rows a loader left out because a cell is not what it reads: how many, of how many read, and the first
    ("test row 1 (id 1581540): possible_answers is not a JSON list: ...", its row counted from 0 in its split)."""

    skipped: int
    read: int
    first: str


class HubFacts(NamedTuple):
    """A Hub source's facts, and its malformed rows (None when there were none)."""

    facts: pl.DataFrame
    malformed: Malformed | None


class _BadCell(ValueError):
    """A cell that is not what its loader reads: the message names the column and what the cell holds."""


class Location(NamedTuple):
    """Where a Hub source is read: its path (a Hub dataset id or a local folder) and, on the Hub, the commit."""

    path: str
    commit: str | None


def _unreadable(source: str, path: str, err: Exception, folder: bool = False) -> HubSourceError:
    """`folder`: the path is a local folder, which facts.hub_paths named: the key to mend."""
    problem = f"{source} could not be read from {path!r} ({type(err).__name__}: {err})"
    if folder:
        return HubSourceError(f"facts.hub_paths.{source}: {problem}; name a folder holding a copy of its files")
    return HubSourceError(
        f"facts.sources: {problem}; it needs the Hugging Face Hub or a local copy of the dataset: remove it from "
        "facts.sources to build offline"
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
    # Imported here, as `datasets` is: the default build reads no Hub source.
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HFValidationError, HTTPError, RevisionNotFoundError
    from huggingface_hub.utils import validate_repo_id

    if path is None:
        path = DEFAULT_PATHS[source]
    else:
        try:
            validate_repo_id(path)
        except HFValidationError:  # a mistyped folder: "could not be read from the Hub, build offline" misled
            raise HubSourceError(f"facts.hub_paths.{source}: {path!r} is no folder, and no Hub dataset id") from None
    if revision is not None and _COMMIT.fullmatch(revision):
        return Location(path, revision)

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
        raise _unreadable(source, where.path, err, folder=where.commit is None) from err
    missing = columns - set(rows.column_names)
    if missing:
        raise HubSourceError(
            f"{source} at {where.path!r} lacks the columns {sorted(missing)}; it has {rows.column_names}"
        )
    return rows


def _read(
    source: str, where: Location, split: str, limit: int, columns: set[str], add: Callable[[FactRows, dict], None]
) -> HubFacts:
    """`add` each of the first `limit` rows of `split`; a row with a bad cell is left out and counted. A source whose
    every row read is bad is not the dataset its loader reads (another schema): that is a HubSourceError."""
    rows, skipped, read, first = FactRows(source), 0, 0, ""
    for read, row in enumerate(_rows(source, where, split, limit, columns), start=1):
        try:
            add(rows, row)
        except _BadCell as err:
            skipped += 1
            first = first or f"{split} row {read - 1}{_row_id(row)}: {err}"
    if read and skipped == read:
        raise HubSourceError(
            f"{source} at {where.path!r}: none of the {read} rows read is what its loader reads (first: {first}); "
            f"name a copy of {DEFAULT_PATHS[source]} in facts.hub_paths, or remove {source} from facts.sources"
        )
    facts, reused = _one_question_per_id(rows.frame())
    skipped += len(reused)
    first = first or (f"{split}: {reused['fact_id'][0]} is the id of another question too" if len(reused) else "")
    return HubFacts(facts, Malformed(skipped, read, first) if skipped else None)


def _one_question_per_id(facts: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The facts whose question is the first of their fact_id, and the rest: a row reusing another question's id
    would merge two facts for whoever groups by it (the same question twice is for `facts.deduplicate`)."""
    first = pl.col("question") == pl.col("question").first().over("fact_id")
    return facts.filter(first), facts.filter(~first)


def _row_id(row: dict) -> str:
    return f" (id {_shown(row['id'])})" if row.get("id") is not None else ""


def _shown(value: object) -> str:
    """A cell as its repr, cut short: a bad cell may hold anything."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _text(value: object, column: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _BadCell(f"{column} is not text: {_shown(value)}")
    return value


def _texts(value: object, column: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _BadCell(f"{column} is not a list of texts: {_shown(value)}")
    return value


def _key(value: object, column: str) -> int | str:
    """An id: text, or a whole number (an empty cell makes the TSV reader read the column as floats: 4222362.0)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).strip():
        raise _BadCell(f"{column} is no id: {_shown(value)}")
    return value


def _json_list(value: object, column: str) -> list:
    """PopQA stores lists as JSON strings; an empty cell reads back as a missing value."""
    if value is None or isinstance(value, str) and not value.strip():
        return []
    try:
        decoded = json.loads(value) if isinstance(value, str) else None
    except (ValueError, RecursionError):  # RecursionError: brackets nested beyond what the parser follows
        decoded = None
    if not isinstance(decoded, list):
        raise _BadCell(f"{column} is not a JSON list: {_shown(value)}")
    return decoded


def is_short(answer: str) -> bool:
    """An answer of at most MAX_ANSWER_WORDS words, one at least (punctuation alone, "?", is none)."""
    return has_word(answer) and len(answer.split()) <= MAX_ANSWER_WORDS


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
    answer, number_aliases = canonical_number(answers[0], asks_count(question))
    kind = kind or infer_answer_type(answer)
    spellings = [*number_aliases, *answers]
    spellings += [other for text in spellings for other in _unarticled(text)]
    rows.add(fact_id, relation, subject, question, answer, spellings, kind, distractors)


def _unarticled(text: str) -> list[str]:
    bare = _ARTICLE.sub("", text)
    return [bare] if bare and bare != text else []


def nq_open(where: Location, limit: int, split: str = "train") -> HubFacts:
    """nq_open rows: question (str), answer (list[str]); the first short answer is canonical."""
    return _read("nq_open", where, split, limit, {"question", "answer"}, _nq_open_fact)


def _nq_open_fact(rows: FactRows, row: dict) -> None:
    text = _text(row["question"], "question")
    answers = [a.strip() for a in _texts(row["answer"], "answer") if is_short(a)]
    if answers:
        question = as_question(text)
        digest = hashlib.blake2b(text.strip().lower().encode(), digest_size=8).hexdigest()
        _add(rows, f"nq_open:{digest}", OPEN, question, question, answers)


def popqa(where: Location, limit: int, split: str = "test") -> HubFacts:
    """PopQA rows: id, subj, prop, obj, question, and JSON-encoded possible_answers / o_aliases."""
    return _read("popqa", where, split, limit, POPQA_COLUMNS, _popqa_fact)


def _popqa_fact(rows: FactRows, row: dict) -> None:
    if not isinstance(row["subj"], str) or not isinstance(row["obj"], str):
        return  # the TSV reader takes a cell "NaN", "N/A" or "null" for a missing value: not a name to write
    obj, subject = row["obj"].strip(), row["subj"].strip()
    id_, relation = _key(row["id"], "id"), snake_case(_text(row["prop"], "prop"))
    question = as_question(_text(row["question"], "question"))
    listed = [item for column in ("possible_answers", "o_aliases") for item in _json_list(row[column], column)]
    answers = [a.strip() for a in [obj, *listed] if isinstance(a, str)]
    if is_short(obj) and subject:
        _add(rows, f"popqa:{id_}", relation, subject, question, answers, POPQA_TYPES.get(relation))


def faitheval(where: Location, limit: int, split: str = "test") -> HubFacts:
    """FaithEval counterfactual rows: id, question, context, choices{label, text}, answerKey, "num of options".

    The keyed answer is the one its own context supports (the benchmark's counterfactual), kept as given. Only
    questions are kept: not completion stems, nor questions that need their options to be read.
    """
    return _read("faitheval", where, split, limit, {"id", "question", "choices", "answerKey"}, _faitheval_fact)


def _faitheval_fact(rows: FactRows, row: dict) -> None:
    labels, texts = _choices(row["choices"])
    id_, key, stem = _key(row["id"], "id"), _text(row["answerKey"], "answerKey"), _text(row["question"], "question")
    stem = stem.strip()
    if key not in labels or _NEEDS_OPTIONS.search(stem) or not stem.endswith("?"):
        return  # a completion stem ("..., the switch can") is no question
    answer = texts[labels.index(key)].strip()
    if is_short(answer):
        question = as_question(stem)
        others = [text.strip() for text in texts if text.strip() != answer and is_short(text)]
        _add(rows, f"faitheval:{id_}", OPEN, question, question, [answer], distractors=others)


def _choices(value: object) -> tuple[list[str], list[str]]:
    """FaithEval's options: as many labels as texts."""
    if not isinstance(value, dict):
        raise _BadCell(f"choices is not a mapping of label and text: {_shown(value)}")
    labels, texts = _texts(value.get("label"), "choices.label"), _texts(value.get("text"), "choices.text")
    if len(labels) != len(texts):
        raise _BadCell(f"choices has {len(labels)} labels for {len(texts)} texts")
    return labels, texts


LOADERS: dict[str, Callable[[Location, int], HubFacts]] = {
    "nq_open": nq_open,
    "popqa": popqa,
    "faitheval": faitheval,
}

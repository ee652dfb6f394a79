"""No shortcut in the data: can one document, read alone, tell whether it is corrupt?

Each cue turns a single document (or the value it asserts) into features; a model (logistic regression, boosted
trees for the combined layout) learns "corrupt or clean" from one set of episodes and is scored by ROC AUC on
another set with other facts: over all documents, per corruption kind (that kind's documents against the clean
documents of the same episodes), per answer type, and per kind within an answer type. Nothing is cross-referenced
between documents, so an AUC well above 0.5 is a tell an agent could learn instead of weighing sources. Anything
above `AUC_LIMIT` is a defect in the generator; the report names the cue, the group, its strongest features and
the documents that show it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, Field
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import KBinsDiscretizer, OneHotEncoder

from pipeline import documents
from pipeline.schema import ANSWER_TYPES, CORRUPTION_LEVELS
from pipeline.validate import read_manifest

AUC_LIMIT = 0.6
MIN_GROUP = 100  # corrupt and clean documents a group needs before its AUC is judged
_WORD = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"])")
_COLUMNS = ["episode_id", "answer_type", "documents", "doc_corruption", "doc_claims"]


def read_split(root: Path, split: str, limit: int | None = None) -> pa.Table:
    """The first `limit` episodes (all when None) of `split` in the dataset folder `root`."""
    shards = [s for s in read_manifest(root).shards if s.split == split]
    if not shards:
        raise ValueError(f"{root} has no shard of split {split!r}")
    tables, rows = [], 0
    for shard in shards:
        tables.append(pq.read_table(Path(root) / shard.path, columns=_COLUMNS))
        rows += tables[-1].num_rows
        if limit is not None and rows >= limit:
            break
    table = pa.concat_tables(tables)
    return table if limit is None else table.slice(0, limit)


def document_frame(episodes: pa.Table) -> pl.DataFrame:
    """One row per document: episode_id, answer_type, doc_id, title, content, kind, claim, corrupt.

    The answer type is a hidden column, but every document is read beside its question, which tells it."""
    return (
        pl.from_arrow(episodes.select(_COLUMNS))
        .explode(["documents", "doc_corruption", "doc_claims"])
        .unnest("documents")
        .rename({"doc_corruption": "kind", "doc_claims": "claim"})
        .with_columns(pl.col("claim").fill_null(""), corrupt=pl.col("kind") != "none")
    )


@cache
def _template_words() -> frozenset[str]:
    """Words of the generator's wording tables: what stays in a skeleton, everything else becomes `_`."""
    tables = (documents.GENERIC_CLAUSES, documents.OPEN_CLAUSES, documents.RELATION_CLAUSES, documents.FRAMES)
    tables += (documents.CORROBORATIONS, documents.FILLERS, documents.OPENERS, documents.TITLES, documents.REPORTS)
    words: set[str] = set()
    for text in _strings(tables):
        words.update(w.lower() for w in _WORD.findall(re.sub(r"\{\w+\}", " ", text)) if w.isalpha())
    return frozenset(words)


def _strings(value) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    else:
        for item in value.values() if isinstance(value, dict) else value:
            yield from _strings(item)


def skeleton(text: str) -> str:
    """`text` with every word outside the wording tables (names, values, numbers) collapsed to `_`."""
    words, out = _template_words(), []
    for token in _WORD.findall(text):
        token = token.lower() if token.lower() in words else ("_" if token[0].isalnum() else token)
        if not (token == "_" and out and out[-1] == "_"):
            out.append(token)
    return " ".join(out)


def _sentence_skeletons(content: str) -> list[str]:
    return [skeleton(s) for s in _SENTENCE.split(content)]


def _tokens(items: list[str]) -> list[str]:
    return items


_SOURCE_NAMES = [name for names in documents.SOURCES.values() for name in names]
_CONTRAST = "|".join(re.escape(t.split("{")[0]) for t in documents.FRAMES[documents.CONTRAST])
_CITED = r"\b\d{4} (?:" + "|".join(documents.REPORTS) + ")"


def _layout(d: pl.DataFrame) -> pl.DataFrame:
    """Per document: lengths, position, framing markers, named source and authority, the claim's shape."""
    text, claim = d["title"] + " " + d["content"], d["claim"]
    digits = claim.str.replace_all(r"\D", "")
    return pl.DataFrame(
        {
            "content_chars": d["content"].str.len_chars(),
            "title_chars": d["title"].str.len_chars(),
            "sentences": d["content"].str.count_matches(r"[.!?](?:\s+[A-Z(\"]|$)"),
            "doc_id": d["doc_id"].cast(pl.Int64),
            "contrast": d["content"].str.contains(_CONTRAST).cast(pl.Int64),
            "cited": d["content"].str.contains(_CITED).cast(pl.Int64),
            "source": _index(_SOURCE_NAMES, text),
            "body": _index(documents.BODIES, d["content"]),
            "claim_chars": claim.str.len_chars(),
            "claim_words": claim.str.count_matches(r"\S+"),
            "claim_digits": digits.str.len_chars(),
            "claim_zeros": digits.str.len_chars() - digits.str.strip_chars_end("0").str.len_chars(),
            "claim_decimal": claim.str.contains(r"\d\.\d").cast(pl.Int64),
            "claim_comma": claim.str.contains(",").cast(pl.Int64),
        }
    )


def _index(names: Iterable[str], text: pl.Series) -> pl.Series:
    """1 + the index in `names` of the first name found in each text; 0 when none is."""
    names = list(names)
    pattern = "(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + ")"
    found = text.str.extract(pattern)
    return found.replace_strict(names, range(1, len(names) + 1), default=0, return_dtype=pl.Int64)


def _columns(*names: str) -> Callable[[pl.DataFrame], pl.DataFrame]:
    return lambda d: _layout(d).select(names)


_CATEGORICAL = ("sentences", "doc_id", "contrast", "cited", "source", "body", "claim_decimal", "claim_comma")


def _linear(encoder: Callable[[], object]) -> Callable[[], Pipeline]:
    return lambda: make_pipeline(encoder(), LogisticRegression(max_iter=2000))


def _onehot():
    return OneHotEncoder(handle_unknown="ignore", min_frequency=5)


def _boosted() -> Pipeline:
    return make_pipeline(
        HistGradientBoostingClassifier(categorical_features=list(_CATEGORICAL), early_stopping=True, random_state=0)
    )


@dataclass(frozen=True)
class Cue:
    """One way of reading a document alone: what it extracts (`inputs`) and the model that learns from that."""

    name: str
    description: str
    inputs: Callable[[pl.DataFrame], list | np.ndarray | pl.DataFrame]
    model: Callable[[], Pipeline]


_TFIDF = {"min_df": 3, "sublinear_tf": True}
CUES = (
    Cue(
        "bag_of_words",
        "title and content, word 1-2-grams (TF-IDF)",
        lambda d: (d["title"] + " \n " + d["content"]).to_list(),
        _linear(lambda: TfidfVectorizer(ngram_range=(1, 2), max_features=200_000, **_TFIDF)),
    ),
    Cue(
        "title_words",
        "title alone, word 1-2-grams",
        lambda d: d["title"].to_list(),
        _linear(lambda: TfidfVectorizer(ngram_range=(1, 2), **_TFIDF)),
    ),
    Cue(
        "content_chars",
        "content length in characters (10 quantile bins)",
        _columns("content_chars"),
        _linear(lambda: KBinsDiscretizer(n_bins=10)),
    ),
    Cue(
        "title_chars",
        "title length in characters (10 quantile bins)",
        _columns("title_chars"),
        _linear(lambda: KBinsDiscretizer(n_bins=10)),
    ),
    Cue("sentences", "number of sentences", _columns("sentences"), _linear(_onehot)),
    Cue(
        "source", "source name and cited authority named in the document", _columns("source", "body"), _linear(_onehot)
    ),
    Cue(
        "title_template",
        "title with names and values masked",
        lambda d: np.array([[skeleton(t)] for t in d["title"]]),
        _linear(_onehot),
    ),
    Cue(
        "sentence_templates",
        "bag of sentence skeletons (names and values masked)",
        lambda d: [_sentence_skeletons(c) for c in d["content"]],
        _linear(lambda: CountVectorizer(analyzer=_tokens, min_df=3, binary=True)),
    ),
    Cue("position", "doc_id (0-7)", _columns("doc_id"), _linear(_onehot)),
    Cue(
        "claim_text",
        "the asserted value alone, character 1-4-grams",
        lambda d: d["claim"].to_list(),
        _linear(lambda: TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 4), **_TFIDF)),
    ),
    Cue(
        "claim_shape",
        "the asserted value's length, words, digits, trailing zeros, decimal point, comma",
        _columns("claim_chars", "claim_words", "claim_digits", "claim_zeros", "claim_decimal", "claim_comma"),
        _linear(_onehot),
    ),
    Cue(
        "layout_combined",
        "every length, position, framing, source and claim-shape feature at once, with interactions (boosted trees)",
        _layout,
        _boosted,
    ),
)


class CueResult(BaseModel):
    name: str
    description: str
    auc: float = Field(description="ROC AUC of corrupt vs clean over every evaluated document")
    auc_by_kind: dict[str, float] = Field(description="ROC AUC of one kind's documents vs the clean ones")
    auc_by_answer_type: dict[str, float] = Field(
        description="ROC AUC within one answer type (`year`), and of one kind within it (`year/inversion`)"
    )
    corrupt_features: list[str] = Field(description="Features weighted most towards corrupt, strongest first")
    clean_features: list[str] = Field(description="Features weighted most towards clean, strongest first")
    examples: dict[str, list[str]] = Field(
        description="Per group above the limit (`all` included): distinct inputs of its top-scoring corrupt documents"
    )


class AuditReport(BaseModel):
    limit: float = AUC_LIMIT
    train_documents: int
    eval_documents: int
    eval_by_kind: dict[str, int]
    cues: list[CueResult]

    def defects(self) -> list[tuple[str, str, float]]:
        """(cue, group or "all", AUC) for every AUC above the limit."""
        found = []
        for cue in self.cues:
            for kind, auc in {"all": cue.auc, **cue.auc_by_kind, **cue.auc_by_answer_type}.items():
                if auc > self.limit:
                    found.append((cue.name, kind, auc))
        return found


def _shown(inputs, i: int) -> str:
    """Document `i`'s cue inputs as text."""
    if isinstance(inputs, pl.DataFrame):
        return ", ".join(f"{name}={value}" for name, value in inputs.row(i, named=True).items())
    return " | ".join(map(str, inputs[i])) if isinstance(inputs[i], (list, np.ndarray)) else str(inputs[i])


def _weights(model: Pipeline) -> tuple[np.ndarray, np.ndarray]:
    """Feature names and weights of a linear cue (none for the boosted one)."""
    if not hasattr(model[-1], "coef_"):
        return np.array([], dtype=str), np.array([])
    return model[0].get_feature_names_out(), model[-1].coef_[0]


def _groups(evaluation: pl.DataFrame) -> dict[str, np.ndarray]:
    """Documents of each group: one kind's with the clean documents of the episodes that have that kind (the same
    facts and answer types: a number corruption exists only for numbers); one answer type's; one kind within a type.

    A group is kept when it has `MIN_GROUP` corrupt and clean documents (fewer: too noisy to judge)."""
    corrupt, answer_type = evaluation["corrupt"].to_numpy(), evaluation["answer_type"].to_numpy()
    kind = pl.col("kind")
    with_kind = evaluation.select(
        ((kind == level) | (~pl.col("corrupt") & (kind == level).any().over("episode_id"))).alias(level)
        for level in CORRUPTION_LEVELS
    )
    groups = {level: with_kind[level].to_numpy() for level in CORRUPTION_LEVELS}
    for name in ANSWER_TYPES:
        groups[name] = answer_type == name
        groups.update({f"{name}/{level}": (answer_type == name) & groups[level] for level in CORRUPTION_LEVELS})
    return {
        name: pick
        for name, pick in groups.items()
        if min(np.count_nonzero(corrupt & pick), np.count_nonzero(~corrupt & pick)) >= MIN_GROUP
    }


def run_cue(cue: Cue, train: pl.DataFrame, evaluation: pl.DataFrame, top: int = 5) -> CueResult:
    """Fit `cue` on `train` documents (corrupt vs clean), score it on `evaluation` and each group of it."""
    model = cue.model()
    model.fit(cue.inputs(train), train["corrupt"].to_numpy())
    inputs = cue.inputs(evaluation)
    score, corrupt = model.decision_function(inputs), evaluation["corrupt"].to_numpy()
    groups = {"all": np.ones(len(corrupt), dtype=bool), **_groups(evaluation)}
    auc = {name: round(float(roc_auc_score(corrupt[pick], score[pick])), 4) for name, pick in groups.items()}
    examples = {}
    for name, pick in groups.items():
        if auc[name] > AUC_LIMIT:
            ranked = np.argsort(-np.where(corrupt & pick, score, -np.inf))[: 50 * top].tolist()
            examples[name] = list(dict.fromkeys(_shown(inputs, i) for i in ranked))[:top]
    names, weights = _weights(model)
    order = np.argsort(weights)
    return CueResult(
        name=cue.name,
        description=cue.description,
        auc=auc.pop("all"),
        auc_by_kind={name: value for name, value in auc.items() if name in CORRUPTION_LEVELS},
        auc_by_answer_type={name: value for name, value in auc.items() if name not in CORRUPTION_LEVELS},
        corrupt_features=[f"{names[i]} ({weights[i]:+.2f})" for i in order[::-1][:top]],
        clean_features=[f"{names[i]} ({weights[i]:+.2f})" for i in order[:top]],
        examples=examples,
    )


def audit(train: pa.Table, evaluation: pa.Table, cues: tuple[Cue, ...] = CUES) -> AuditReport:
    """Every cue learned on the episodes `train` and scored on the (disjoint) episodes `evaluation`."""
    fit, held = document_frame(train), document_frame(evaluation)
    if set(fit["episode_id"].to_list()) & set(held["episode_id"].to_list()):
        raise ValueError("train and evaluation episodes overlap: an audit needs disjoint episodes")
    for name, frame in (("train", fit), ("evaluation", held)):
        if frame["corrupt"].all() or not frame["corrupt"].any():
            raise ValueError(f"the {name} episodes need both corrupt and clean documents")
    return AuditReport(
        train_documents=fit.height,
        eval_documents=held.height,
        eval_by_kind=dict(sorted(held["kind"].value_counts().iter_rows())),
        cues=[run_cue(cue, fit, held) for cue in cues],
    )


def markdown(report: AuditReport) -> str:
    """The figures as a markdown table (for the dataset card and the benchmark's output)."""
    lines = [
        "| cue | all | " + " | ".join(CORRUPTION_LEVELS) + " | highest answer-type group |",
        "|---|---:|" + "---:|" * len(CORRUPTION_LEVELS) + "---|",
    ]
    for cue in report.cues:
        kinds = [f"{cue.auc_by_kind[k]:.3f}" if k in cue.auc_by_kind else "–" for k in CORRUPTION_LEVELS]
        worst = max(cue.auc_by_answer_type, key=cue.auc_by_answer_type.get, default=None)
        group = f"{worst} {cue.auc_by_answer_type[worst]:.3f}" if worst else "–"
        lines.append(f"| {cue.name}: {cue.description} | {cue.auc:.3f} | " + " | ".join(kinds) + f" | {group} |")
    return "\n".join(lines)


def card_section(report: AuditReport) -> str:
    """A dataset-card section: what the audit tried and what it found."""
    defects = report.defects()
    verdict = (
        f"No cue exceeds {report.limit} ROC AUC, overall, per corruption kind or per answer type."
        if not defects
        else "Above the limit: " + "; ".join(f"{cue} on {group} ({auc:.3f})" for cue, group, auc in defects) + "."
    )
    return (
        "## Shortcut audit\n\n"
        "Can one document, read alone, be told corrupt or clean? Each cue below is learned (logistic regression, or "
        f"boosted trees for the combined layout) on {report.train_documents:,} train-split documents and scored by "
        f"ROC AUC on {report.eval_documents:,} validation-split documents: over all of them, and for each corruption "
        "kind against the clean documents of the same episodes, and within each answer type (0.5 is chance; the "
        f"limit is {report.limit}). "
        f"{verdict}\n\n{markdown(report)}\n"
    )

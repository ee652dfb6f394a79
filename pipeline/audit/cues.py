"""The cues: each a way of reading one document alone, and the model that learns "corrupt or clean" from it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import KBinsDiscretizer, OneHotEncoder

from pipeline.audit.features import (
    CATEGORICAL,
    layout,
    number_pair,
    relative_layout,
    sentence_skeletons,
    skeleton,
    value_gap,
)


@dataclass(frozen=True)
class Cue:
    """One way of reading a document alone: what it extracts (`inputs`) and the model that learns from that."""

    name: str
    description: str
    inputs: Callable[[pl.DataFrame], list | np.ndarray | pl.DataFrame]
    model: Callable[[], Pipeline]


def _columns(*names: str) -> Callable[[pl.DataFrame], pl.DataFrame]:
    return lambda d: layout(d).select(names)


def _tokens(items: list[str]) -> list[str]:
    return items


def _linear(encoder: Callable[[], object]) -> Callable[[], Pipeline]:
    return lambda: make_pipeline(encoder(), LogisticRegression(max_iter=2000))


def _onehot():
    return OneHotEncoder(handle_unknown="ignore", min_frequency=5)


def _bins():
    return KBinsDiscretizer(n_bins=10)


def _boosted() -> Pipeline:
    return make_pipeline(
        HistGradientBoostingClassifier(categorical_features=list(CATEGORICAL), early_stopping=True, random_state=0)
    )


_TFIDF = {"min_df": 3, "sublinear_tf": True}
CUES = (
    Cue(
        "answer_type",
        "baseline: the answer type alone, which the question tells (what a kind's mix of answer types gives any cue)",
        lambda d: d.select("answer_type"),
        _linear(_onehot),
    ),
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
    Cue("content_chars", "content length in characters (10 quantile bins)", _columns("content_chars"), _linear(_bins)),
    Cue("title_chars", "title length in characters (10 quantile bins)", _columns("title_chars"), _linear(_bins)),
    Cue("sentences", "number of sentences", _columns("sentences"), _linear(_onehot)),
    Cue(
        "source",
        "source name and cited authority named in the document",
        _columns("source", "body"),
        _linear(_onehot),
    ),
    Cue(
        "framing",
        "which claim sentence and how many corroborating sentences",
        _columns("frame", "corroborations"),
        _linear(_onehot),
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
        lambda d: [sentence_skeletons(c) for c in d["content"]],
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
        "value_gap",
        "the gap between the asserted number and the one the document denies, absolute, relative, and relative where "
        "the denied one is larger (log2 bins)",
        lambda d: pl.DataFrame(value_gap(d)),
        _linear(_onehot),
    ),
    Cue(
        "number_pair",
        "the asserted and the denied number: sizes, significant figures, decimals, with the cited year and the "
        "answer type (boosted trees)",
        number_pair,
        lambda: make_pipeline(
            HistGradientBoostingClassifier(categorical_features=["answer_type"], early_stopping=True, random_state=0)
        ),
    ),
    Cue(
        "layout_combined",
        "every length, position, template, source and claim-shape feature at once, with interactions (boosted trees)",
        layout,
        _boosted,
    ),
    Cue(
        "layout_relative",
        "the layout beside the episode's other documents, values left out: lengths, sentence and corroboration "
        "counts and the cited year as z-scores within the episode, and how many of the other seven share its claim "
        "template, title template, source and authority (boosted trees)",
        relative_layout,
        lambda: make_pipeline(HistGradientBoostingClassifier(early_stopping=True, random_state=0)),
    ),
)

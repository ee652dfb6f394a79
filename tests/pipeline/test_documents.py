import re

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from pipeline import documents
from pipeline.episodes import generate_episodes
from pipeline.pools import build_pools
from pipeline.schema import CORRUPTION_LEVELS

SEED = 99


@pytest.fixture(scope="module")
def docs(facts_dir) -> pl.DataFrame:
    """One row per document of 4,000 episodes: episode_id, answer_type, title, content, claim, corrupt."""
    table = generate_episodes(
        pq.read_table(facts_dir / "facts.parquet"), build_pools(SEED), SEED, "train", np.arange(4000)
    )
    return (
        pl.from_arrow(table)
        .select("episode_id", "answer_type", "documents", "doc_corruption", "doc_claims")
        .explode(["documents", "doc_corruption", "doc_claims"])
        .unnest("documents")
        .rename({"doc_claims": "claim"})
        .with_columns(corrupt=pl.col("doc_corruption") != "none")
    )


def _auc(score: np.ndarray, positive: np.ndarray) -> float:
    ranks = pl.Series(score).rank("average").to_numpy()
    n_pos, n_neg = positive.sum(), (~positive).sum()
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def test_every_claim_sentence_cites_an_authority_and_denies_a_value():
    """Clean documents and every corruption kind draw from the same claim sentences: neither an authority nor a
    denial marks a document as coherent or inverted."""
    for frame in documents.FRAMES:
        assert re.search(r"\{c\}|\{C\}", frame) and re.search(r"\{cd\}|\{Cd\}", frame)
        assert all("{" + slot + "}" in frame for slot in ("body", "year", "report"))


def test_kinds_share_sources_authorities_and_lengths(docs):
    """Per kind, the named authority, the claim sentence and the length follow the clean documents' distribution."""
    bodies = "(" + "|".join(re.escape(body) for body in documents.BODIES) + ")"
    frames = docs.with_columns(
        body=pl.col("content").str.extract(bodies),
        sentences=pl.col("content").str.count_matches(r"[.;]( |$)"),
        chars=pl.col("content").str.len_chars(),
    )
    assert frames["body"].null_count() == 0
    clean = frames.filter(~pl.col("corrupt"))
    for kind in CORRUPTION_LEVELS:
        some = frames.filter(pl.col("doc_corruption") == kind)
        for column in ("body", "sentences"):
            rates = [part[column].value_counts(normalize=True).sort(column) for part in (clean, some)]
            joined = rates[0].join(rates[1], on=column, how="full", coalesce=True).fill_null(0)
            assert (joined["proportion"] - joined["proportion_right"]).abs().sum() / 2 < 0.08, (kind, column)
        assert abs(some["chars"].mean() / clean["chars"].mean() - 1) < 0.05, kind


def test_documents_are_well_formed(docs):
    for text in docs["content"].to_list() + docs["title"].to_list():
        assert text and text == text.strip() and "  " not in text and "{" not in text
    contents = docs["content"].to_list()
    wording = [*documents.GENERIC_CLAUSES, *documents.OPEN_CLAUSES, *documents.CORROBORATIONS]
    wording += [t for family in documents.RELATION_CLAUSES.values() for t in family] + list(documents.FRAMES)
    first_words = {t.split()[0] for t in wording if t[0].islower()}
    assert not [t for t in contents if t.split()[0] in first_words]  # every sentence opening is capitalised
    assert all(t.endswith((".", ")")) for t in contents)
    assert docs["content"].n_unique() > 0.95 * len(docs)
    assert docs["title"].n_unique() > 1000


def test_no_single_document_cue_tells_corrupt_from_clean(docs):
    """Length, title length and a bag-of-words model (naive Bayes, held-out episodes) stay near chance."""
    corrupt = docs["corrupt"].to_numpy()
    assert 0.45 < _auc(docs["content"].str.len_chars().to_numpy(), corrupt) < 0.55
    assert 0.45 < _auc(docs["title"].str.len_chars().to_numpy(), corrupt) < 0.55
    tokens = (docs["title"] + " " + docs["content"]).str.to_lowercase().str.extract_all(r"[a-z0-9]+").list.unique()
    doc = np.repeat(np.arange(len(tokens)), tokens.list.len().to_numpy())
    vocab, token = np.unique(tokens.explode().to_numpy().astype(str), return_inverse=True)
    train = docs["episode_id"].to_numpy() % 4 != 0
    seen_corrupt = np.bincount(token, weights=(train & corrupt)[doc], minlength=len(vocab)) + 1
    seen_clean = np.bincount(token, weights=(train & ~corrupt)[doc], minlength=len(vocab)) + 1
    p_corrupt, p_clean = seen_corrupt / ((train & corrupt).sum() + 2), seen_clean / ((train & ~corrupt).sum() + 2)
    weight = np.log(p_corrupt / p_clean) - np.log((1 - p_corrupt) / (1 - p_clean))
    score = np.bincount(doc, weights=weight[token], minlength=len(tokens))
    assert _auc(score[~train], corrupt[~train]) < 0.6


def test_denied_and_asserted_years_are_no_corruption_cue(docs):
    """Inversions deny the true year and assert another drawn like true answers; clean documents deny a year too.

    Neither the gap between the two years nor a digit swap (once a tell: 1987 denied, 1978 asserted) marks a
    document as corrupt.
    """
    cited = r"\b\d{4} (?:" + "|".join(documents.REPORTS) + r")\b|consistently since \d{4}"
    year = docs.filter(pl.col("answer_type") == "year").with_columns(
        years=pl.col("content").str.replace_all(cited, "").str.extract_all(r"\b\d{4}\b").list.unique()
    )
    pairs = [
        sorted(p, key=lambda y: y == c) for p, c in zip(year["years"].to_list(), year["claim"].to_list(), strict=True)
    ]
    assert all(len(p) == 2 and p[1] == c for p, c in zip(pairs, year["claim"], strict=True))  # denied, asserted
    gap = np.array([abs(int(denied) - int(asserted)) for denied, asserted in pairs])
    swapped = np.array([a != b and sorted(a) == sorted(b) for a, b in pairs])
    corrupt = year["corrupt"].to_numpy()
    assert min(corrupt.sum(), (~corrupt).sum()) > 50
    assert 0.4 < _auc(gap, corrupt) < 0.6
    assert swapped[corrupt].mean() < 0.1 and swapped[~corrupt].mean() < 0.1


def test_wording_tables_fit_the_renderer():
    for family in documents.FILLERS.values():
        assert len(family) in (5, 7, 11, 13)  # prime: start + j * step visits distinct sentences
    assert len(documents.CORROBORATIONS) in (5, 7, 11, 13)
    assert all(len(titles) >= 4 for titles in documents.TITLES.values())
    assert set(documents.TITLES) == {*documents.SOURCES, "question"}
    assert all(documents.FRAMES)


def test_topics_name_families_and_labels():
    relation = pl.Series(["capital", "place_of_birth", "open", "symbol_element"])
    family, domain, label = documents.topics(relation, np.array([False, False, False, True]))
    assert family[2] == family[3] == documents.OPEN_FAMILY and family[0] != family[1] != documents.OPEN_FAMILY
    assert label.to_list() == ["capital", "place of birth", "answer", "element"]
    assert domain[2] == domain[3] == list(documents.FILLERS).index("question")

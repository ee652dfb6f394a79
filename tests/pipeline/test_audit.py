import subprocess
import sys

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.audit import (
    AUC_LIMIT,
    CUES,
    MIN_FACTS,
    audit,
    card_section,
    document_frame,
    judged,
    markdown,
    read_split,
    separation,
    skeleton,
)
from pipeline.episodes import generate_episodes
from pipeline.pools import build_pools
from pipeline.schema import CORRUPTION_LEVELS

SEED = 7
# Per side: 25,600 documents each, ~800 coherent ones to evaluate. At 800 a group as small as the text answers (a few
# dozen facts, each repeated by its clean documents) reached 0.58-0.61 by chance under other seeds; at 1600, 0.56-0.58,
# and the value gap of quantities' coherent documents 0.61 once four cities left the small world's facts (0.52 over
# the default build's 160,000 documents, `benchmarks/audit.py`).
EPISODES = 3200


@pytest.fixture(scope="module")
def episodes(facts_dir) -> tuple[pa.Table, pa.Table]:
    """Train-split episodes to learn from and validation-split episodes (other facts, other ids) to score."""
    facts, pools = pq.read_table(facts_dir / "facts.parquet"), build_pools(SEED)
    train = generate_episodes(facts, pools, SEED, "train", np.arange(EPISODES))
    evaluation = generate_episodes(facts, pools, SEED, "validation", np.arange(EPISODES, 2 * EPISODES))
    return train, evaluation


def test_no_single_document_cue_separates_corrupt_from_clean_documents(episodes):
    """Every cue stays under the limit in every group with enough documents: overall, per kind, per answer type."""
    report = audit(*episodes)
    assert [cue.name for cue in report.cues] == [cue.name for cue in CUES]
    assert set(report.eval_by_kind) == {"none", *CORRUPTION_LEVELS}
    for cue in report.cues:
        assert set(cue.auc_by_kind) == set(CORRUPTION_LEVELS) and {"place", "quantity"} <= set(cue.auc_by_answer_type)
        assert set(cue.corrupt_features) == {"all", *CORRUPTION_LEVELS}
    assert report.defects() == [], markdown(report)


def test_separation_counts_either_direction():
    assert separation(0.38) == separation(0.62) == 0.62 and separation(0.5) == 0.5


_CORRUPT = pl.col("doc_corruption") != "none"


def _planted(table: pa.Table, tell: str, where: pl.Expr = _CORRUPT) -> pa.Table:
    """`table` with `tell` appended to the content of every document `where` selects (by default: the corrupt ones).

    `where` sees each document's doc_id, doc_corruption, answer_type and coherent_episode (its episode has one)."""
    rows = pl.from_arrow(table).with_row_index("row")
    docs = (
        rows.select("row", "answer_type", "documents", "doc_corruption")
        .explode(["documents", "doc_corruption"])
        .unnest("documents")
        .with_columns(coherent_episode=(pl.col("doc_corruption") == "coherent").any().over("row"))
    )
    docs = docs.with_columns(content=pl.when(where).then(pl.col("content") + tell).otherwise(pl.col("content")))
    nested = docs.group_by("row", maintain_order=True).agg(documents=pl.struct("doc_id", "title", "content"))
    return rows.drop("documents").join(nested, on="row").drop("row").select(table.column_names).to_arrow()


def _bag(*names: str) -> tuple:
    """The bag-of-words cue and the cues `names`."""
    return tuple(cue for cue in CUES if cue.name in ("bag_of_words", *names))


def test_a_planted_tell_is_reported_with_examples(episodes):
    train, evaluation = (_planted(t.slice(0, 500), " Sources differ.") for t in episodes)
    report = audit(train, evaluation, _bag("sentences", "position"))
    found = {(name, group) for name, group, _ in report.defects()}
    assert {("bag_of_words", group) for group in ("all", *CORRUPTION_LEVELS)} <= found
    assert ("sentences", "all") in found and not any(name == "position" for name, _ in found)
    bag = report.cues[0]
    assert bag.auc > 0.95 and all("differ" in " ".join(f[:2]) for f in bag.corrupt_features.values())
    assert len(bag.examples["all"]) == 5 and all("Sources differ." in e for e in bag.examples["all"])
    assert set(bag.examples) == {group for name, group in found if name == "bag_of_words"}
    assert report.cues[2].examples == {}  # nothing to show where nothing leaks
    card = card_section(report)
    assert card.startswith("## Shortcut audit") and f"bag_of_words on all ({bag.auc:.3f})" in card
    assert "max(AUC, 1 − AUC)" in card
    assert sum(line.startswith("|") for line in card.splitlines()) == 2 + len(report.cues)  # header, rule, rows


def test_a_tell_that_points_the_other_way_counts_as_much(episodes):
    """Learned on corrupt documents carrying the tell and scored where clean ones carry it, a cue ranks the held-out
    documents backwards (AUC near 0): as much a tell as ranking them right, and judged as one."""
    train, evaluation = episodes[0].slice(0, 500), episodes[1].slice(0, 500)
    report = audit(_planted(train, " Sources differ."), _planted(evaluation, " Sources differ.", ~_CORRUPT), _bag())
    bag = report.cues[0]
    assert bag.auc < 0.05 and all(auc < 0.05 for auc in bag.auc_by_kind.values())
    assert ("bag_of_words", "all", round(1 - bag.auc, 4)) in report.defects()
    assert bag.examples["all"] and not any("Sources differ." in e for e in bag.examples["all"])


def test_a_tell_of_one_kind_hidden_overall_is_found_by_that_kinds_model(episodes):
    """Coherent documents carry the tell, and about as many clean documents of other episodes: over all documents
    it is at chance, but the model of coherent documents against the clean ones of their episodes finds it."""
    coherent = pl.col("doc_corruption") == "coherent"
    where = coherent | (~pl.col("coherent_episode") & (pl.col("doc_id") == 0) & ~_CORRUPT)
    train, evaluation = (_planted(t.slice(0, 600), " Sources differ.", where) for t in episodes)
    report = audit(train, evaluation, _bag())
    bag = report.cues[0]
    assert separation(bag.auc) < AUC_LIMIT and bag.auc_by_kind["coherent"] > 0.95
    assert {group for _, group, _ in report.defects()} == {"coherent"}
    assert "differ" in " ".join(bag.corrupt_features["coherent"][:2])


def _retitled(table: pa.Table) -> pa.Table:
    """Titles "Report A" and "Report B": the clean documents of an even episode are A and its corrupt ones B, the
    other way round in an odd one. Read alone a title says nothing; beside the episode's titles it gives the
    corrupt documents away."""
    rows = pl.from_arrow(table).with_row_index("row")
    docs = (
        rows.select("row", "documents", "doc_corruption").explode(["documents", "doc_corruption"]).unnest("documents")
    )
    odd = (pl.col("row") % 2 == 1) != (pl.col("doc_corruption") != "none")
    docs = docs.with_columns(title=pl.when(odd).then(pl.lit("Report A")).otherwise(pl.lit("Report B")))
    nested = docs.group_by("row", maintain_order=True).agg(documents=pl.struct("doc_id", "title", "content"))
    return rows.drop("documents").join(nested, on="row").drop("row").select(table.column_names).to_arrow()


def test_a_tell_only_the_episodes_other_documents_reveal_is_found_by_the_relative_cue(episodes):
    train, evaluation = (_retitled(t.slice(0, 600)) for t in episodes)
    cues = tuple(cue for cue in CUES if cue.name in ("title_template", "layout_relative"))
    report = audit(train, evaluation, cues)
    title, relative = report.cues
    assert separation(title.auc) < AUC_LIMIT and relative.auc > 0.8, markdown(report)
    assert ("layout_relative", "all") in {(name, group) for name, group, _ in report.defects()}


def test_a_planted_claim_tell_is_found_by_the_claim_cues(episodes):
    def rounded(table: pa.Table) -> pa.Table:
        claims = (
            pl.from_arrow(table.select(["doc_claims", "doc_corruption"]))
            .with_row_index("row")
            .explode(["doc_claims", "doc_corruption"])
        )
        claims = claims.with_columns(
            pl.when(pl.col("doc_corruption") != "none").then(pl.col("doc_claims") + "000").otherwise("doc_claims")
        )
        nested = claims.group_by("row", maintain_order=True).agg("doc_claims")["doc_claims"].to_arrow()
        return table.set_column(
            table.schema.get_field_index("doc_claims"), "doc_claims", nested.cast(pa.list_(pa.string()))
        )

    train, evaluation = (rounded(t.slice(0, 500)) for t in episodes)
    cues = tuple(cue for cue in CUES if cue.name.startswith("claim_"))
    report = audit(train, evaluation, cues)
    assert all(cue.auc > AUC_LIMIT for cue in report.cues)
    text, shape = report.cues
    assert text.examples["all"] and all(example.endswith("000") for example in text.examples["all"])
    assert shape.corrupt_features["all"][0].startswith(("claim_zeros_", "claim_digits_"))


def test_documents_and_bad_inputs(dataset_dir, episodes):
    table = read_split(dataset_dir, "validation", 100)
    assert table.num_rows == 100 and table["episode_id"].to_pylist() == sorted(table["episode_id"].to_pylist())
    frame = document_frame(table)
    first = table.slice(0, 1).to_pylist()[0]
    assert frame.height == 800 and frame.head(8)["content"].to_list() == [d["content"] for d in first["documents"]]
    assert frame.head(8)["corrupt"].to_list() == [kind != "none" for kind in first["doc_corruption"]]
    with pytest.raises(ValueError, match="'dev'"):
        read_split(dataset_dir, "dev")
    with pytest.raises(ValueError, match="overlap"):
        audit(episodes[0], episodes[0].slice(0, 10))


def test_skeleton_masks_names_and_values():
    assert skeleton("Fred Odonnell — record") == "_ — record"
    assert skeleton("In its 2004 bulletin, the Federal Data Commission concluded that Daisy Ho works for X.") == (
        "in its _ bulletin , the _ data _ concluded that _ works for _ ."  # "data": a word of the filler sentences
    )


def test_without_scikit_learn_the_import_names_the_extra():
    """The wheel ships pipeline.audit; its classifiers come with the audit extra, and the error says so."""
    code = "import sys; sys.modules['sklearn'] = None; import pipeline.audit"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert run.returncode == 1
    assert "pip install 'contextcorruption[audit]'" in run.stderr.splitlines()[-1]


def test_a_group_is_judged_only_with_enough_documents_and_facts():
    """A fact's clean documents all claim its answer: 300 of them about 3 facts are 3 samples, not 300."""
    corrupt = np.r_[np.ones(300, dtype=bool), np.zeros(300, dtype=bool)]
    facts = np.array([f"fact {i % MIN_FACTS}" for i in range(600)])
    few = np.array([f"fact {i % 3}" for i in range(600)])
    everything, small = np.ones(600, dtype=bool), np.r_[np.ones(350, dtype=bool), np.zeros(250, dtype=bool)]
    assert set(judged({"all": everything, "small": small}, corrupt, facts)) == {"all"}  # 50 clean documents
    assert judged({"all": everything}, corrupt, few) == {}

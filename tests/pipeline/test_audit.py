import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.audit import AUC_LIMIT, CUES, audit, card_section, document_frame, markdown, read_split, skeleton
from pipeline.episodes import generate_episodes
from pipeline.pools import build_pools
from pipeline.schema import CORRUPTION_LEVELS

SEED = 7
EPISODES = 800  # per side: 6,400 documents each, ~200 coherent ones to evaluate


@pytest.fixture(scope="module")
def episodes(facts_dir) -> tuple[pa.Table, pa.Table]:
    """Train-split episodes to learn from and validation-split episodes (other facts, other ids) to score."""
    facts, pools = pq.read_table(facts_dir / "facts.parquet"), build_pools(SEED)
    train = generate_episodes(facts, pools, SEED, "train", np.arange(EPISODES))
    evaluation = generate_episodes(facts, pools, SEED, "validation", np.arange(EPISODES, 2 * EPISODES))
    return train, evaluation


def test_no_single_document_cue_finds_corrupt_documents_overall(episodes):
    """Every cue stays at chance over all documents (the per-kind and per-answer-type groups, a few hundred
    documents each here, are judged on the default build by benchmarks/audit.py)."""
    report = audit(*episodes)
    assert [cue.name for cue in report.cues] == [cue.name for cue in CUES]
    assert set(report.eval_by_kind) == {"none", *CORRUPTION_LEVELS}
    for cue in report.cues:
        assert set(cue.auc_by_kind) == set(CORRUPTION_LEVELS) and {"place", "quantity"} <= set(cue.auc_by_answer_type)
    assert max(cue.auc for cue in report.cues) <= AUC_LIMIT, markdown(report)


def _planted(table: pa.Table, tell: str) -> pa.Table:
    """`table` with `tell` appended to every corrupt document's content."""
    rows = pl.from_arrow(table).with_row_index("row")
    docs = (
        rows.select("row", "documents", "doc_corruption").explode(["documents", "doc_corruption"]).unnest("documents")
    )
    corrupt = pl.col("doc_corruption") != "none"
    docs = docs.with_columns(content=pl.when(corrupt).then(pl.col("content") + tell).otherwise(pl.col("content")))
    nested = docs.group_by("row", maintain_order=True).agg(documents=pl.struct("doc_id", "title", "content"))
    return rows.drop("documents").join(nested, on="row").drop("row").select(table.column_names).to_arrow()


def test_a_planted_tell_is_reported_with_examples(episodes):
    train, evaluation = (_planted(t.slice(0, 500), " Sources differ.") for t in episodes)
    cues = tuple(cue for cue in CUES if cue.name in ("bag_of_words", "sentences", "position"))
    report = audit(train, evaluation, cues)
    found = {(name, kind) for name, kind, _ in report.defects()}
    assert {("bag_of_words", kind) for kind in ("all", *CORRUPTION_LEVELS)} <= found
    assert ("sentences", "all") in found and not any(name == "position" for name, _ in found)
    bag = report.cues[0]
    assert bag.auc > 0.95 and "differ" in " ".join(bag.corrupt_features[:2])
    assert len(bag.examples["all"]) == 5 and all("Sources differ." in e for e in bag.examples["all"])
    assert set(bag.examples) == {kind for name, kind in found if name == "bag_of_words"}
    assert report.cues[2].examples == {}  # nothing to show where nothing leaks
    card = card_section(report)
    assert card.startswith("## Shortcut audit") and f"bag_of_words on all ({bag.auc:.3f})" in card
    assert sum(line.startswith("|") for line in card.splitlines()) == 2 + len(cues)  # header, rule, a row per cue


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
    assert shape.corrupt_features[0].startswith(("claim_zeros_", "claim_digits_"))


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

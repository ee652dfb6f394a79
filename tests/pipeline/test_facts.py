import json
import os
import re
import signal
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.facts import assign_splits, build_facts, deduplicate, main, write_facts
from pipeline.params import FactsParams, ParamsError
from pipeline.pools import build_pools, stored_pools
from pipeline.schema import ANSWER_TYPES, FACT_SCHEMA, SPLITS
from pipeline.sources.common import FactRows
from tests.conftest import write_params

SEED = 99
WEIGHTS = {"train": 0.7, "validation": 0.2, "test": 0.1}
SMALL_FACTS = FactsParams(
    sources=["geonames", "elements", "synthetic"], synthetic_entities=500, split_weights=WEIGHTS, hub_limit=50
)


@pytest.fixture(scope="module")
def table():
    return build_facts(SMALL_FACTS, SEED)


def test_same_params_build_identical_tables(table):
    assert build_facts(SMALL_FACTS, SEED).equals(table)


def test_table_has_the_fact_schema_sorted_by_unique_fact_id(table):
    assert table.schema.equals(FACT_SCHEMA)
    ids = table["fact_id"].to_pylist()
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert set(table["source"].to_pylist()) == set(SMALL_FACTS.sources)
    assert set(table["answer_type"].to_pylist()) <= set(ANSWER_TYPES)
    assert set(table["split"].to_pylist()) == set(SPLITS)


def test_a_keyed_build_stores_the_pools_of_the_published_seed(table):
    """The episodes draw wrong names from the published seed's pools; a hidden build's key changes its synthetic
    facts (drawn from a keyed seed), not those pools."""
    keyed = build_facts(SMALL_FACTS, SEED, hidden_key=b"k" * 32)
    assert stored_pools(keyed.schema.metadata) == stored_pools(table.schema.metadata) == build_pools(SEED)
    assert not keyed.equals(table)


def test_seed_changes_synthetic_facts_only(table):
    other = pl.from_arrow(build_facts(SMALL_FACTS, SEED + 1))
    frame = pl.from_arrow(table)
    joined = frame.join(other, on="fact_id", suffix="_other")
    assert joined.height == frame.height  # same ids: sources and entity counts decide them, not the seed
    changed = joined.filter(pl.col("answer") != pl.col("answer_other"))
    assert set(changed["source"]) == {"synthetic"}
    assert changed.height > frame.filter(pl.col("source") == "synthetic").height // 2


def test_split_shares_follow_the_weights(table):
    shares = pl.from_arrow(table)["split"].value_counts(normalize=True)
    for split, share in shares.iter_rows():
        assert share == pytest.approx(SMALL_FACTS.split_weights[split], abs=0.015)


def test_weights_that_leave_a_split_without_facts_are_refused():
    tiny = {"train": 0.998, "validation": 0.001, "test": 0.001}
    params = SMALL_FACTS.model_copy(update={"sources": ["elements"], "split_weights": tiny})
    with pytest.raises(ParamsError, match=r"facts\.split_weights: no fact falls in split validation, test of 438"):
        build_facts(params, SEED)


def test_a_fact_keeps_its_split_when_others_are_added(table):
    bigger = SMALL_FACTS.model_copy(update={"synthetic_entities": 600})
    small = pl.from_arrow(table).select("fact_id", "split")
    large = pl.from_arrow(build_facts(bigger, SEED)).select("fact_id", "split")
    joined = small.join(large, on="fact_id", suffix="_large")
    assert joined.height == small.height
    assert (joined["split"] == joined["split_large"]).all()


def test_a_split_is_a_pure_function_of_the_fact_id():
    weights = {"train": 0.5, "validation": 0.25, "test": 0.25}
    ids = [f"synthetic:person:{k:06d}:birthplace" for k in range(4000)]
    splits = assign_splits(ids, weights).tolist()
    assert [assign_splits([i], weights)[0] for i in ids[:50]] == splits[:50]
    assert assign_splits(ids[::-1], weights).tolist() == splits[::-1]
    assert splits.count("validation") / len(ids) == pytest.approx(0.25, abs=0.03)
    assert splits.count("test") / len(ids) == pytest.approx(0.25, abs=0.03)


def test_deduplicate_drops_contested_questions_and_keeps_one_repeat():
    rows = FactRows("test")
    rows.add("t:1", "open", "x", "What is X?", "one", [], "text")
    rows.add("t:2", "open", "x", "what is  x", "two", [], "text")  # same question once normalised, other answer
    rows.add("t:3", "open", "y", "What is Y?", "Why", [], "text")
    rows.add("t:4", "open", "y", "WHAT IS Y?", "why", [], "text")  # a repeat with the same answer
    rows.add("t:5", "open", "z", "What is Z?", "zed", [], "text")
    assert deduplicate(rows.frame())["fact_id"].to_list() == ["t:3", "t:5"]


def test_write_facts_round_trip(tmp_path, table):
    write_facts(table, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["facts.parquet", "summary.json"]
    back = pq.read_table(tmp_path / "facts.parquet")
    assert back.schema.equals(FACT_SCHEMA) and back.equals(table)
    assert stored_pools(back.schema.metadata) == build_pools(SEED), "the episodes stage draws from these pools"
    assert pq.ParquetFile(tmp_path / "facts.parquet").metadata.row_group(0).column(0).compression == "ZSTD"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["facts"] == table.num_rows
    for key in ("by_source", "by_split", "by_answer_type", "by_relation"):
        assert sum(summary[key].values()) == table.num_rows
    assert summary["by_source"]["elements"] == 4 * 118 - 34


def test_a_failed_write_keeps_the_previous_output(tmp_path, table):
    write_facts(table, tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    nulls = pa.table({name: pa.nulls(2, FACT_SCHEMA.field(name).type) for name in FACT_SCHEMA.names})
    with pytest.raises(ValueError, match="non-nullable"):
        write_facts(nulls, tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def _params_file(tmp_path: Path, **facts) -> Path:
    return write_params(tmp_path, SEED, facts=SMALL_FACTS.model_dump() | facts)


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"synthetic_entities": 0}, "facts.synthetic_entities"),
        ({"synthetic_entities": 10**6}, "facts.synthetic_entities: Input should be less than or equal to 294913"),
        ({"sources": ["geonames", "wikipedia"]}, "facts.sources"),
        ({"split_weights": {"train": 0.9, "validation": 0.1}}, "facts.split_weights"),
        ({"hub_limit": -1}, "facts.hub_limit"),
        ({"hub_revisions": {"wikipedia": "v1"}}, "facts.hub_revisions.wikipedia.[key]: Input should be 'nq_open'"),
        ({"hub_revisions": {"popqa": "v1"}}, "facts.hub_revisions: names ['popqa'], which facts.sources"),
        (
            {"sources": ["elements", "popqa"], "hub_revisions": {"popqa": " "}},
            "facts.hub_revisions: the revision of ['popqa'] is empty",
        ),
        ({"hub_paths": {"popqa": "copies/PopQA"}}, "facts.hub_paths: names ['popqa'], which facts."),
        (
            {"sources": ["elements", "nq_open"], "hub_paths": {"nq_open": ""}},
            "facts.hub_paths: the path of ['nq_open'] is empty",
        ),
        ({"extra": 1}, "facts.extra"),
    ],
)
def test_main_rejects_bad_params_before_writing(tmp_path, change, key):
    out = tmp_path / "facts"
    with pytest.raises(SystemExit, match=re.escape(key)):
        main(_params_file(tmp_path, **change), out)
    assert not out.exists()


def test_main_writes_the_stage_output(tmp_path):
    out = tmp_path / "facts"
    change = {"sources": ["elements", "synthetic"], "synthetic_entities": 10}
    main(_params_file(tmp_path, **change), out)
    expected = build_facts(SMALL_FACTS.model_copy(update=change), SEED)
    assert pq.read_table(out / "facts.parquet").equals(expected)


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize("step", ["build_facts", "summarise"], ids=["building", "writing"])
def test_ctrl_c_ends_the_stage_in_one_line_and_leaves_the_previous_facts(tmp_path, monkeypatch, caplog, step):
    out = tmp_path / "facts"
    main(_params_file(tmp_path, sources=["elements"]), out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    monkeypatch.setattr(f"pipeline.facts.{step}", _interrupt)  # summarise: called after facts.parquet is staged

    with pytest.raises((SystemExit, KeyboardInterrupt)) as raised:  # one let through fails this test, not the session
        main(_params_file(tmp_path, sources=["elements", "synthetic"]), out)  # other facts: a write would show

    assert raised.type is SystemExit and raised.value.code == 130
    assert caplog.messages[-1] == "facts: interrupted; nothing was written"
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before, "no temporary file is left"


def test_a_bad_source_list_is_the_one_error_when_revisions_name_its_sources(tmp_path):
    change = {"sources": ["geonames", "wikipedia", "popqa"], "hub_revisions": {"popqa": "v1"}}
    with pytest.raises(SystemExit) as raised:
        main(_params_file(tmp_path, **change), tmp_path / "facts")
    assert "facts.sources.1: Input should be" in str(raised.value) and "hub_revisions" not in str(raised.value)


def test_ctrl_c_between_the_two_renames_waits_for_both(tmp_path, monkeypatch, caplog, table):
    """An interrupt after summary.json is renamed and before facts.parquet is would leave a new summary beside the old
    table, and the stage would say nothing was written: it waits for the second rename instead."""
    write_facts(build_facts(SMALL_FACTS.model_copy(update={"sources": ["elements"]}), SEED), tmp_path)
    replace = os.replace

    def replace_then_interrupt(src, dst):
        replace(src, dst)
        if Path(dst).name == "summary.json":
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr("pipeline.facts.os.replace", replace_then_interrupt)
    handler = signal.getsignal(signal.SIGINT)
    try:
        summary = write_facts(table, tmp_path)
    except KeyboardInterrupt:  # let through, it would end the whole session
        pytest.fail("the interrupt between the two renames came through")
    assert pq.read_table(tmp_path / "facts.parquet").equals(table)
    assert json.loads((tmp_path / "summary.json").read_text()) == summary and summary["facts"] == table.num_rows
    assert caplog.messages[-1].startswith("facts: interrupted as its new output was renamed into place")
    assert signal.getsignal(signal.SIGINT) is handler

"""Dataset card: Hub front matter whose configs `datasets` reads (plain and streaming), the schema table,
counts, one real example per corruption kind, deterministic text."""

from __future__ import annotations

import re
import shutil

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
import yaml
from datasets import load_dataset
from test_writer import write_folder

from pipeline.card import facts_per_split, size_category, write_card
from pipeline.episodes import read_facts
from pipeline.schema import (
    CARD_NAME,
    CORRUPTION_LEVELS,
    EPISODE_SCHEMA,
    HIDDEN_COLUMNS,
    MANIFEST_NAME,
    MAX_BUDGET,
    SPLITS,
    VISIBLE_COLUMNS,
    Manifest,
)

COUNTS = {"train": 40, "validation": 12, "test": 12}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("episodes")
    write_card(root, write_folder(root, COUNTS))
    return root


def front_matter(text: str) -> dict:
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def test_front_matter_maps_each_split_to_its_shards(folder):
    meta = front_matter((folder / CARD_NAME).read_text())
    assert meta["configs"] == [
        {"config_name": "default", "data_files": [{"split": s, "path": f"data/{s}-*.parquet"} for s in SPLITS]}
    ]
    assert meta["license"] == "cc-by-4.0" and meta["size_categories"] == ["n<1K"]
    assert "question-answering" in meta["task_categories"] and "rag" in meta["tags"]


def test_card_has_schema_counts_and_build(folder):
    text = (folder / CARD_NAME).read_text()
    manifest = Manifest.model_validate_json((folder / MANIFEST_NAME).read_text())
    schema_table = text.split("\n| column | type |")[1].split("\n\n")[0]
    cells = {row[0]: row for row in (line.strip("| ").split(" | ") for line in schema_table.splitlines()[2:])}
    for field in EPISODE_SCHEMA:
        visibility = "hidden" if field.name in HIDDEN_COLUMNS else "yes"
        assert cells[field.name][2] == visibility, cells[field.name]  # the column's own row: name, type, visible
    assert "| documents | list<struct<doc_id: int8, title: string, content: string>> | yes |" in text
    assert "| train | 40 | 0 - 39 | 3 |" in text and "| test | 12 | 52 - 63 | 1 |" in text
    assert "| easy | 1 | 16 |" in text and "| adversarial | 4 | 16 |" in text
    assert "| synthetic | fictional entities built from `Faker` pools (MIT) | generated here | 32 |" in text
    assert f"params_hash `{manifest.params_hash}`" in text and f"seed {manifest.seed}," in text
    assert "31-63%" in text and "0.3 x |flagged and corrupt| / |corrupt|" in text
    assert 'select_columns(["' + '", "'.join(VISIBLE_COLUMNS) + '"])' in text


def test_card_shows_the_first_episode_of_each_kind(folder):
    text = (folder / CARD_NAME).read_text()
    rows = pq.read_table(folder / "data" / "train-00000-of-00003.parquet").to_pylist()
    for kind in CORRUPTION_LEVELS:
        row, doc_id = next((r, d) for r in rows for d, k in enumerate(r["doc_corruption"]) if k == kind)
        block = text.split(f"**{kind}**: ")[1].split("\n**")[0]
        assert f"Episode {row['episode_id']} ({row['task']}). Question: {row['question']}" in block
        assert f"True answer: **{row['answer']}**. Document {doc_id} claims: **{row['doc_claims'][doc_id]}**" in block
        assert "> " + row["documents"][doc_id]["content"] in block


def test_card_is_deterministic(folder):
    manifest = Manifest.model_validate_json((folder / MANIFEST_NAME).read_text())
    write_card(folder, manifest)
    first = (folder / CARD_NAME).read_bytes()
    write_card(folder, manifest)
    assert (folder / CARD_NAME).read_bytes() == first
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "data", "manifest.json"]


@pytest.mark.parametrize(
    ("total", "label"), [(999, "n<1K"), (1_000, "1K<n<10K"), (1_040_000, "1M<n<10M"), (10**9, "100M<n<1B")]
)
def test_size_category(total, label):
    assert size_category(total) == label


def test_load_dataset_reads_every_split(folder, tmp_path):
    loaded = load_dataset(str(folder), cache_dir=str(tmp_path / "cache"))
    assert {split: loaded[split].num_rows for split in SPLITS} == COUNTS
    expected = pq.read_table(folder / "data" / "validation-00000-of-00001.parquet").to_pylist()
    assert loaded["validation"].to_list() == expected
    assert loaded["train"]["episode_id"] == list(range(40))


def test_a_folder_rebuilt_with_other_params_loads_as_rebuilt(tmp_path):
    """`datasets` caches a local folder by its name and the card's patterns, not by its files: a folder rebuilt with
    other counts loaded as the build cached first. The card's `dataset_info` (sizes, counts) keys the rebuild apart;
    an identical rebuild still reads the cache."""
    root, cache = tmp_path / "episodes", str(tmp_path / "cache")
    for counts in (COUNTS, COUNTS | {"train": 36}, COUNTS | {"train": 36, "validation": 8}, COUNTS):
        shutil.rmtree(root, ignore_errors=True)
        write_card(root, write_folder(root, counts))
        loaded = load_dataset(str(root), cache_dir=cache)
        assert {split: loaded[split].num_rows for split in SPLITS} == counts
    assert len(list((tmp_path / "cache").glob("episodes/default/0.0.0/*/"))) == 3


def test_dataset_info_records_each_configs_sizes(folder):
    meta = front_matter((folder / CARD_NAME).read_text())
    manifest = Manifest.model_validate_json((folder / MANIFEST_NAME).read_text())
    (info,) = meta["dataset_info"]
    assert info["config_name"] == "default" and [s["name"] for s in info["splits"]] == list(SPLITS)
    assert [s["num_examples"] for s in info["splits"]] == [COUNTS[split] for split in SPLITS]
    assert info["download_size"] == sum(shard.bytes for shard in manifest.shards)
    uncompressed = sum(pq.read_table(folder / shard.path).nbytes for shard in manifest.shards)
    assert 0.5 < info["dataset_size"] / uncompressed < 2 and info["dataset_size"] == sum(
        s["num_bytes"] for s in info["splits"]
    )


def test_load_dataset_streams_every_split(folder):
    streamed = load_dataset(str(folder), streaming=True)
    for split in SPLITS:
        ids = [row["episode_id"] for row in streamed[split]]
        first = sum(COUNTS[s] for s in SPLITS[: SPLITS.index(split)])
        assert ids == list(range(first, first + COUNTS[split]))


def test_card_of_the_pipeline_dataset(dataset_dir, facts_dir, tmp_path):
    """The episodes stage writes the card; it is reproducible from the manifest, the shards and the facts per split,
    and loads."""
    text = (dataset_dir / CARD_NAME).read_text()
    assert all(f"**{kind}**: " in text for kind in CORRUPTION_LEVELS)
    root = tmp_path / "episodes"
    shutil.copytree(dataset_dir, root)
    manifest = Manifest.model_validate_json((root / MANIFEST_NAME).read_text())
    write_card(root, manifest, facts=facts_per_split(read_facts(facts_dir)[0]))
    assert (root / CARD_NAME).read_text() == text
    counts = {split: info.num_rows for split, info in manifest.splits.items()}
    loaded = load_dataset(str(dataset_dir), cache_dir=str(tmp_path / "cache"))
    assert {split: loaded[split].num_rows for split in SPLITS} == counts
    streamed = load_dataset(str(dataset_dir), streaming=True)
    assert {split: sum(1 for _ in streamed[split]) for split in SPLITS} == counts


def test_the_card_states_how_far_number_claims_move(dataset_dir):
    """The ranges the card states are the data's: it said 5-35 % while head counts moved up to 40 % (and atomic
    numbers 1 and 2 by 100 and 50 %)."""
    text = (dataset_dir / CARD_NAME).read_text()
    pattern = (
        r"a year off by (\d+)-(\d+), a quantity off by (\d+)-(\d+) % \(a number below (\d+) by one\), .*"
        r"the rounding can add half a percent\)"
    )
    stated = re.search(pattern, text)
    assert stated, text.split("**number**: ")[1][:300]
    first_year, last_year, least, most, below = map(int, stated.groups())
    columns = ["answer", "answer_type", "doc_claims", "doc_corruption"]
    docs = pl.read_parquet(dataset_dir / "data" / "*.parquet", columns=columns).explode("doc_claims", "doc_corruption")
    numbers = docs.filter(pl.col("doc_corruption") == "number", pl.col("answer_type").is_in(["year", "quantity"]))
    truth, claim = (numbers[c].str.replace_all(",", "").cast(pl.Float64).to_numpy() for c in ("answer", "doc_claims"))
    year, one_step = (numbers["answer_type"] == "year").to_numpy(), (truth < below) & (truth == np.round(truth))
    gap, share = np.abs(claim - truth), np.abs(claim - truth) / truth * 100
    assert year.sum() > 20 and (~year & ~one_step).sum() > 20
    assert first_year <= gap[year].min() and gap[year].max() <= last_year
    quantities = ~year & ~one_step
    assert least - 0.5 <= share[quantities].min() and share[quantities].max() <= most + 0.5  # as the card says
    assert (gap[~year & one_step] == 1).all()


def test_an_audit_section_goes_before_the_sources(folder, tmp_path):
    root = tmp_path / "episodes"
    shutil.copytree(folder, root)
    manifest = Manifest.model_validate_json((root / MANIFEST_NAME).read_text())
    write_card(root, manifest, "## Shortcut audit\n\n| cue | all |\n|---|---:|\n| position | 0.501 |\n")
    text = (root / CARD_NAME).read_text()
    assert text.index("## Shortcut audit") < text.index("## Sources and licences")
    assert "| position | 0.501 |\n\n## Sources and licences" in text
    assert (
        text.replace(text[text.index("## Shortcut audit") : text.index("## Sources")], "")
        == (folder / CARD_NAME).read_text()
    )


def test_a_hub_source_is_cited_at_the_commit_its_facts_were_read(folder, tmp_path):
    root = tmp_path / "episodes"
    shutil.copytree(folder, root)
    manifest = Manifest.model_validate_json((root / MANIFEST_NAME).read_text())
    commit = "0123456789abcdef0123456789abcdef01234567"
    where = {"popqa": {"path": "akariasai/PopQA", "commit": commit}, "nq_open": {"path": "/data/nq", "commit": None}}
    write_card(root, manifest.model_copy(update={"hub_sources": where}))
    rows = {
        line.split(" | ")[0]: line for line in (root / CARD_NAME).read_text().splitlines() if line.startswith("| ")
    }
    assert f"PopQA (`akariasai/PopQA`), read from `akariasai/PopQA` at commit `{commit}` |" in rows["| popqa"]
    assert "(`google-research-datasets/nq_open`), read from a local copy |" in rows["| nq_open"]
    assert "/data/nq" not in rows["| nq_open"]
    assert "read from" not in rows["| faitheval"] + rows["| geonames"]


def test_the_card_states_the_highest_reachable_reward(folder):
    """One flag and the submission: the reward's best, by the scorer itself, is what the card says it is."""
    from reward_api.scoring import EpisodeKey, accepted_answers, score_key

    key = EpisodeKey(accepted_answers("Paris", []), frozenset({3}), MAX_BUDGET)
    best = score_key("Paris", frozenset({3}), 1.0, 2, key)["total"]
    assert f"the highest reachable is {best:.4f}:" in (folder / CARD_NAME).read_text()


def test_the_card_states_its_limitations_with_this_builds_figures(dataset_dir, facts_dir):
    """What a user weighs before training: the fictional share and each split's facts are this build's."""
    limits = (dataset_dir / CARD_NAME).read_text().split("## Limitations\n\n")[1].split("\n\n")[0]
    episodes = pl.read_parquet(dataset_dir / "data" / "*.parquet", columns=["split", "source", "fact_id"])
    fictional = (episodes["source"] == "synthetic").mean()
    assert f"- {fictional:.1%} of the public episodes ask about fictional entities" in limits
    facts = pl.from_arrow(read_facts(facts_dir)[0])
    for split in SPLITS:
        asked, held = (frame.filter(pl.col("split") == split)["fact_id"] for frame in (episodes, facts))
        assert set(asked) <= set(held)
        assert f"{split}'s {len(asked):,} from {len(held):,} ({len(asked) / len(held):,.1f} draws a fact" in limits
        reached = re.search(rf"{split}'s [^)]* about (\d+)% of them drawn at least once", limits)
        assert reached and abs(int(reached[1]) / 100 - asked.n_unique() / len(held)) < 0.05, split
    assert "always the strict plurality of the documents' claims" in limits

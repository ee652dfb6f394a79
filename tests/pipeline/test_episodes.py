import json
import logging
import re
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pipeline import corruption, episodes
from pipeline.episodes import FactsError, build_episodes, generate_episodes, main, prepare, read_facts
from pipeline.params import EpisodesParams
from pipeline.pools import METADATA_KEY as POOLS_KEY
from pipeline.pools import build_pools, stored_pools
from pipeline.schema import (
    CORRUPTION_LEVELS,
    EPISODE_SCHEMA,
    FICTIONAL_SOURCES,
    HUB_SOURCES_KEY,
    NUM_DOCS,
    SPLITS,
    TASKS,
)
from reward_api.scoring import normalize
from tests.conftest import write_params

SEED = 1234
TINY = EpisodesParams(train=300, validation=60, test=60, workers=1, shard_rows=128, row_group_rows=32)


@pytest.fixture(scope="module")
def facts(facts_dir) -> pa.Table:
    return pq.read_table(facts_dir / "facts.parquet")


@pytest.fixture(scope="module")
def pools():
    return build_pools(SEED)


@pytest.fixture(scope="module")
def batch(facts, pools) -> pa.Table:
    return generate_episodes(facts, pools, SEED, "train", np.arange(2000))


def test_batch_has_exactly_the_episode_schema(batch):
    assert batch.schema.equals(EPISODE_SCHEMA, check_metadata=False)
    assert batch.column("episode_id").to_pylist() == list(range(2000))
    assert set(batch.column("split").to_pylist()) == {"train"}


def test_every_episode_keeps_the_invariants(batch):
    for row in batch.to_pylist():
        docs, corrupt = row["documents"], row["corrupt_ids"]
        assert [d["doc_id"] for d in docs] == list(range(NUM_DOCS))
        assert all(d["title"] and d["content"] for d in docs)
        assert len({d["title"] for d in docs}) == NUM_DOCS, row["episode_id"]  # eight sources, eight titles
        assert corrupt == sorted(corrupt) and len(set(corrupt)) == len(corrupt)
        assert TASKS[len(corrupt) - 1] == row["task"]
        accepted = {normalize(a) for a in (row["answer"], *row["answer_aliases"])}
        for i, (kind, claim) in enumerate(zip(row["doc_corruption"], row["doc_claims"], strict=True)):
            if i in corrupt:
                assert kind in CORRUPTION_LEVELS and normalize(claim) not in accepted, (row["episode_id"], i, claim)
            else:
                assert kind == "none" and claim == row["answer"]
        counts = {}
        for claim in row["doc_claims"]:
            counts[normalize(claim)] = counts.get(normalize(claim), 0) + 1
        truth = counts.pop(normalize(row["answer"]))
        assert truth > max(counts.values()), row["episode_id"]


# One number in an answer, with words around it ("1987", "3,400 km", "$12.5 million"): a near miss can be drawn.
ONE_NUMBER = re.compile(r"\D*(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\D*")


def test_corruption_escalates_with_rank(facts, batch):
    """Tier k has the first k levels (a level that cannot apply falls back and says so): number, entity, inversion,
    coherent. Number and entity fall back to each other only where the answer needs it (pipeline/corruption.py):
    an answer without a number gets an entity instead of a number, and a numeric answer gets a number instead of an
    entity only where its relation has too few distinct answers to substitute one (fewer than MIN_GROUP), or where the
    true answer near it lies more than NEIGHBOUR_MAX_RATIO away (no year: its neighbours lie a few years off)."""
    split = facts.filter(pc.equal(facts.column("split"), "train")).to_pylist()
    answers: dict[tuple[str, str], set[str]] = {}
    for fact in split:
        answers.setdefault((fact["relation"], fact["answer_type"]), set()).add(fact["answer"])
    relation = {fact["fact_id"]: (fact["relation"], fact["answer_type"]) for fact in split}
    seen = set()
    for row in batch.to_pylist():
        numeric = ONE_NUMBER.fullmatch(row["answer"]) is not None
        few = len(answers[relation[row["fact_id"]]]) < corruption.MIN_GROUP
        by_rank = ["number" if numeric else "entity", "number" if numeric and few else "entity"]
        by_rank += ["inversion", "coherent"]
        kinds = [row["doc_corruption"][i] for i in row["corrupt_ids"]]
        far = ["number", "number", *by_rank[2:]] if numeric and row["answer_type"] != "year" else by_rank
        expected = [sorted(by_rank[: len(kinds)]), sorted(far[: len(kinds)])]
        assert sorted(kinds) in expected, (row["episode_id"], row["answer"], kinds)
        seen.add((numeric, few, len(kinds)))
    # both fallbacks' sides are exercised at every tier: numeric answers (of big relations) and non-numeric ones
    assert {(numeric, False, k) for numeric in (True, False) for k in range(1, 5)} <= seen


def test_tasks_facts_and_positions_are_spread(batch):
    tasks = batch.column("task").value_counts().to_pylist()
    assert {t["values"] for t in tasks} == set(TASKS) and min(t["counts"] for t in tasks) > 400
    positions = np.bincount(
        np.concatenate([np.array(c) for c in batch.column("corrupt_ids").to_pylist()]), minlength=8
    )
    assert positions.min() > 0.8 * positions.mean()
    assert len(set(batch.column("fact_id").to_pylist())) > 1000


def test_generation_is_pure_per_episode(facts, pools, batch):
    ids = np.random.default_rng(0).choice(2000, size=25, replace=False)
    ctx_rows = batch.take(pa.array(ids))
    alone = [generate_episodes(facts, pools, SEED, "train", np.array([i])) for i in ids]
    assert pa.concat_tables(alone).equals(ctx_rows)
    assert generate_episodes(facts, pools, SEED, "train", np.arange(2000)).equals(batch)


def test_neighbouring_seeds_share_no_episodes(facts, pools, batch):
    def episodes(table):
        return {tuple(d["content"] for d in docs) for docs in table.column("documents").to_pylist()}

    mine = episodes(batch)
    for other_seed, first in ((SEED + 1, 0), (SEED + 1, 1), (SEED - 1, 0)):
        other = generate_episodes(facts, pools, other_seed, "train", np.arange(first, first + 2000))
        assert not mine & episodes(other)


def test_a_split_without_facts_is_refused(facts, pools):
    with pytest.raises(ValueError, match="'nowhere'"):
        prepare(facts, pools, "nowhere")


@pytest.mark.parametrize("variant", ["two-workers", "small-chunks"])
def test_build_is_the_same_bytes_whatever_the_workers_or_chunks(variant, facts_dir, tmp_path, monkeypatch):
    """A worker streams each shard to its file chunk by chunk: neither the workers nor the chunks change a byte."""
    one = build_episodes(facts_dir, tmp_path / "one", TINY, SEED)
    params = TINY.model_copy(update={"workers": 2}) if variant == "two-workers" else TINY
    if variant == "small-chunks":
        monkeypatch.setattr(episodes, "CHUNK_ROWS", 40)  # one 32-row group at a time: four chunks a shard
    assert build_episodes(facts_dir, tmp_path / "two", params, SEED) == one
    assert sorted(s.path for s in one.shards) == sorted(
        p.relative_to(tmp_path / "one").as_posix() for p in (tmp_path / "one").glob("data/*.parquet")
    )
    for name in [shard.path for shard in one.shards] + ["manifest.json"]:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    assert list(one.splits) == list(SPLITS)


def test_stored_episodes_regenerate_from_code(dataset_dir, facts_dir):
    manifest = json.loads((dataset_dir / "manifest.json").read_text())
    stored = pa.concat_tables([pq.read_table(dataset_dir / shard["path"]) for shard in manifest["shards"]])
    facts, pools = pq.read_table(facts_dir / "facts.parquet"), build_pools(manifest["seed"])
    picked = np.sort(np.random.default_rng(5).choice(stored.num_rows, size=100, replace=False))
    for split, info in manifest["splits"].items():
        ids = picked[(picked >= info["first_id"]) & (picked < info["first_id"] + info["num_rows"])]
        again = generate_episodes(facts, pools, manifest["seed"], split, ids)
        assert again.equals(stored.take(pa.array(ids)).cast(EPISODE_SCHEMA), check_metadata=False)


def test_main_builds_from_params_and_summarises(facts_dir, tmp_path, caplog):
    write_params(tmp_path, 3, episodes=TINY.model_dump() | {"train": 200})
    with caplog.at_level(logging.INFO):
        main(tmp_path / "params.yaml", facts_dir, tmp_path / "out")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["seed"] == 3 and manifest["splits"]["train"]["num_rows"] == 200
    assert manifest["params_hash"] in (tmp_path / "out" / "README.md").read_text()
    assert "320 (train 200, validation 60, test 60)" in caplog.text
    assert "episodes/s" in caplog.text and "bytes/episode" in caplog.text and str(tmp_path / "out") in caplog.text


def test_main_refuses_bad_params_before_any_work(facts_dir, tmp_path):
    write_params(tmp_path, 3, episodes=TINY.model_dump() | {"test": 0})
    with pytest.raises(SystemExit, match="episodes.test"):
        main(tmp_path / "params.yaml", facts_dir, tmp_path / "out")
    with pytest.raises(FactsError, match="facts stage"):
        build_episodes(tmp_path, tmp_path / "out", TINY, SEED)
    assert not (tmp_path / "out").exists()


def _set_metadata(path: Path, key: bytes, value: bytes) -> None:
    table = pq.read_table(path)
    pq.write_table(table.replace_schema_metadata({**table.schema.metadata, key: value}), path)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda path: path.write_bytes(path.read_bytes()[:1000]), r"not a Parquet file \(Parquet magic bytes"),
        (
            lambda path: pq.write_table(pq.read_table(path).drop(["subject"]), path),
            r"not a facts table \(columns differ from FACT_SCHEMA: missing \['subject'\]\)",
        ),
        (
            lambda path: pq.write_table(pq.read_table(path, filters=[("split", "!=", "test")]), path),
            r"no fact in split\(s\) \['test'\]",
        ),
        (
            lambda path: pq.write_table(pq.read_table(path).replace_schema_metadata(None), path),
            r"no name pools in its metadata",
        ),
        *(
            (lambda path, key=key, value=value: _set_metadata(path, key, value), r"its metadata cannot be read \(")
            for key, value in [
                (POOLS_KEY, b"{not json"),
                (POOLS_KEY, b"[1]"),
                (POOLS_KEY, b'{"person": ["A"]}'),  # the other pools missing
                (POOLS_KEY, b"[" * 5000 + b"]" * 5000),
                (HUB_SOURCES_KEY, b"[1]"),
                (HUB_SOURCES_KEY, b'{"nq_open": {"path": "x"}}'),  # no commit: the manifest needs one
            ]
        ),
    ],
    ids=["truncated", "other-columns", "split-missing", "pools-missing"]
    + ["pools-no-json", "pools-a-list", "pools-missing-fields", "pools-nested", "hub-a-list", "hub-no-commit"],
)
def test_unreadable_facts_fail_in_the_parent_before_any_work(facts_dir, tmp_path, damage, message):
    facts = tmp_path / "facts" / "facts.parquet"
    facts.parent.mkdir()
    facts.write_bytes((facts_dir / "facts.parquet").read_bytes())
    damage(facts)
    with pytest.raises(FactsError, match=f"^{re.escape(str(facts))}: {message}"):
        build_episodes(facts.parent, tmp_path / "out", TINY.model_copy(update={"workers": 2}), SEED)
    assert [p.name for p in tmp_path.iterdir()] == ["facts"], "no staging folder, no output"


def test_a_facts_file_that_is_a_folder_is_refused_in_one_line(tmp_path):
    (tmp_path / "facts" / "facts.parquet").mkdir(parents=True)
    with pytest.raises(FactsError, match=r"facts.parquet: cannot be read \(Is a directory\); run the facts stage"):
        build_episodes(tmp_path / "facts", tmp_path / "out", TINY, SEED)
    assert [p.name for p in tmp_path.iterdir()] == ["facts"]


def test_a_build_that_cannot_write_ends_in_one_line_and_leaves_nothing(facts_dir, tmp_path, monkeypatch):
    """A disk that fills up mid-build (here: the first shard's write) was a traceback; the staging folder goes."""
    write_params(tmp_path, 3, episodes=TINY)

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(episodes, "write_shard", full)
    with pytest.raises(SystemExit, match=r"^episodes: writing the dataset failed: \[Errno 28\] No space left"):
        main(tmp_path / "params.yaml", facts_dir, tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]


@pytest.mark.parametrize("workers", [1, 2])
def test_facts_changed_after_the_stage_read_them_are_refused(facts_dir, tmp_path, monkeypatch, workers):
    """Workers read the facts file themselves: a table that is not the one the stage hashed builds nothing, and the
    refusal reaches the stage as itself (a pool worker's failed start-up had surfaced as BrokenProcessPool)."""
    facts = tmp_path / "facts" / "facts.parquet"
    facts.parent.mkdir()
    facts.write_bytes((facts_dir / "facts.parquet").read_bytes())
    read_facts = episodes.read_facts

    def read_then_change(folder):
        read = read_facts(folder)
        pq.write_table(pq.read_table(facts).slice(1), facts)  # rebuilt between the stage's read and a worker's
        return read

    monkeypatch.setattr(episodes, "read_facts", read_then_change)
    with pytest.raises(FactsError, match=f"^{re.escape(str(facts))}: changed while the episodes stage ran"):
        build_episodes(facts.parent, tmp_path / "out", TINY.model_copy(update={"workers": workers}), SEED)
    assert [p.name for p in tmp_path.iterdir()] == ["facts"], "no staging folder, no output"


def test_manifest_hash_follows_the_facts(facts_dir, tmp_path):
    first = build_episodes(facts_dir, tmp_path / "a", TINY, SEED).params_hash
    changed = tmp_path / "facts"
    changed.mkdir()
    table = pq.read_table(facts_dir / "facts.parquet")
    pq.write_table(table.slice(1), changed / "facts.parquet")
    assert build_episodes(changed, tmp_path / "b", TINY, SEED).params_hash != first
    assert build_episodes(facts_dir, tmp_path / "c", TINY, SEED).params_hash == first


def test_rows_do_not_depend_on_the_shard_size(facts_dir, tmp_path):
    def rows(params):
        manifest = build_episodes(facts_dir, tmp_path / str(params.shard_rows), params, SEED)
        shards = sorted(manifest.shards, key=lambda s: s.first_id)
        return pa.concat_tables([pq.read_table(tmp_path / str(params.shard_rows) / s.path) for s in shards])

    small = rows(TINY.model_copy(update={"shard_rows": 64}))
    assert small.num_rows == 420 and small.equals(rows(TINY))


def test_fictional_answers_stay_in_their_split(facts_dir):
    """A split's wrong claims draw on the other splits' real-world answers, never on their fictional ones: a hidden
    test split's are made from its key, and train documents must not carry them."""
    facts, _ = read_facts(facts_dir)
    frame = pl.from_arrow(facts)
    named = pl.col("answer_type").is_in(["person", "organization", "place", "text"])  # numbers coincide by chance
    fictional = frame.filter(pl.col("source").is_in(FICTIONAL_SOURCES) & named)
    train = set(fictional.filter(pl.col("split") == "train")["answer"])
    others = set(fictional.filter(pl.col("split") != "train")["answer"]) - train
    pools = stored_pools(facts.schema.metadata)
    pooled = set(pools.person) | set(pools.organization) | set(pools.place) | set(pools.occupation)
    values = set(prepare(facts, pools, "train").truths.substitutes.values)
    assert others - pooled and not values & (others - pooled)
    public = set(frame.filter(~pl.col("source").is_in(FICTIONAL_SOURCES) & (pl.col("split") != "train"))["answer"])
    assert public & values - set(frame.filter(pl.col("split") == "train")["answer"])  # real-world ones are shared

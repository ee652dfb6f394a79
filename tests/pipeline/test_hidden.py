"""Hidden test split (episodes.hidden_test): the published test files carry no hidden column, the ground truth sits
in the answers folder (aligned row groups, bound by checksum), both are deterministic and regenerate from code with
the build's key (pipeline.hiddenkey) but not from the published seed alone,
validate checks the hidden split through its answers, the card, `datasets` and training treat it as hidden, and
publishing never pushes the answers."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from datasets import load_dataset
from test_publish import REPO, make_project, remote_dataset, run_publish

from pipeline import episodes as episodes_stage
from pipeline import hiddenkey
from pipeline.checksums import file_sha256
from pipeline.episodes import FactsError, build_episodes, generate_episodes, main
from pipeline.params import EpisodesParams, params_hash
from pipeline.pools import stored_pools
from pipeline.schema import (
    ANSWERS_SCHEMA,
    CARD_NAME,
    EPISODE_SCHEMA,
    HIDDEN_COLUMNS,
    MANIFEST_NAME,
    SPLITS,
    VISIBLE_COLUMNS,
    VISIBLE_SCHEMA,
    AnswersManifest,
    Manifest,
)
from pipeline.validate import validate
from pipeline.writer import OutputError, staging_all, write_manifest
from reward_api.store import EpisodeStore, StoreError
from tests.conftest import SEED, SMALL_EPISODES, write_params
from tests.hiddenbuild import HIDDEN, HIDDEN_KEY, build_hidden
from tests.hubstandin import HubError, hub_standin
from train.data import stream_episodes

REPO_ROOT = Path(__file__).resolve().parents[2]
TOKEN = "hf_standin_token"


@pytest.fixture(scope="session")
def hidden_build(tmp_path_factory, hidden_facts_dir) -> tuple[Path, Path]:
    return build_hidden(tmp_path_factory.mktemp("hidden"), hidden_facts_dir)


def manifests(episodes: Path, answers: Path) -> tuple[Manifest, AnswersManifest]:
    return (
        Manifest.model_validate_json((episodes / MANIFEST_NAME).read_text()),
        AnswersManifest.model_validate_json((answers / MANIFEST_NAME).read_text()),
    )


def test_hidden_test_changes_the_params_hash():
    assert params_hash(SEED, HIDDEN.content()) != params_hash(SEED, SMALL_EPISODES.content())
    unset = {key: value for key, value in SMALL_EPISODES.model_dump().items() if key != "hidden_test"}
    assert EpisodesParams.model_validate(unset).hidden_test is False


def test_a_manifest_written_before_hidden_splits_still_loads(dataset_dir):
    old = json.loads((dataset_dir / MANIFEST_NAME).read_text())
    for key in ("hidden_splits", "answers_sha256"):
        old.pop(key)
    manifest = Manifest.model_validate(old)
    assert manifest.hidden_splits == [] and manifest.answers_sha256 is None


def test_published_test_files_carry_no_hidden_column(hidden_build):
    episodes, answers = hidden_build
    manifest, kept = manifests(episodes, answers)
    assert manifest.hidden_splits == ["test"] and manifest.answers_sha256 == file_sha256(answers / MANIFEST_NAME)
    assert kept.params_hash == manifest.params_hash
    tests = [s for s in manifest.shards if s.split == "test"]
    assert [s.path for s in kept.shards] == [s.path for s in tests]
    for shard in manifest.shards:
        schema = pq.read_schema(episodes / shard.path)
        if shard.split == "test":
            assert schema.names == list(VISIBLE_COLUMNS) and not set(HIDDEN_COLUMNS) & set(schema.names)
            assert schema.equals(VISIBLE_SCHEMA, check_metadata=False)
        else:
            assert schema.equals(EPISODE_SCHEMA, check_metadata=False)
    for shard in tests:
        published, truth = pq.ParquetFile(episodes / shard.path), pq.ParquetFile(answers / shard.path)
        assert truth.schema_arrow.equals(ANSWERS_SCHEMA, check_metadata=False)
        groups = [published.metadata.row_group(i).num_rows for i in range(published.metadata.num_row_groups)]
        assert groups == [truth.metadata.row_group(i).num_rows for i in range(truth.metadata.num_row_groups)]
        ids = published.read(columns=["episode_id"]).column(0)
        assert ids.equals(truth.read(columns=["episode_id"]).column(0))
        assert ids.to_pylist() == list(range(shard.first_id, shard.first_id + shard.num_rows))
    assert not list(episodes.rglob("*answers*")) and sorted(p.name for p in answers.iterdir()) == [
        "data",
        "manifest.json",
    ]


def joined(episodes: Path, answers: Path, path: str) -> pa.Table:
    """A hidden shard's published columns and its ground truth as one EPISODE_SCHEMA table."""
    published, truth = pq.read_table(episodes / path), pq.read_table(answers / path)
    assert published.column("episode_id").equals(truth.column("episode_id"))
    columns = [(published if name in VISIBLE_COLUMNS else truth).column(name) for name in EPISODE_SCHEMA.names]
    return pa.Table.from_arrays(columns, schema=EPISODE_SCHEMA)


def test_hidden_rows_regenerate_with_the_key_and_not_from_the_published_seed(hidden_build, hidden_facts_dir):
    """The joined files equal the rows generated again from (key, seed, id); without the key, the published seed
    and the same facts give other corrupt positions. The published splits regenerate from the seed and the facts."""
    episodes, answers = hidden_build
    manifest, _ = manifests(episodes, answers)
    facts = pq.read_table(hidden_facts_dir / "facts.parquet")
    pools = stored_pools(facts.schema.metadata)
    split_key = hiddenkey.draw_key(HIDDEN_KEY, manifest.seed, "test")
    same = total = 0
    for shard in manifest.shards:
        stored = pq.read_table(episodes / shard.path)
        ids = np.arange(shard.first_id, shard.first_id + shard.num_rows)
        if shard.split != "test":
            assert generate_episodes(facts, pools, manifest.seed, shard.split, ids[::7]).equals(
                stored.take(pa.array(ids[::7] - shard.first_id))
            )
            continue
        stored = joined(episodes, answers, shard.path)
        assert generate_episodes(facts, pools, manifest.seed, "test", ids, split_key).equals(stored)
        guess = generate_episodes(facts, pools, manifest.seed, "test", ids)
        pairs = zip(guess["corrupt_ids"].to_pylist(), stored["corrupt_ids"].to_pylist(), strict=True)
        same += sum(a == b for a, b in pairs)
        total += shard.num_rows
    assert total == HIDDEN.test and same < 0.05 * total, f"{same} of {total} positions follow from the seed alone"


@pytest.mark.parametrize("key", [None, b"another key of at least thirty-two characters"], ids=["unkeyed", "other"])
def test_facts_not_built_with_the_builds_key_are_refused(facts_dir, hidden_facts_dir, tmp_path, key):
    """Facts built without the key (or with another) would let the published seed rebuild the fictional answers."""
    folder = facts_dir if key is None else hidden_facts_dir
    with pytest.raises(FactsError, match="built (without|with another) CONTEXTCORRUPTION_HIDDEN_KEY"):
        build_episodes(
            folder, tmp_path / "episodes", HIDDEN, SEED, answers_dir=tmp_path / "answers", hidden_key=key or HIDDEN_KEY
        )
    assert not list(tmp_path.iterdir()), "nothing staged"


def test_the_stage_without_a_key_stops_in_one_line_before_any_work(hidden_facts_dir, tmp_path):
    write_params(tmp_path, episodes=HIDDEN)
    env = {k: v for k, v in os.environ.items() if k != hiddenkey.KEY_ENV} | {"PYTHONPATH": str(REPO_ROOT)}
    code = (
        "from pathlib import Path; from pipeline.episodes import main; "
        f"main(Path('params.yaml'), Path({str(hidden_facts_dir)!r}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1
    assert done.stderr.strip().startswith(f"episodes: episodes.hidden_test is true: {hiddenkey.KEY_ENV} must hold")
    assert len(done.stderr.strip().splitlines()) == 1 and sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]


def snapshot(*folders: Path) -> dict[str, bytes]:
    return {
        f"{folder.name}/{p.relative_to(folder).as_posix()}": p.read_bytes()
        for folder in folders
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("variant", ["two-workers", "small-chunks"])
def test_hidden_build_is_the_same_bytes_whatever_the_workers_or_chunks(
    variant, hidden_build, hidden_facts_dir, tmp_path, monkeypatch
):
    params = HIDDEN.model_copy(update={"workers": 2}) if variant == "two-workers" else HIDDEN
    if variant == "small-chunks":
        monkeypatch.setattr(episodes_stage, "CHUNK_ROWS", 100)  # one 64-row group at a time
    build_episodes(
        hidden_facts_dir, tmp_path / "episodes", params, SEED, answers_dir=tmp_path / "answers", hidden_key=HIDDEN_KEY
    )
    assert snapshot(tmp_path / "episodes", tmp_path / "answers") == snapshot(*hidden_build)


@pytest.mark.parametrize("given", [{"hidden_key": HIDDEN_KEY}, {"answers_dir": "answers"}], ids=["folder", "key"])
def test_hidden_test_needs_an_answers_folder_and_a_key(hidden_facts_dir, tmp_path, given):
    with pytest.raises(ValueError, match="hidden_test is true: pass answers_dir, .* and hidden_key"):
        build_episodes(hidden_facts_dir, tmp_path / "episodes", HIDDEN, SEED, **given)
    assert not (tmp_path / "episodes").exists()


def test_validate_checks_the_hidden_split_through_its_answers(hidden_build):
    metrics = validate(hidden_build[0], answers=hidden_build[1])
    assert metrics["violation_examples"] == {}
    assert metrics["episodes"] == {"total": 1800, **SMALL_EPISODES.counts()}
    assert set(metrics["violations"].values()) == {0}
    # The test split's answer types are its answers file's: every episode is counted, the hidden ones included.
    assert sum(metrics["answer_type"].values()) == 1800


def copy_build(hidden_build, tmp_path) -> tuple[Path, Path]:
    for folder in hidden_build:
        shutil.copytree(folder, tmp_path / folder.name)
    return tmp_path / "episodes", tmp_path / "answers"


def rebind(episodes: Path, answers: Path) -> None:
    """Keep both manifests' checksums true after editing a file, so only the edited content can fail."""
    manifest, kept = manifests(episodes, answers)
    write_manifest(answers, kept.model_copy(update={"shards": [_fresh(answers, s) for s in kept.shards]}))
    shards = [_fresh(episodes, s) for s in manifest.shards]
    write_manifest(
        episodes,
        manifest.model_copy(update={"shards": shards, "answers_sha256": file_sha256(answers / MANIFEST_NAME)}),
    )


def _fresh(root: Path, shard):
    return shard.model_copy(
        update={"bytes": (root / shard.path).stat().st_size, "sha256": file_sha256(root / shard.path)}
    )


def test_validate_names_a_broken_answer_a_leaked_column_and_missing_answers(hidden_build, tmp_path):
    episodes, answers = copy_build(hidden_build, tmp_path)
    path = "data/test-00000-of-00001.parquet"
    truth, published = pq.read_table(answers / path).to_pylist(), pq.read_table(episodes / path).to_pylist()
    # an episode whose first corrupt document does not mention the answer (an inversion's denies it)
    row = next(
        i for i, t in enumerate(truth) if t["answer"] not in published[i]["documents"][t["corrupt_ids"][0]]["content"]
    )
    target = truth[row]
    corrupt = target["corrupt_ids"][0]
    target["doc_claims"][corrupt] = target["answer"]  # a corrupt document asserting the true answer
    pq.write_table(pa.Table.from_pylist(truth, schema=ANSWERS_SCHEMA), answers / path, row_group_size=64)
    rebind(episodes, answers)
    examples = validate(episodes, answers=answers)["violation_examples"]
    # the published document does not state the edited claim either: its text comes from the other file
    assert examples == {
        "corrupt_claims_false": [target["episode_id"]],
        "documents_state_claims": [target["episode_id"]],
    }

    pq.write_table(joined(episodes, answers, path), episodes / path, row_group_size=64)  # ground truth published
    rebind(episodes, answers)
    examples = validate(episodes, answers=answers)["violation_examples"]
    assert examples["hidden_columns_unpublished"] == [
        f"{path}: split test is hidden but the file has columns {list(HIDDEN_COLUMNS)}"
    ]

    (answers / path).unlink()
    examples = validate(episodes, answers=answers)["violation_examples"]
    assert f"answers/{path}: missing" in examples["answers_match"]
    examples = validate(episodes)["violation_examples"]
    assert examples["answers_match"] == ["answers/manifest.json: missing; splits ['test'] are hidden"]


def test_validate_reports_a_truncated_hidden_split_file_instead_of_crashing(hidden_build, tmp_path):
    episodes, answers = copy_build(hidden_build, tmp_path)
    path = "data/test-00000-of-00001.parquet"
    (episodes / path).write_bytes((episodes / path).read_bytes()[:100])

    examples = validate(episodes, answers=answers)["violation_examples"]
    assert f"{path}: bytes or sha256 differ from the manifest" in examples["files_match_manifest"]
    assert examples["hidden_columns_unpublished"] == [
        f"{path}: split test is hidden but the file's schema cannot be read"
    ]


def test_stage_writes_the_answers_beside_the_episodes_and_validate_reads_them(hidden_facts_dir, tmp_path, monkeypatch):
    write_params(tmp_path, episodes=HIDDEN)
    monkeypatch.setenv(hiddenkey.KEY_ENV, HIDDEN_KEY.decode())
    main(tmp_path / "params.yaml", hidden_facts_dir, tmp_path / "data" / "episodes")
    assert (tmp_path / "data" / "answers" / MANIFEST_NAME).is_file()
    (tmp_path / "data" / "facts").mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.validate"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    metrics = json.loads((tmp_path / "data" / "metrics" / "dataset.json").read_text())
    assert metrics["episodes"]["test"] == HIDDEN.test and set(metrics["violations"].values()) == {0}


def test_answers_of_another_build_are_refused_by_the_server_and_validate(hidden_build, hidden_facts_dir, tmp_path):
    episodes, answers = tmp_path / "episodes", tmp_path / "answers"
    build_episodes(hidden_facts_dir, episodes, HIDDEN, SEED + 1, answers_dir=answers, hidden_key=HIDDEN_KEY)
    shutil.rmtree(answers)
    shutil.copytree(hidden_build[1], answers)  # the answers of the build with SEED

    with pytest.raises(StoreError, match="answers of another build"):
        EpisodeStore(episodes, answers=answers, preload_keys=False)
    assert validate(episodes, answers=answers)["violation_examples"]["answers_match"] == [
        "answers/manifest.json: another build's (params_hash or sha256 differs from manifest.json)"
    ]


def test_a_build_beside_a_hidden_one_keeps_its_answers(hidden_facts_dir, tmp_path):
    """Dataset folders side by side share the default answers folder (`answers` beside each): a second build there
    deleted the first's hidden ground truth, which only its key makes again. The first's own rebuild replaces it."""
    first, answers = build_hidden(tmp_path, hidden_facts_dir)
    before = snapshot(first, answers)
    refusal = f"{answers}: holds the ground truth of another build's hidden splits"
    with pytest.raises(OutputError, match=re.escape(refusal)):
        build_episodes(hidden_facts_dir, tmp_path / "other", SMALL_EPISODES, SEED, answers_dir=answers)
    assert snapshot(first, answers) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answers", "episodes"]
    build_episodes(hidden_facts_dir, first, SMALL_EPISODES, SEED, answers_dir=answers)
    assert AnswersManifest.model_validate_json((answers / MANIFEST_NAME).read_text()).shards == []


# Prepended to the stage: SIGKILL at the k-th (argv[1]) rename of its two folders: the old episodes and answers
# folders aside, then the new ones in.
KILL_AMONG_FOLDERS = """
import os, signal, sys
from pathlib import Path
_replace, _calls = os.replace, []
def _killing_replace(src, dst):
    if Path(dst).parent.name == "data":
        if len(_calls) == int(sys.argv[1]):
            os.kill(os.getpid(), signal.SIGKILL)
        _calls.append(dst)
    _replace(src, dst)
os.replace = _killing_replace
from pipeline.episodes import main
main(Path("params.yaml"), Path("data/facts"), Path("data/episodes"))
"""


@pytest.mark.parametrize("rename", range(4))
def test_a_build_killed_among_its_two_folders_leaves_the_old_pair_then_reruns_identically(
    hidden_build, hidden_facts_dir, tmp_path, monkeypatch, rename
):
    """The answers folder was renamed in (its old one deleted) before the dataset: a kill between the two left the
    old dataset beside the new build's answers, which the server refused to serve."""
    data = tmp_path / "data"
    episodes, answers = data / "episodes", data / "answers"
    build_episodes(hidden_facts_dir, episodes, HIDDEN, SEED + 1, answers_dir=answers, hidden_key=HIDDEN_KEY)
    before = snapshot(episodes, answers)
    (data / "facts").symlink_to(hidden_facts_dir, target_is_directory=True)
    write_params(tmp_path, episodes=HIDDEN)
    monkeypatch.setenv(hiddenkey.KEY_ENV, HIDDEN_KEY.decode())
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    command = [sys.executable, "-c", KILL_AMONG_FOLDERS, str(rename)]
    killed = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]

    monkeypatch.setattr(episodes_stage, "AUDIT_SECTION", tmp_path / "none.md")  # hidden_build's card has none
    with pytest.raises(RuntimeError, match="stopped"), staging_all([(episodes, Manifest), (answers, AnswersManifest)]):
        assert snapshot(episodes, answers) == before, "the next build starts from the old pair"
        EpisodeStore(episodes, answers=answers, preload_keys=False)
        raise RuntimeError("stopped")
    main(tmp_path / "params.yaml", data / "facts", episodes)
    assert snapshot(episodes, answers) == snapshot(*hidden_build)
    assert sorted(p.name for p in data.iterdir()) == ["answers", "episodes", "facts"]
    EpisodeStore(episodes, answers=answers, preload_keys=False)


def test_card_says_the_test_split_is_hidden_and_how_to_score_it(hidden_build):
    text = (hidden_build[0] / CARD_NAME).read_text()
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["configs"] == [
        {
            "config_name": "default",
            "data_files": [{"split": s, "path": f"data/{s}-*.parquet"} for s in ("train", "validation")],
        },
        {"config_name": "hidden_test", "data_files": [{"split": "test", "path": "data/test-*.parquet"}]},
    ]
    assert "| test (hidden) | 300 | 1,500 - 1,799 | 1 |" in text
    assert "## Hidden split: test" in text and "kept by the server" in text and "POST /score" in text
    assert "no split can be regenerated from the seed below without the key" in text
    assert 'load_dataset(REPO, "hidden_test", split="test")' in text
    assert "data/answers" not in text and "answers folder" not in text  # the ground truth has no public address


def test_datasets_reads_every_split_plain_and_streaming(hidden_build, tmp_path):
    episodes = str(hidden_build[0])
    loaded = load_dataset(episodes, cache_dir=str(tmp_path / "cache"))
    hidden = load_dataset(episodes, "hidden_test", cache_dir=str(tmp_path / "cache"))
    assert {split: loaded[split].num_rows for split in loaded} == {"train": 1200, "validation": 300}
    assert loaded["train"].column_names == EPISODE_SCHEMA.names
    assert list(hidden) == ["test"] and hidden["test"].column_names == list(VISIBLE_COLUMNS)
    assert hidden["test"]["episode_id"] == list(range(1500, 1800))
    streamed = {**load_dataset(episodes, streaming=True), **load_dataset(episodes, "hidden_test", streaming=True)}
    assert sorted(streamed) == sorted(SPLITS)
    assert {split: sum(1 for _ in streamed[split]) for split in SPLITS} == SMALL_EPISODES.counts()
    assert set(next(iter(streamed["test"]))) == set(VISIBLE_COLUMNS)


def test_training_refuses_to_stream_the_hidden_split_naming_the_missing_columns(hidden_build):
    with pytest.raises(ValueError, match=r"split 'test' of .* is hidden: its files lack the columns \['fact_id'"):
        stream_episodes(str(hidden_build[0]), "test")
    row = next(iter(stream_episodes(str(hidden_build[0]), "validation")))
    assert row["episode_id"] == 1200 and row["answer"]


def test_publish_pushes_the_episodes_and_never_the_answers(hidden_build, tmp_path):
    project = make_project(tmp_path, *hidden_build)
    shutil.copytree(hidden_build[1], project / "data" / "answers")
    with hub_standin(token=TOKEN) as hub:
        result = run_publish(project, hub.endpoint)
        assert result.returncode == 0, result.stderr
        remote = remote_dataset(hub, "v1")
    local = {
        p.relative_to(hidden_build[0]).as_posix(): p.read_bytes() for p in hidden_build[0].rglob("*") if p.is_file()
    }
    assert remote == local
    truth = {p.read_bytes() for p in hidden_build[1].rglob("*") if p.is_file()}
    assert not truth & set(remote.values())
    test_file = tmp_path / "remote-test.parquet"
    test_file.write_bytes(remote["data/test-00000-of-00001.parquet"])
    assert not set(HIDDEN_COLUMNS) & set(pq.read_schema(test_file).names)


def test_publish_refuses_a_hidden_split_file_with_hidden_columns(hidden_build, tmp_path):
    project = make_project(tmp_path, *hidden_build)
    episodes = project / "data" / "episodes"
    path = "data/test-00000-of-00001.parquet"
    pq.write_table(joined(episodes, hidden_build[1], path), episodes / path)
    # The manifest's checksums kept true, so only the published columns can fail.
    manifest = Manifest.model_validate_json((episodes / MANIFEST_NAME).read_bytes())
    write_manifest(episodes, manifest.model_copy(update={"shards": [_fresh(episodes, s) for s in manifest.shards]}))
    with hub_standin(token=TOKEN) as hub:
        result = run_publish(project, hub.endpoint)
        assert result.returncode == 1
        with pytest.raises(HubError, match="Repository not found"):  # refused before anything was created
            hub.files(REPO)
    leaked = [name for name in EPISODE_SCHEMA.names if name in HIDDEN_COLUMNS]
    refusal = f"refusing to publish data/episodes: {path}: columns differ from the schema: extra {leaked}"
    assert refusal in result.stderr

"""Each stage's entry point (`python -m pipeline.<stage>`, as DVC runs it) on bad params or a missing or corrupt
input: exit status 1 and one line on stderr that names the key or the file, never a traceback, and no output.
The publish stage's are in test_publish.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import SEED, SMALL_FACTS

ROOT = Path(__file__).resolve().parents[2]
EPISODES = {"train": 300, "validation": 60, "test": 60, "workers": 2, "shard_rows": 128, "row_group_rows": 32}
FACTS = Path("data/facts/facts.parquet")
MANIFEST = Path("data/episodes/manifest.json")


def run_stage(stage: str, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    cmd = [sys.executable, "-m", f"pipeline.{stage}", *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def project(
    root: Path,
    facts: dict | None = None,
    episodes: dict | None = None,
    files: dict | None = None,
    hub: dict | None = None,
) -> Path:
    """A working directory laid out like the repository: params.yaml (valid unless changed) and `files`."""
    params = {
        "seed": SEED,
        "facts": SMALL_FACTS.model_dump(mode="json") | (facts or {}),
        "episodes": EPISODES | (episodes or {}),
        "hub": {"repo_id": "", "revision_tag": "v1", "private": False} | (hub or {}),
    }
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    for path, content in (files or {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(content)
    return root


def assert_one_line_failure(result: subprocess.CompletedProcess, stage: str, *needles: str) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{stage}: "), result.stderr
    for needle in needles:
        assert needle in lines[0]


@pytest.mark.parametrize(
    ("facts", "needle"),
    [
        ({"synthetic_entities": 0}, "params.yaml: facts.synthetic_entities: "),
        # Checked while building: split weights this uneven leave a split of the 438 element facts empty.
        (
            {"sources": ["elements"], "split_weights": {"train": 0.998, "validation": 0.001, "test": 0.001}},
            "facts.split_weights: no fact falls in split",
        ),
    ],
    ids=["bad-param", "empty-split"],
)
def test_facts_stage_names_a_bad_param(tmp_path, facts, needle):
    result = run_stage("facts", project(tmp_path, facts=facts))

    assert_one_line_failure(result, "facts", needle)
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("stage", ["facts", "episodes"])
def test_a_later_stages_bad_param_fails_a_stage_before_its_work(tmp_path, stage):
    """A bad hub section would otherwise surface in the publish stage, after the whole build."""
    result = run_stage(stage, project(tmp_path, hub={"repo_id": "not a repo id!"}))

    assert_one_line_failure(result, stage, "params.yaml: hub.repo_id: ")
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("stage", ["facts", "episodes"])
def test_a_missing_later_section_fails_a_stage_before_its_work(tmp_path, stage):
    """DVC refuses a missing section only at the stage that reads it: `hub` at publish, after the whole build."""
    params = project(tmp_path) / "params.yaml"
    params.write_text(yaml.safe_dump({k: v for k, v in yaml.safe_load(params.read_text()).items() if k != "hub"}))
    result = run_stage(stage, tmp_path)

    assert_one_line_failure(result, stage, "params.yaml: missing section 'hub'")
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    ("episodes", "files", "needles"),
    [
        ({"workers": 0}, {}, ["params.yaml: episodes.workers: "]),
        ({"shard_multiple": 4000}, {}, ["shard_multiple (4,000) makes each split at least 4,000 shards, 12,000 in"]),
        ({}, {}, [f"{FACTS}: no facts table; run the facts stage"]),
        # A truncated file: no Parquet footer. With workers: 2 it used to surface as a BrokenProcessPool.
        ({}, {FACTS: b"PAR1" + bytes(60)}, [f"{FACTS}: not a Parquet file (", "); re-run the facts stage"]),
    ],
    ids=["bad-param", "forced-shards", "missing-facts", "corrupt-facts"],
)
def test_episodes_stage_names_bad_params_and_facts_before_any_work(tmp_path, episodes, files, needles):
    result = run_stage("episodes", project(tmp_path, episodes=episodes, files=files))

    assert_one_line_failure(result, "episodes", *needles)
    assert sorted(p.name for p in (tmp_path / "data").glob("*")) == (["facts"] if files else [])


@pytest.mark.parametrize(
    ("files", "needle"),
    [
        ({}, f"{MANIFEST}: missing; build the dataset (dvc repro episodes)"),
        ({MANIFEST: b'{"seed": 1, "shards": '}, f"{MANIFEST}: not a valid manifest (Invalid JSON: "),
        ({f"{MANIFEST}/stray": b""}, f"{MANIFEST}: cannot be read (Is a directory)"),
    ],
    ids=["missing-manifest", "corrupt-manifest", "manifest-is-a-folder"],
)
def test_validate_stage_names_a_missing_or_corrupt_manifest(tmp_path, files, needle):
    result = run_stage("validate", project(tmp_path, files=files))

    assert_one_line_failure(result, "validate", needle, "dvc repro episodes")
    assert not (tmp_path / "data" / "metrics").exists()


@pytest.mark.parametrize("stage", ["facts", "episodes", "validate"])
def test_a_stage_asked_for_help_or_given_an_unknown_option_does_no_work(tmp_path, stage):
    """`--help` prints the usage; a mistyped option fails naming it. Neither builds from the default params."""
    project(tmp_path)
    helped = run_stage(stage, tmp_path, "--help")
    assert helped.returncode == 0 and helped.stdout.startswith(f"usage: python -m pipeline.{stage}"), helped.stderr
    wrong = run_stage(stage, tmp_path, "--seed", "3")
    assert wrong.returncode == 2 and "unrecognized arguments: --seed 3" in wrong.stderr, wrong.stderr
    assert not (tmp_path / "data").exists()


def test_the_stages_read_and_write_where_their_options_say(tmp_path):
    """--params, --out, --facts, --data, --answers and --metrics: a build entirely outside data/."""
    project(tmp_path)
    (tmp_path / "params.yaml").rename(tmp_path / "small.yaml")
    build = tmp_path / "build"
    steps = [
        ("facts", "--params", "small.yaml", "--out", "build/facts"),
        ("episodes", "--params", "small.yaml", "--facts", "build/facts", "--out", "build/episodes"),
        ("validate", "--data", "build/episodes", "--answers", "build/answers", "--metrics", "build/metrics.json"),
    ]
    for stage, *args in steps:
        result = run_stage(stage, tmp_path, *args)
        assert result.returncode == 0, result.stderr
    assert (build / "facts" / "facts.parquet").is_file() and (build / "answers" / "manifest.json").is_file()
    metrics = json.loads((build / "metrics.json").read_text())
    assert metrics["episodes"]["total"] == EPISODES["train"] + EPISODES["validation"] + EPISODES["test"]
    assert not any(metrics["violations"].values()) and not (tmp_path / "data").exists()
    # the card's audit section comes from the checkout, not from a benchmarks/ folder where the stage runs
    assert "## Shortcut audit" in (build / "episodes" / "README.md").read_text()


def test_a_build_without_the_audit_section_says_so(tmp_path, monkeypatch, caplog):
    """An installed package has no benchmarks/ beside it: its cards lack the audit, and the build says so."""
    from pipeline import episodes

    monkeypatch.setattr(episodes, "AUDIT_SECTION", tmp_path / "benchmarks" / "results" / "audit.md")
    assert episodes._audit_section() == ""
    assert caplog.messages == [
        f"episodes: {tmp_path}/benchmarks/results/audit.md is not beside this package: the dataset card has no "
        "shortcut audit"
    ]


def test_a_hub_source_that_cannot_be_read_is_one_line(tmp_path):
    """Offline, facts.sources: [nq_open] ended `dvc repro` with a traceback around this line."""
    offline = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}  # an empty cache: nothing to fall back on
    result = run_stage("facts", project(tmp_path, facts={"sources": ["nq_open"]}), **offline)

    needles = ("facts.sources: nq_open could not be read", "remove it from facts.sources")
    assert_one_line_failure(result, "facts", *needles)
    assert not (tmp_path / "data").exists()


def test_an_output_no_stage_can_write_is_refused_before_any_work(tmp_path):
    """A file where a folder goes or the reverse, the working folder as the dataset, the answers inside the
    dataset (each folder is replaced whole: the ground truth was lost), a folder that is no previous build or holds the
    facts (`--out data` deleted data/facts, and any notes beside it): one line, the old output untouched."""
    project(tmp_path, files={"afile": b"mine", "adir/keep": b"kept"})
    assert run_stage("facts", tmp_path).returncode == 0
    refusals = [
        ("facts", ["--out", "afile"], "afile: is a file, not a folder"),
        ("facts", ["--out", "afile/sub"], "afile is a file, so no folder can be made there"),
        ("episodes", ["--facts", str(FACTS)], f"{FACTS}/facts.parquet: no facts table"),
        ("episodes", ["--out", "."], ".: holds the facts (data/facts)"),  # and is the working folder (test_writer)
        ("episodes", ["--out", "afile"], "afile: is a file, not a folder"),
        ("episodes", ["--out", "build/ds", "--answers", "build/ds/answers"], "must not hold one another"),
        ("episodes", ["--out", "build/answers"], "must not hold one another"),  # the default answers: beside it
        ("episodes", ["--out", "data"], "data: holds the facts (data/facts), which the output would replace"),
        ("episodes", ["--out", "data/facts"], "data/facts: holds the facts (data/facts)"),
        ("episodes", ["--out", "x", "--answers", "data"], "data: holds the facts"),
        ("episodes", ["--out", "adir"], "adir: holds files but no manifest.json of a previous build"),
        ("episodes", ["--out", "/"], "/: is the file system's root"),
        ("validate", ["--metrics", "adir"], "adir: is a folder; give a file name"),
        ("publish", ["--receipt", "adir"], "adir: is a folder; give a file name"),
    ]
    for stage, args, needle in refusals:
        assert_one_line_failure(run_stage(stage, tmp_path, *args), stage, needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "afile", "data", "params.yaml"]
    assert (tmp_path / "afile").read_bytes() == b"mine" and (tmp_path / "adir" / "keep").read_bytes() == b"kept"
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["facts"]

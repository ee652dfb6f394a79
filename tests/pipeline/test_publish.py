"""The publish stage end to end: `python -m pipeline.publish` against the loopback Hub stand-in."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from huggingface_hub import HfApi, snapshot_download

from pipeline.checksums import file_sha256
from pipeline.episodes import build_episodes
from pipeline.publish import METRICS
from pipeline.publish import main as publish_main
from pipeline.schema import MANIFEST_NAME, Manifest
from pipeline.validate import main as validate_main
from pipeline.writer import write_manifest
from tests.conftest import SEED, SMALL_EPISODES, write_params
from tests.hubstandin import HubError, hub_standin

TOKEN = "hf_standin_token"
REPO = "acme/context-corruption"


def make_project(root: Path, dataset_dir: Path, answers_dir: Path | None = None) -> Path:
    """A working directory laid out like the repository: params.yaml, a built data/episodes and its metrics from the
    real validate stage (a hidden build's checked with its answers folder, which stays outside the project)."""
    shutil.copytree(dataset_dir, root / "data" / "episodes")
    validate_main(root / "data" / "episodes", answers_dir or root / "data" / "answers", root / METRICS)
    write_hub_params(root, repo_id=REPO)
    return root


@pytest.fixture
def project(tmp_path, dataset_dir) -> Path:
    return make_project(tmp_path, dataset_dir)


@pytest.fixture
def hub():
    with hub_standin(token=TOKEN) as standin:
        yield standin


@pytest.fixture(scope="module")
def published(tmp_path_factory, dataset_dir):
    """One publish, shared by the tests that only read its result: (project, hub, completed process)."""
    project = make_project(tmp_path_factory.mktemp("published"), dataset_dir)
    with hub_standin(token=TOKEN) as standin:
        yield project, standin, run_publish(project, standin.endpoint)


def write_hub_params(project: Path, repo_id: str, revision_tag: str = "v1", private: bool = True) -> None:
    hub = {"repo_id": repo_id, "revision_tag": revision_tag, "private": private}
    write_params(project, 1, hub=hub)


def run_publish(
    project: Path, endpoint: str, token: str | None = TOKEN, **extra_env: str
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env |= {"HF_ENDPOINT": endpoint, "HF_HOME": str(project / ".hf-home"), "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    env |= extra_env
    if token is not None:
        env["HF_TOKEN"] = token
    cmd = [sys.executable, "-m", "pipeline.publish"]
    return subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=120)


def receipt(project: Path) -> dict:
    return json.loads((project / "data" / "publish" / "receipt.json").read_text())


def local_files(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def remote_dataset(hub, revision: str) -> dict[str, bytes]:
    files = hub.files(REPO, revision)
    assert files.pop(".gitattributes")  # the Hub's own file in every repo
    return files


def test_publish_uploads_the_folder_and_tags_the_commit(published):
    project, hub, result = published

    assert result.returncode == 0, result.stderr
    local = local_files(project / "data" / "episodes")
    assert remote_dataset(hub, "v1") == local
    assert hub.tags(REPO) == {"v1": hub.resolve(REPO, "main")}
    assert hub.is_private(REPO)
    assert receipt(project) == {
        "status": "published",
        "reason": None,
        "repo_id": REPO,
        "revision_tag": "v1",
        "commit": hub.resolve(REPO, "v1"),
        "url": f"{hub.endpoint}/datasets/{REPO}/tree/v1",
        "files": len(local),
        "bytes": sum(len(content) for content in local.values()),
    }
    text = (project / "data" / "publish" / "receipt.json").read_text()
    assert list(json.loads(text)) == sorted(json.loads(text)), "keys are written in a fixed order"


def test_snapshot_download_of_the_tag_returns_the_published_bytes(published, tmp_path):
    project, hub, _ = published

    path = snapshot_download(
        REPO, repo_type="dataset", revision="v1", endpoint=hub.endpoint, token=TOKEN, cache_dir=tmp_path / "cache"
    )

    downloaded = local_files(Path(path))
    assert downloaded.pop(".gitattributes")
    assert downloaded == local_files(project / "data" / "episodes")


def test_publish_without_hf_xet_takes_the_plain_commit_path(project, hub):
    result = run_publish(project, hub.endpoint, HF_HUB_DISABLE_XET="1")

    assert result.returncode == 0, result.stderr
    assert remote_dataset(hub, "v1") == local_files(project / "data" / "episodes")
    assert receipt(project)["commit"] == hub.tags(REPO)["v1"]


@pytest.mark.parametrize(
    ("repo_id", "token", "reason"),
    [
        ("", TOKEN, "hub.repo_id is empty"),
        (REPO, None, "no Hugging Face token (HF_TOKEN is unset and there is no stored login)"),
    ],
)
def test_without_repo_id_or_token_publishing_is_skipped_in_one_line(project, hub, repo_id, token, reason):
    write_hub_params(project, repo_id=repo_id)

    result = run_publish(project, hub.endpoint, token=token)

    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"Publishing skipped: {reason}. To publish, set hub.repo_id in params.yaml "
        "(e.g. your-org/context-corruption), export HF_TOKEN and run `dvc repro --force --single-item publish`."
    ]
    assert receipt(project)["status"] == "skipped"
    assert receipt(project)["reason"] == reason
    with pytest.raises(HubError, match="Repository not found"):
        hub.files(REPO)


def test_a_hub_error_exits_non_zero_and_leaves_no_receipt(project, hub):
    stale = project / "data" / "publish" / "receipt.json"
    stale.parent.mkdir(parents=True)
    stale.write_text('{"status": "published"}\n')  # left by an earlier run: it must not vouch for this one

    result = run_publish(project, hub.endpoint, token="hf_wrong_token")

    assert result.returncode == 1
    assert f"dataset '{REPO}' failed while creating the repo" in result.stderr
    assert "401" in result.stderr
    assert not (project / "data" / "publish" / "receipt.json").exists()


@pytest.mark.parametrize("private", [False, True], ids=["public-repo", "private-repo"])
def test_an_existing_repo_of_the_other_visibility_is_refused_before_any_upload(project, hub, private):
    HfApi(endpoint=hub.endpoint, token=TOKEN).create_repo(REPO, repo_type="dataset", private=private)
    write_hub_params(project, repo_id=REPO, private=not private)  # create_repo(exist_ok=True) would keep it as is

    result = run_publish(project, hub.endpoint)

    assert result.returncode == 1 and "Traceback" not in result.stderr
    visibility, wanted = ("private", "false") if private else ("public", "true")
    assert f"dataset '{REPO}' exists and is {visibility}, but params.yaml has hub.private: {wanted}" in result.stderr
    assert len(hub.history(REPO)) == 1 and hub.tags(REPO) == {}, "nothing uploaded or tagged"
    assert hub.is_private(REPO) is private, "the visibility is never changed"
    assert not (project / "data" / "publish" / "receipt.json").exists()


def test_a_corrupt_manifest_is_named_in_one_line_and_nothing_is_pushed(project, hub):
    (project / "data" / "episodes" / "manifest.json").write_text('{"seed": 1, "shards": [')

    result = run_publish(project, hub.endpoint)

    assert result.returncode == 1 and "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("publish: data/episodes/manifest.json: not a valid manifest (Invalid JSON: ")
    assert line.endswith("); build the dataset (dvc repro episodes)")
    with pytest.raises(HubError, match="Repository not found"):
        hub.files(REPO)
    assert not (project / "data" / "publish" / "receipt.json").exists()


def test_a_shard_of_another_schema_is_refused_though_the_manifest_was_edited_to_match(project, hub):
    episodes = project / "data" / "episodes"
    manifest = Manifest.model_validate_json((episodes / MANIFEST_NAME).read_text())
    shard = manifest.shards[0]
    table = pq.read_table(episodes / shard.path)
    pq.write_table(table.append_column("gold", table["answer"]), episodes / shard.path)
    edited = shard.model_copy(update={"bytes": (episodes / shard.path).stat().st_size})
    edited = edited.model_copy(update={"sha256": file_sha256(episodes / shard.path)})
    write_manifest(episodes, manifest.model_copy(update={"shards": [edited, *manifest.shards[1:]]}))

    result = run_publish(project, hub.endpoint)

    assert result.returncode == 1 and "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert f"refusing to publish data/episodes: {shard.path}: columns differ from the schema: extra ['gold']" in line
    with pytest.raises(HubError, match="Repository not found"):
        hub.files(REPO)


def _unvalidated(project: Path) -> None:
    (project / METRICS).unlink()


def _metrics_nested_too_deep(project: Path) -> None:
    """json.loads raised RecursionError on it: a traceback."""
    (project / METRICS).write_text("[" * 100_000)


def _rebuilt_since_validated(project: Path) -> None:
    """The episodes stage ran again (here: another seed in the manifest) and validate did not."""
    manifest = project / "data" / "episodes" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"seed": ', '"seed": 1'))


def _failed_validation(project: Path) -> None:
    """What validate leaves when an invariant fails: the metrics, counting the violations (and a non-zero exit)."""
    metrics = json.loads((project / METRICS).read_text())
    metrics["violations"]["answer_strict_plurality"] = 3
    (project / METRICS).write_text(json.dumps(metrics))


def _another_builds_card(project: Path) -> None:
    """Another build's row counts: `load_dataset` of the published tag failed (NonMatchingSplitsSizesError)."""
    card = project / "data" / "episodes" / "README.md"
    card.write_text(card.read_text().replace("num_examples: ", "num_examples: 1"))


def _card_without_front_matter(project: Path) -> None:
    card = project / "data" / "episodes" / "README.md"
    card.write_text(card.read_text().split("---\n", 2)[2])


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        (_unvalidated, f"{METRICS} holds no validation results; run `dvc repro validate`"),
        (_metrics_nested_too_deep, f"{METRICS} holds no validation results; run `dvc repro validate`"),
        (_rebuilt_since_validated, f"{METRICS} is the validation of another build; run `dvc repro validate`"),
        (_failed_validation, f"it fails validation (answer_strict_plurality: see {METRICS}); rebuild it"),
        (_another_builds_card, "README.md's dataset_info differ from what manifest.json gives (another build's"),
        (_card_without_front_matter, "README.md has no readable YAML front matter; rebuild the dataset"),
    ],
)
def test_a_build_not_validated_or_not_its_cards_is_refused_and_nothing_is_pushed(project, hub, change, refusal):
    change(project)

    result = run_publish(project, hub.endpoint)

    assert result.returncode == 1 and "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("publish: refusing to publish data/episodes: ") and refusal in line
    with pytest.raises(HubError, match="Repository not found"):
        hub.files(REPO)
    assert not (project / "data" / "publish" / "receipt.json").exists()


def _answers_copied_in(project: Path) -> None:
    """The ground truth folder copied into the dataset folder: upload_folder published it whole."""
    shutil.copytree(project / "data" / "episodes" / "data", project / "data" / "episodes" / "answers" / "data")


def _notes_and_a_temporary_file(project: Path) -> None:
    (project / "data" / "episodes" / "notes.txt").write_text("mine")
    (project / "data" / "episodes" / "data" / ".train-00000-of-00002.parquet.tmp").write_bytes(b"half")


def _card_removed(project: Path) -> None:
    (project / "data" / "episodes" / "README.md").unlink()


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (_answers_copied_in, "not answers/data/test-"),
        (_notes_and_a_temporary_file, "not data/.train-00000-of-00002.parquet.tmp, notes.txt;"),
        (_card_removed, "not README.md (missing);"),
    ],
)
def test_a_file_the_build_did_not_write_is_refused_and_nothing_is_pushed(project, hub, change, named):
    change(project)

    result = run_publish(project, hub.endpoint)

    assert result.returncode == 1 and "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("publish: refusing to publish data/episodes: the build wrote README.md, manifest.json and ")
    assert named in line
    with pytest.raises(HubError, match="Repository not found"):
        hub.files(REPO)
    assert not (project / "data" / "publish" / "receipt.json").exists()


@pytest.mark.parametrize(("route", "commits_after_failure"), [("commit", 1), ("tag", 2)])
def test_an_interrupted_publish_completes_when_re_run(project, hub, route, commits_after_failure):
    hub.fail(route, status=400)

    failed = run_publish(project, hub.endpoint)

    assert failed.returncode == 1
    assert "re-run `dvc repro publish` to resume" in failed.stderr
    assert not (project / "data" / "publish" / "receipt.json").exists()
    assert hub.tags(REPO) == {}
    assert len(hub.history(REPO)) == commits_after_failure  # the initial commit, plus the upload if it got through

    assert run_publish(project, hub.endpoint).returncode == 0
    assert len(hub.history(REPO)) == 2, "the re-run uploads only what is missing"
    assert remote_dataset(hub, "v1") == local_files(project / "data" / "episodes")
    assert receipt(project)["commit"] == hub.tags(REPO)["v1"]


def test_ctrl_c_mid_upload_ends_in_one_line_and_leaves_no_receipt(tmp_path, monkeypatch, caplog):
    def interrupted_upload(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("pipeline.publish.get_token", lambda: TOKEN)
    monkeypatch.setattr("pipeline.publish.publish", interrupted_upload)
    write_hub_params(tmp_path, repo_id=REPO)
    stale = tmp_path / "receipt.json"
    stale.write_text('{"status": "published"}\n')

    with pytest.raises((SystemExit, KeyboardInterrupt)) as raised:  # one let through fails this test, not the session
        publish_main(["--params", str(tmp_path / "params.yaml"), "--receipt", str(stale)])

    assert raised.type is SystemExit and raised.value.code == 130
    assert caplog.messages == [
        "publish: interrupted; no receipt was written; re-run `dvc repro publish` to resume (files already uploaded "
        "are skipped)"
    ]
    assert not stale.exists()


def test_a_tag_never_moves_and_a_new_tag_mirrors_the_folder(project, hub, facts_dir):
    assert run_publish(project, hub.endpoint).returncode == 0
    v1 = remote_dataset(hub, "v1")
    episodes = project / "data" / "episodes"
    shards = list((episodes / "data").glob("*.parquet"))
    # The episodes and validate stages run again with fewer train episodes: fewer shards, every file another.
    build_episodes(facts_dir, episodes, SMALL_EPISODES.model_copy(update={"train": 700}), SEED)
    validate_main(episodes, project / "data" / "answers", project / METRICS)
    assert len(list((episodes / "data").glob("*.parquet"))) < len(shards)

    moved = run_publish(project, hub.endpoint)

    assert moved.returncode == 1
    assert "set a new hub.revision_tag" in moved.stderr
    assert remote_dataset(hub, "v1") == v1
    write_hub_params(project, repo_id=REPO, revision_tag="v2")
    assert run_publish(project, hub.endpoint).returncode == 0
    assert remote_dataset(hub, "v2") == local_files(episodes), "files the folder no longer has are deleted"
    assert remote_dataset(hub, "v1") == v1


def test_load_dataset_by_repo_id_and_tag_reads_every_split(published):
    project, hub, _ = published
    script = (
        "import json, sys, datasets\n"
        "full = datasets.load_dataset(sys.argv[1], revision='v1')\n"
        "stream = datasets.load_dataset(sys.argv[1], revision='v1', streaming=True)\n"
        "print(json.dumps({s: [full[s].num_rows, sum(1 for _ in stream[s])] for s in full}))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env |= {"HF_ENDPOINT": hub.endpoint, "HF_HOME": str(project / ".hf-read"), "HF_TOKEN": TOKEN, "USE_TORCH": "0"}
    result = subprocess.run(
        [sys.executable, "-c", script, REPO], env=env, capture_output=True, text=True, timeout=300, check=True
    )

    splits = json.loads((project / "data" / "episodes" / "manifest.json").read_text())["splits"]
    assert json.loads(result.stdout.splitlines()[-1]) == {
        name: [info["num_rows"]] * 2 for name, info in splits.items()
    }


def test_re_publishing_unchanged_data_changes_nothing(published):
    """Runs last of the shared-publish tests: it publishes again into the same stand-in."""
    project, hub, _ = published
    first = (project / "data" / "publish" / "receipt.json").read_bytes()

    assert run_publish(project, hub.endpoint).returncode == 0

    assert len(hub.history(REPO)) == 2
    assert (project / "data" / "publish" / "receipt.json").read_bytes() == first


def test_a_reused_tag_on_other_files_is_refused_before_main_changes(project, hub):
    assert run_publish(project, hub.endpoint).returncode == 0
    main, v1 = hub.resolve(REPO, "main"), remote_dataset(hub, "v1")
    card = project / "data" / "episodes" / "README.md"
    card.write_text(card.read_text() + "\nEdited after v1 was published.\n")

    result = run_publish(project, hub.endpoint)

    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert hub.history(REPO)[-1] == main and remote_dataset(hub, "main") == v1, "main is untouched"
    assert hub.tags(REPO) == {"v1": main}
    [line] = result.stderr.strip().splitlines()
    assert f"tag 'v1' of {REPO} already names commit {main}, whose files differ from data/episodes" in line
    assert "(first: README.md); nothing was uploaded" in line and "set a new hub.revision_tag" in line
    assert not (project / "data" / "publish" / "receipt.json").exists()


def test_re_publishing_an_older_tag_with_its_files_leaves_main_as_it_is(project, hub):
    card = project / "data" / "episodes" / "README.md"
    original = card.read_bytes()
    assert run_publish(project, hub.endpoint).returncode == 0
    v1 = hub.resolve(REPO, "v1")
    card.write_bytes(original + b"\nv2 card.\n")
    write_hub_params(project, repo_id=REPO, revision_tag="v2")
    assert run_publish(project, hub.endpoint).returncode == 0
    main = hub.resolve(REPO, "main")
    card.write_bytes(original)
    write_hub_params(project, repo_id=REPO, revision_tag="v1")

    result = run_publish(project, hub.endpoint)

    assert result.returncode == 0, result.stderr
    assert receipt(project)["commit"] == v1
    assert hub.resolve(REPO, "main") == main and len(hub.history(REPO)) == 3, "main is not rolled back to v1"
    assert hub.tags(REPO) == {"v1": v1, "v2": main}


@pytest.fixture(scope="module")
def hidden_dataset(tmp_path_factory, hidden_facts_dir) -> tuple[Path, Path]:
    from tests.hiddenbuild import build_hidden

    return build_hidden(tmp_path_factory.mktemp("hidden"), hidden_facts_dir)


@pytest.mark.parametrize("build", ["plain", "hidden"])
def test_a_truncated_shard_is_refused_in_one_line_and_nothing_is_pushed(request, tmp_path, hub, build):
    dataset = (
        (request.getfixturevalue("dataset_dir"), None)
        if build == "plain"
        else request.getfixturevalue("hidden_dataset")
    )
    project = make_project(tmp_path, *dataset)
    name = "data/test-00000-of-00001.parquet"  # the hidden split's file in the hidden build
    shard = project / "data" / "episodes" / name
    shard.write_bytes(shard.read_bytes()[:1000])

    result = run_publish(project, hub.endpoint)

    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"publish: refusing to publish data/episodes: {name}: bytes or sha256 differ from the manifest; "
        "rebuild the dataset (dvc repro episodes)"
    ]
    with pytest.raises(HubError, match="Repository not found"):
        hub.files(REPO)
    assert not (project / "data" / "publish" / "receipt.json").exists()


@pytest.mark.parametrize(("route", "status"), [("commit", 400), ("tag", 500)])  # a commit 500 is retried for 22 s
def test_a_hub_http_error_is_one_line_that_says_what_was_done(project, hub, route, status):
    hub.fail(route, status=status)

    result = run_publish(project, hub.endpoint)

    assert result.returncode == 1 and "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()  # a 5xx's text spans lines ("For more information"): joined here
    assert "re-run `dvc repro publish` to resume" in line
    if route == "commit":
        assert "failed while uploading: Bad request" in line and "Nothing was tagged by this run" in line
    else:
        head = hub.resolve(REPO, "main")
        assert "failed while tagging v1: Server error '500 Internal Server Error'" in line
        assert "For more information check: " in line and "Nothing was tagged" not in line
        assert f"The upload completed as commit {head}; the Hub may or may not hold tag v1" in line

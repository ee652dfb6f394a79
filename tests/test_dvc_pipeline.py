"""`dvc repro` in a temporary clone with small params: every stage runs, a second run does nothing, and a build
killed mid-way leaves nothing a later stage would read and re-runs to byte-identical output."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.params import EXECUTION_KEYS, EpisodesParams
from pipeline.schema import SPLITS
from tests.conftest import SEED, SMALL_EPISODES, SMALL_FACTS, copy_tracked
from tests.pipeline.test_crash import run_killed

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def sh(*cmd: str, cwd: Path, timeout: float = 300, venv_on_path: bool = True) -> subprocess.CompletedProcess:
    path = [p for p in os.environ["PATH"].split(os.pathsep) if Path(p) != BIN]
    env = os.environ | {
        "PATH": os.pathsep.join([str(BIN), *path] if venv_on_path else path),  # the stages' `python`
        "DVC_NO_ANALYTICS": "1",
        "DVC_SITE_CACHE_DIR": str(cwd / ".dvc-site-cache"),
        "HF_TOKEN": "",
    }
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(cmd)} failed:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """The repository's tracked files in a fresh git repo, with small params and publishing off."""
    root = copy_tracked(tmp_path_factory.mktemp("clone"))
    params = yaml.safe_load((root / "params.yaml").read_text()) | {
        "seed": SEED,
        "facts": SMALL_FACTS.model_dump(mode="json"),
        "episodes": SMALL_EPISODES.model_dump(mode="json"),
        "hub": {"repo_id": "", "revision_tag": "v1", "private": False},
    }
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    sh("git", "init", "-q", cwd=root)
    sh("git", "add", "-A", cwd=root)
    sh("git", "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-qm", "clone", cwd=root)
    return root


def dvc(clone: Path, *args: str) -> subprocess.CompletedProcess:
    return sh(str(BIN / "dvc"), *args, cwd=clone)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def test_dvc_repro_builds_every_stage_and_a_second_run_does_nothing(clone):
    # Through the README's build step (`make build`, as `make run` runs it), with no virtualenv on PATH:
    # the Makefile must make the stages' `python` the virtualenv's. -o: use this virtualenv as installed.
    venv = BIN.parent
    sh("make", "build", f"VENV={venv}", "-o", f"{venv}/.core", cwd=clone, venv_on_path=False)

    data = clone / "data"
    assert (data / "facts" / "facts.parquet").is_file()
    manifest = json.loads((data / "episodes" / "manifest.json").read_text())
    assert sorted(path.relative_to(data / "episodes").as_posix() for path in data.glob("episodes/data/*")) == sorted(
        shard["path"] for shard in manifest["shards"]
    )
    # The card carries the generator's shortcut audit, the committed section benchmarks/audit.py wrote.
    audit = (REPO / "benchmarks" / "results" / "audit.md").read_text().strip()
    assert audit.startswith("## Shortcut audit") and audit in (data / "episodes" / "README.md").read_text()
    metrics = json.loads((data / "metrics" / "dataset.json").read_text())
    assert metrics["episodes"]["total"] == sum(SMALL_EPISODES.counts().values())
    assert set(metrics["violations"].values()) == {0}
    assert json.loads((data / "publish" / "receipt.json").read_text())["status"] == "skipped"

    before = {path: path.stat().st_mtime_ns for path in data.rglob("*") if path.is_file()}
    again = dvc(clone, "repro")
    assert "Data and pipelines are up to date." in again.stdout
    assert {path: path.stat().st_mtime_ns for path in data.rglob("*") if path.is_file()} == before

    shown = json.loads(dvc(clone, "metrics", "show", "--json").stdout)
    reported = next(iter(shown.values()))["data"]["data/metrics/dataset.json"]["data"]
    assert reported["episodes"] == {"total": sum(SMALL_EPISODES.counts().values()), **SMALL_EPISODES.counts()}
    assert set(reported["episodes"]) == {"total", *SPLITS}


def test_a_build_killed_mid_way_leaves_no_output_and_reruns_identically(clone):
    episodes = clone / "data" / "episodes"
    if not episodes.exists():
        dvc(clone, "repro")
    reference = snapshot(episodes)
    shutil.rmtree(episodes)
    partial = clone / "data" / ".episodes.partial"
    run_killed("from pipeline.episodes import main\nmain()", 2, clone)  # as its third shard is renamed into place

    assert any(partial.glob("data/*.parquet")), "the kill landed mid-way, with shards staged"
    assert not episodes.exists(), "nothing at the final path: no manifest, no shards for a later stage to read"

    dvc(clone, "repro")

    assert snapshot(episodes) == reference
    assert not partial.exists()


def _imported_files(module: str) -> set[str]:
    """The project's source files that `module` imports, transitively, including imports inside functions."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        path = REPO / (name.replace(".", "/") + ".py")
        if not path.is_file():
            path = path.with_suffix("") / "__init__.py"
        relative = path.relative_to(REPO).as_posix()
        if not path.is_file() or relative in seen:
            continue
        seen.add(relative)
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]  # a name may be a module
            todo += [n for n in names if n.split(".")[0] in PACKAGES]
    return {path for path in seen if not path.endswith("__init__.py")}


PACKAGES = ("pipeline", "reward_api", "train")
# A project file that starts another project module in a subprocess: the stage runs that module's code too.
SPAWNS = {"reward_api/localserver.py": "reward_api.__main__"}


@pytest.mark.parametrize(
    ("dvcfile", "stage"),
    [("dvc.yaml", name) for name in ("facts", "episodes", "validate", "publish", "baselines")]
    + [("train/dvc.yaml", "train"), ("train/dvc.yaml", "evaluate")],
)
def test_a_stage_depends_on_every_project_file_its_command_imports(dvcfile, stage):
    """Otherwise a change to that file (an invariant's constant, say) would not re-run the stage; the baselines
    stage runs the server too (`reward_api.localserver` starts `python -m reward_api`)."""
    spec = yaml.safe_load((REPO / dvcfile).read_text())["stages"][stage]
    module = spec["cmd"].split("python -m ", 1)[1].split()[0]
    deps = [dep.rstrip("/") for dep in spec["deps"]]
    runs = _imported_files(module)
    runs |= {f for spawner, spawned in SPAWNS.items() if spawner in runs for f in _imported_files(spawned)}
    missing = sorted(f for f in runs if not any(f == d or f.startswith(d + "/") for d in deps))
    assert not missing, f"{dvcfile}: stage {stage} imports {missing} without listing them in deps"


def test_the_episodes_stage_reruns_for_every_key_that_changes_its_bytes_and_no_other():
    """A new content key missing here would not rebuild the episodes; workers or the engine would rebuild for
    nothing (the build is byte-identical whatever runs it)."""
    params = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]["episodes"]["params"]
    content = set(EpisodesParams.model_fields) - set(EXECUTION_KEYS)
    assert sorted(params) == sorted(["seed", *(f"episodes.{key}" for key in content)])

"""The training stages: run by name, never by the default `dvc repro`, from the repository root."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from dvc.repo import Repo
from dvc.repo.reproduce import plan_repro

from tests.conftest import copy_tracked


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """The repository's copy: DVC writes its own state (.dvc/tmp) where it opens a repo."""
    root = copy_tracked(tmp_path_factory.mktemp("repo"))
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    with pytest.MonkeyPatch.context() as patch, Repo(str(root)) as repo:
        patch.chdir(root)  # stage addresses are read from the working directory
        yield repo


def test_default_repro_does_not_train(repo):
    default = {stage.addressing for stage in repo.stage.collect("dvc.yaml")}
    assert default and not {name for name in default if "train" in name or "evaluate" in name}


def test_train_by_name_runs_from_the_root_after_the_dataset(repo):
    (train,) = repo.stage.collect("train/dvc.yaml:train")
    assert Path(train.wdir) == Path(repo.root_dir) and train.cmd == "python -m train.grpo --params params.yaml"
    assert all(Path(dep.fs_path).exists() for dep in train.deps if "data/" not in dep.def_path)
    plan = [stage.addressing for stage in plan_repro(repo.index.graph, [train])]
    assert plan.index("episodes") < plan.index("train/dvc.yaml:train")
    assert "train/dvc.yaml:evaluate" not in plan
    (evaluate,) = repo.stage.collect("train/dvc.yaml:evaluate")
    plan = [stage.addressing for stage in plan_repro(repo.index.graph, [evaluate])]
    assert plan[-2:] == ["train/dvc.yaml:train", "train/dvc.yaml:evaluate"]

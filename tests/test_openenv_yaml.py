"""openenv.yaml: the installed `openenv validate` CLI passes on the manifest, and on a real running server.

The CLI runs in-process through its own typer app (the same code as the `openenv` command, without paying
its start-up twice); the runtime check hits a uvicorn server on a loopback port built by the factory the
manifest names.
"""

from __future__ import annotations

import importlib
import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from reward_api.env import ENV_NAME
from reward_api.scoring import REWARD_RANGE, REWARD_VERSION
from tests.reward_api.conftest import SECRET, serve

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def manifest() -> dict:
    return yaml.safe_load((ROOT / "openenv.yaml").read_text())


@pytest.fixture(scope="module")
def openenv_cli():
    from openenv.cli.__main__ import app

    def invoke(*args: str):
        return CliRunner().invoke(app, list(args), catch_exceptions=False)

    return invoke


def test_manifest_declares_the_served_environment(manifest):
    assert manifest["spec_version"] == 1
    assert manifest["name"] == ENV_NAME
    assert manifest["type"] == "space" and manifest["runtime"] == "fastapi"
    assert manifest["port"] == 7860
    assert f"reward {REWARD_VERSION} in [-0.2, 1.05]" in " ".join(manifest["description"].split())
    assert tuple(manifest["validation"]["reward"]["range"]) == REWARD_RANGE
    assert (ROOT / manifest["validation"]["capabilities"]["oracle"]["location"]).is_file()


def manifest_app(manifest: dict, dataset_dir: Path, monkeypatch: pytest.MonkeyPatch):
    """The app built by the zero-argument factory that `app:` names, serving the suite's dataset."""
    module, attr = manifest["app"].split(":")
    monkeypatch.setenv("CONTEXTCORRUPTION_DATA", str(dataset_dir))
    monkeypatch.setenv("CONTEXTCORRUPTION_STATE_KEY", SECRET.decode())
    return getattr(importlib.import_module(module), attr)()


def test_app_names_the_server_factory(manifest, dataset_dir, monkeypatch):
    app = manifest_app(manifest, dataset_dir, monkeypatch)
    assert {"/reset", "/step", "/state", "/health", "/score"} <= {route.path for route in app.routes}


@pytest.fixture
def package(tmp_path) -> Path:
    """The manifest (and the oracle it names) in a folder of its own: validation hashes the whole package before
    and after, and the working tree (a built dataset, caches, other tests' files) is large and changing."""
    shutil.copy(ROOT / "openenv.yaml", tmp_path / "openenv.yaml")
    (tmp_path / "reward_api").mkdir()
    shutil.copy(ROOT / "reward_api" / "baselines.py", tmp_path / "reward_api" / "baselines.py")
    return tmp_path


def test_static_validation_passes(openenv_cli, package):
    result = openenv_cli("validate", str(package), "--level", "static", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["verdict"] == "pass"
    assert [r["status"] for r in report["results"]] == ["pass"]


def test_default_validation_has_no_failure(openenv_cli, package):
    """Without a container runtime the runtime and semantic checks are skipped (a warning), none fails."""
    result = openenv_cli("validate", str(package), "--json")
    assert result.exit_code == 0, result.output
    statuses = {r["check_id"]: r["status"] for r in json.loads(result.output)["results"]}
    assert statuses["static.manifest"] == "pass"
    assert set(statuses.values()) <= {"pass", "skip"}


def test_validation_against_a_running_server(openenv_cli, manifest, dataset_dir, monkeypatch):
    server, thread, url = serve(manifest_app(manifest, dataset_dir, monkeypatch))
    try:
        result = openenv_cli("validate", "--url", url, "--json")
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["passed"] is True
    assert {c["id"] for c in report["criteria"] if c["passed"]} >= {
        "health_endpoint",
        "metadata_endpoint",
        "schema_endpoint",
        "mcp_endpoint",
        "mode_endpoint_consistency",
    }
    assert report["mode"] == "simulation"

"""The zero-argument factory of openenv.yaml: a real `uvicorn --factory reward_api.app:create_app` serves the
dataset the environment names (a folder, or a Hub repo at a revision); a missing dataset is refused by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from reward_api.__main__ import SettingError
from reward_api.app import create_app
from reward_api.localserver import free_port, wait_healthy
from reward_api.store import StoreError

ROOT = Path(__file__).resolve().parents[2]


def serve_factory(**env: str) -> dict:
    """Start uvicorn with the factory openenv.yaml names; answer /health and /manifest, then stop it."""
    factory = yaml.safe_load((ROOT / "openenv.yaml").read_text())["app"]
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "--factory", factory, "--host", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "CONTEXTCORRUPTION_STATE_KEY": "k", **env}
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, 60)
        answers = {path: httpx.get(url + path).json() for path in ("/health", "/manifest", "/episodes/0")}
    finally:
        proc.terminate()
        output = proc.communicate(timeout=30)[0]
    return {**answers, "output": output}


def test_uvicorn_factory_serves_the_folder_in_the_environment(served_dir):
    served = serve_factory(CONTEXTCORRUPTION_DATA=str(served_dir))
    assert served["/health"] == {"status": "healthy"}, served["output"]
    assert served["/manifest"] == json.loads((served_dir / "manifest.json").read_text())
    assert served["/episodes/0"]["episode_id"] == 0 and "answer" not in served["/episodes/0"]


def test_uvicorn_factory_serves_a_hub_repo_at_a_revision(served_dir, moved_hub, tmp_path):
    """The HF Space path: CONTEXTCORRUPTION_DATA is a repo id, CONTEXTCORRUPTION_REVISION a tag."""
    manifest = json.loads((served_dir / "manifest.json").read_text())
    env = {"HF_ENDPOINT": moved_hub.endpoint, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0"}
    served = serve_factory(CONTEXTCORRUPTION_DATA="acme/cc", CONTEXTCORRUPTION_REVISION="v1", **env)
    assert served["/health"] == {"status": "healthy"}, served["output"]
    assert served["/manifest"] == manifest


def test_factory_refuses_a_missing_dataset_by_name(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTCORRUPTION_DATA", str(tmp_path))
    with pytest.raises(StoreError, match=f"{tmp_path}/manifest.json: missing"):
        create_app()
    monkeypatch.setenv("CONTEXTCORRUPTION_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(StoreError, match="no such dataset folder, and not a Hub repo id"):
        create_app()


def test_factory_refuses_a_bad_variable_by_name(monkeypatch, served_dir):
    """uvicorn --factory reads the settings from the environment only: the error names the variable."""
    monkeypatch.setenv("CONTEXTCORRUPTION_DATA", str(served_dir))
    monkeypatch.setenv("CONTEXTCORRUPTION_CACHE_MB", "-5")
    with pytest.raises(SettingError, match=r"^CONTEXTCORRUPTION_CACHE_MB: Input should be greater than or equal to 0"):
        create_app()

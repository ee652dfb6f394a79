"""`python -m reward_api`: serves a folder on the given port and logs how to try it; refuses bad data by name."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from reward_api.localserver import free_port, wait_healthy

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "reward_api", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_healthy(proc: subprocess.Popen, port: int) -> None:
    wait_healthy(f"http://127.0.0.1:{port}", proc, 60)


def test_serves_the_folder_and_prints_curl_lines(served_dir):
    port = free_port()
    proc = _run("--data", str(served_dir), "--port", str(port), CONTEXTCORRUPTION_STATE_KEY="k")
    try:
        _wait_healthy(proc, port)
        assert httpx.get(f"http://127.0.0.1:{port}/episodes/0").json()["episode_id"] == 0
    finally:
        proc.terminate()
        output = proc.communicate(timeout=30)[0]
    assert f"curl -s http://127.0.0.1:{port}/episodes/0" in output
    assert "POST http://127.0.0.1:" in output and "/score" in output


def test_port_0_serves_on_a_free_port_and_names_it(served_dir):
    proc = _run("--data", str(served_dir), "--port", "0")
    lines = []
    try:
        while "/episodes/0" not in (line := proc.stdout.readline()):
            assert line, "".join(lines)
            lines.append(line)
        port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
        assert port > 0
        _wait_healthy(proc, port)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_a_broken_folder_exits_2_naming_the_file(served_dir, tmp_path):
    root = tmp_path / "broken"
    shutil.copytree(served_dir, root)
    victim = sorted((root / "data").glob("*.parquet"))[0]
    victim.unlink()
    proc = _run("--data", str(root), "--port", str(free_port()))
    output = proc.communicate(timeout=60)[0]
    assert proc.returncode == 2 and f"{victim.name}: shard listed in the manifest is missing" in output


def _finish(proc: subprocess.Popen, timeout: float = 60) -> str:
    """The output of a process expected to exit by itself; killed if it serves instead."""
    try:
        return proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()[0]


def _one_error(output: str, error: str) -> None:
    """Refused on one line saying why: no traceback, no abort (a core dump's "Fatal Python error")."""
    assert error in output and "Traceback" not in output and "Fatal Python error" not in output, output
    assert len([line for line in output.splitlines() if " ERROR " in line]) == 1, output


def test_a_port_in_use_exits_2_before_any_work(served_dir):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = _run("--data", str(served_dir), "--port", str(port))
        output = _finish(proc)
    assert proc.returncode == 2, output
    _one_error(output, f"cannot serve: 127.0.0.1:{port}: Address already in use")
    assert "serving" not in output  # refused before the store was opened


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("--port", "99999"), "bad setting: --port: Input should be less than or equal to 65535 (got 99999)"),
        (("--port", "-1"), "bad setting: --port: Input should be greater than or equal to 0 (got -1)"),
        (("--cache-mb", "nan"), "bad setting: --cache-mb: Input should be a finite number (got nan)"),
        (("--cache-mb", "inf"), "bad setting: --cache-mb: Input should be a finite number (got inf)"),
        (("--cache-mb", "-1"), "bad setting: --cache-mb: Input should be greater than or equal to 0 (got -1.0)"),
        (
            ("CONTEXTCORRUPTION_PORT=http",),
            "bad setting: CONTEXTCORRUPTION_PORT: Input should be a valid integer, unable to parse string as an "
            "integer (got 'http')",
        ),
        (
            ("CONTEXTCORRUPTION_WORKERS=two", "--cache-mb", "-1"),
            "bad setting: --cache-mb: Input should be greater than or equal to 0 (got -1.0); "
            "CONTEXTCORRUPTION_WORKERS: Input should be a valid integer, unable to parse string as an integer "
            "(got 'two')",
        ),
    ],
)
def test_an_out_of_range_setting_exits_2_naming_it(served_dir, args, error):
    """Named as it was given: by its flag, or by its environment variable."""
    env = dict(a.split("=") for a in args if "=" in a)
    proc = _run("--data", str(served_dir), *[a for a in args if "=" not in a], **env)
    output = _finish(proc)
    assert proc.returncode == 2, output
    _one_error(output, error)


def _manifest_without_shards(root: Path) -> str:
    manifest = json.loads((root / "manifest.json").read_text())
    (root / "manifest.json").write_text(json.dumps({**manifest, "shards": []}))
    return "manifest.json: lists no shards: nothing to serve"


def _manifest_a_folder(root: Path) -> str:
    (root / "manifest.json").unlink()
    (root / "manifest.json").mkdir()
    return "manifest.json: cannot be read (Is a directory)"


@pytest.mark.parametrize("damage", [_manifest_without_shards, _manifest_a_folder])
def test_a_malformed_manifest_exits_2_naming_it(served_dir, tmp_path, damage):
    root = tmp_path / "malformed"
    shutil.copytree(served_dir, root)
    error = damage(root)
    proc = _run("--data", str(root), "--port", str(free_port()))
    output = _finish(proc)
    assert proc.returncode == 2, output
    _one_error(output, f"cannot serve: {root}/{error}")


def test_data_can_come_from_the_environment(tmp_path):
    proc = _run(CONTEXTCORRUPTION_DATA=str(tmp_path), CONTEXTCORRUPTION_PORT=str(free_port()))
    output = proc.communicate(timeout=60)[0]
    assert proc.returncode == 2 and f"{tmp_path}/manifest.json: missing" in output


def test_serves_a_hub_repo_at_a_revision(served_dir, moved_hub, tmp_path):
    """The repo id + tag path of the entry point, against the loopback Hub stand-in; main has moved on past v1."""
    published = json.loads((served_dir / "manifest.json").read_text())
    port = free_port()
    env = {"HF_ENDPOINT": moved_hub.endpoint, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0"}
    proc = _run("--data", "acme/cc", "--revision", "v1", "--port", str(port), **env)
    try:
        _wait_healthy(proc, port)
        manifest = httpx.get(f"http://127.0.0.1:{port}/manifest").json()
    finally:
        proc.terminate()
        output = proc.communicate(timeout=30)[0]
    assert manifest == published, output  # v1's manifest, not main's
    assert "downloading dataset acme/cc at revision v1" in output
    assert "HTTP Request" not in output, output  # one line per download, not one per request


def test_a_serving_app_keeps_the_gc_off_its_start_up_objects(served_dir):
    """The app factory freezes what start-up built and collects the young generation less often (tune_gc)."""
    import gc

    from reward_api.__main__ import Settings, create_app

    before = gc.get_threshold()
    try:
        create_app(Settings(data=str(served_dir)))
        assert gc.get_freeze_count() > 10_000 and gc.get_threshold()[0] == 50_000
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)

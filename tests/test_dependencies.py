"""Dependency hygiene: pip-audit over the locked dependencies, with a documented allow-list.

In the suite (offline): the allow-list is well formed and every entry says why; pip-audit collects the
image's locked dependencies (requirements-serve.txt plus openenv, as the Dockerfile installs them) and the
project's lock (constraints.txt, what `make run` and `make test` install) in a dry run; and a report is judged
right: an unaudited dependency, a vulnerability the allow-list does not accept, or an accepted one no longer
reported, each fails. The audit itself needs PyPI's per-version JSON
API, so it runs on demand or as a CI step, not in every test run:

    .venv/bin/python -m tests.test_dependencies    # exit 1 on any finding, with one line per finding
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

ROOT = Path(__file__).resolve().parents[1]
ALLOWLIST = ROOT / "audit-allowlist.toml"
SERVE_LOCK = ROOT / "requirements-serve.txt"
LOCK = ROOT / "constraints.txt"
IMAGE_NO_DEPS = ("openenv==0.10.0",)  # the Dockerfile's `pip install --no-deps` line
PIP_AUDIT = Path(sys.executable).with_name("pip-audit")
EDITABLE = "distribution marked as editable"  # this project itself, in a development install


class Accepted(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=4)
    package: str = Field(min_length=1)
    reason: str = Field(min_length=20, description="why the vulnerability cannot reach this project")


def allow_list(path: Path = ALLOWLIST) -> list[Accepted]:
    return [Accepted.model_validate(entry) for entry in tomllib.loads(path.read_text())["accepted"]]


def image_lock(folder: Path) -> Path:
    """One pinned requirements file with everything the image installs."""
    path = folder / "image-requirements.txt"
    path.write_text(SERVE_LOCK.read_text() + "\n".join(IMAGE_NO_DEPS) + "\n")
    return path


def audit_commands(folder: Path) -> dict[str, list[str]]:
    common = ["--format", "json", "--progress-spinner", "off"]
    return {
        "image": [str(PIP_AUDIT), "-r", str(image_lock(folder)), "--no-deps", "--disable-pip", *common],
        "lock": [str(PIP_AUDIT), "-r", str(LOCK), "--no-deps", "--disable-pip", *common],
    }


def findings(report: dict, accepted: list[Accepted]) -> list[str]:
    """What fails an audit: a dependency not audited, a vulnerability not accepted, an accepted one gone."""
    problems, seen = [], set()
    for dep in report["dependencies"]:
        if "skip_reason" in dep and dep["skip_reason"] != EDITABLE:
            problems.append(f"{dep['name']}: not audited ({dep['skip_reason']})")
        for vuln in dep.get("vulns", []):
            ids = {vuln["id"], *vuln.get("aliases", [])}
            match = [a for a in accepted if a.id in ids and a.package == dep["name"]]
            seen.update(a.id for a in match)
            if not match:
                fixed = ", ".join(vuln.get("fix_versions", [])) or "none yet"
                problems.append(f"{dep['name']} {dep['version']}: {vuln['id']} (fixed in: {fixed})")
    audited = {dep["name"] for dep in report["dependencies"]}
    problems += [
        f"{a.package}: {a.id} is accepted but no longer reported"
        for a in accepted
        if a.package in audited and a.id not in seen
    ]
    return problems


def test_allow_list_entries_name_the_package_and_say_why(tmp_path):
    allow_list()  # the committed list parses
    bad = tmp_path / "bad.toml"
    bad.write_text('[[accepted]]\nid = "GHSA-1234-5678-9abc"\npackage = "fastapi"\nreason = "ok"\n')
    with pytest.raises(ValidationError, match="reason"):
        allow_list(bad)


@pytest.mark.parametrize(("name", "least"), [("image", 14), ("lock", 200)])
def test_pip_audit_collects_every_locked_dependency(tmp_path, name, least):
    command = audit_commands(tmp_path)[name]
    done = subprocess.run([*command, "--dry-run"], capture_output=True, text=True, timeout=120)
    locked = Path(command[command.index("-r") + 1]).read_text().splitlines()
    pins = [line for line in locked if "==" in line and not line.startswith("#")]
    assert done.returncode == 0, done.stderr
    assert f"would have audited {len(pins)} packages" in done.stderr and len(pins) >= least


def test_an_audit_report_fails_on_unaudited_unaccepted_and_stale_entries():
    vuln = {"id": "GHSA-aaaa-bbbb-cccc", "aliases": ["CVE-2026-1"], "fix_versions": ["2.0"], "description": "x"}
    report = {
        "dependencies": [
            {"name": "clean", "version": "1.0", "vulns": []},
            {"name": "contextcorruption", "skip_reason": EDITABLE},
            {"name": "open", "version": "1.0", "vulns": [vuln]},
            {"name": "gone", "version": "1.0", "vulns": []},
            {"name": "missing", "skip_reason": "Dependency not found on PyPI and could not be audited"},
        ]
    }
    reason = "the vulnerable parser is never called by this project"
    assert findings(report, []) == [
        "open 1.0: GHSA-aaaa-bbbb-cccc (fixed in: 2.0)",
        "missing: not audited (Dependency not found on PyPI and could not be audited)",
    ]
    accepted = [
        Accepted(id="CVE-2026-1", package="open", reason=reason),
        Accepted(id="PYSEC-2026-9", package="gone", reason=reason),
    ]
    assert findings(report, accepted) == [
        "missing: not audited (Dependency not found on PyPI and could not be audited)",
        "gone: PYSEC-2026-9 is accepted but no longer reported",
    ]


def main() -> int:
    accepted = allow_list()
    failed = False
    with tempfile.TemporaryDirectory() as folder:
        for name, command in audit_commands(Path(folder)).items():
            done = subprocess.run(command, capture_output=True, text=True, timeout=900)
            if not done.stdout.strip():
                print(f"{name}: pip-audit gave no report (exit {done.returncode}):\n{done.stderr[-2000:]}")
                failed = True
                continue
            report = json.loads(done.stdout)
            problems = findings(report, accepted)
            print(f"{name}: {len(report['dependencies'])} dependencies, {len(problems)} findings")
            print("\n".join(f"  {p}" for p in problems))
            failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

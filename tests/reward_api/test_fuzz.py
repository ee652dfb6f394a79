"""Fuzzing: schemathesis over the server's own OpenAPI spec, every route, on a real uvicorn server.

Schemathesis's engine (what `schemathesis run` drives) runs its examples, coverage and fuzzing phases,
positive and negative data, with three checks: no 5xx, responses match the documented schemas, and
schema-violating requests are refused. The server is fuzzed open and with a bearer token required
(then the spec declares the scheme and the fuzzer sends the token). Bounded: a fixed seed, 6 examples
per operation and phase (no `max-time`: with it, fuzzing repeats until the time is spent).
"""

from __future__ import annotations

import pytest
import schemathesis
from schemathesis.engine import Status, events, from_schema

from tests.reward_api.test_auth import TOKEN, protected_server

CHECKS = ("not_a_server_error", "response_schema_conformance", "negative_data_rejection")
# What counts as refusing a schema-violating request: schemathesis's list plus 413 (body over 1 MiB), minus 5xx.
REFUSALS = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429]


def fuzz_config(headers: dict[str, str]) -> schemathesis.Config:
    return schemathesis.Config.from_dict(
        {
            "seed": 20261130,
            "cache": {"enabled": False},  # it wrote .schemathesis/ into the repository, and runs replayed its entries
            "workers": 1,
            "request-timeout": 30,
            "headers": headers,
            "generation": {"mode": "all", "max-examples": 6},
            "phases": {"stateful": {"enabled": False}},
            "checks": {
                "enabled": False,
                **{name: {"enabled": True} for name in CHECKS},
                "negative_data_rejection": {"enabled": True, "expected-statuses": REFUSALS},
            },
        }
    )


def run(url: str, headers: dict[str, str]) -> tuple[set[str], list[str]]:
    """Every operation label the engine tested, and one line per failed check or engine error."""
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json", config=fuzz_config(headers))
    tested, problems = set(), []
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            tested.add(event.recorder.label)
            for case_id, checks in event.recorder.checks.items():
                case = event.recorder.cases[case_id].value
                response = event.recorder.interactions[case_id].response
                problems += [
                    f"{event.phase} {event.recorder.label} {check.name}: {check.failure_info.failure.title}, "
                    f"status {response and response.status_code}: {case.as_curl_command()[:400]}"
                    for check in checks
                    if check.status == Status.FAILURE
                ]
        elif isinstance(event, events.NonFatalError | events.FatalError):
            problems.append(f"engine error: {event}")
    return tested, problems


protected_url = pytest.fixture(scope="module", name="protected_url")(protected_server)


@pytest.mark.parametrize("mode", ["open", "token"])
def test_every_route_survives_fuzzing(mode, base_url, protected_url):
    url, headers = (base_url, {}) if mode == "open" else (protected_url, {"Authorization": f"Bearer {TOKEN}"})
    spec = schemathesis.openapi.from_url(f"{url}/openapi.json").raw_schema
    routes = {f"{method.upper()} {path}" for path, ops in spec["paths"].items() for method in ops}
    tested, problems = run(url, headers)
    assert tested == routes and len(routes) >= 12
    assert not problems, "\n".join(problems)

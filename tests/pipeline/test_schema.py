"""Manifests refused in one line: by their versions when another schema or reward version wrote them."""

from __future__ import annotations

import json

import pytest

from pipeline.schema import AnswersManifest, Manifest, ManifestError, load_manifest

ANSWERS = {"schema_version": 1, "params_hash": "x", "row_group_rows": 1, "shards": []}
DATASET = {"seed": 1, "params_hash": "x", "row_group_rows": 1, "splits": {}, "shards": []}


@pytest.mark.parametrize(
    ("model", "body", "problem"),
    [
        (
            Manifest,
            {**DATASET, "schema_version": 2, "added": 1},
            "built for schema 2 / reward v2, this code is schema 1",
        ),
        (Manifest, {**DATASET, "reward_version": "v3", "added": 1}, "built for schema 1 / reward v3, this code is"),
        # an answers manifest has no reward version to name
        (AnswersManifest, {**ANSWERS, "schema_version": 2, "added": 1}, "built for schema 2, this code is schema 1;"),
        # parsed, yet built for another version: its fields are this code's, its invariants or scores are not
        (AnswersManifest, {**ANSWERS, "schema_version": 2}, "built for schema 2, this code is schema 1;"),
        (Manifest, {**DATASET, "reward_version": "v1"}, "built for schema 1 / reward v1, this code is schema 1 / rew"),
        # a version of the wrong type is no other version: the manifest is not valid, and the message says why
        (Manifest, {"schema_version": "2", **DATASET} | {"params_hash": None}, "not a valid manifest (params_hash: "),
        (Manifest, {**DATASET, "added": 1}, "not a valid manifest (added: Extra inputs are not permitted)"),
    ],
    ids=[
        "newer-schema",
        "newer-reward",
        "answers-newer-schema",
        "answers-other-schema-same-fields",
        "older-reward-same-fields",
        "version-of-the-wrong-type",
        "this-schema",
    ],
)
def test_a_manifest_this_code_cannot_take_is_named_by_its_versions(tmp_path, model, body, problem):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(body))
    with pytest.raises(ManifestError) as err:
        load_manifest(path, model, "rebuild")
    assert str(err.value).startswith(f"{path}: {problem}") and str(err.value).endswith("; rebuild"), err.value


def test_any_version_takes_a_build_of_another_version_to_replace_it(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({**DATASET, "reward_version": "v1"}))
    assert load_manifest(path, Manifest, "", any_version=True).reward_version == "v1"


def test_a_manifest_nested_deeper_than_json_can_read_is_not_valid(tmp_path):
    """Refused by pydantic, then read again with json.loads for its versions: a RecursionError (a traceback)."""
    path = tmp_path / "manifest.json"
    path.write_text("[" * 100_000)
    with pytest.raises(ManifestError, match=r"manifest.json: not a valid manifest \(Invalid JSON: .*\); rebuild$"):
        load_manifest(path, Manifest, "rebuild")

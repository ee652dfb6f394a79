import sys
from pathlib import Path

import pytest
import yaml
from dvc.utils.serialize import parse_yaml

from pipeline.params import (
    MAX_SYNTHETIC_ENTITIES,
    EpisodesParams,
    FactsParams,
    HubParams,
    ParamsError,
    check_pipeline,
    is_git_tag,
    read_params,
    section,
    seed,
)

ROOT = Path(__file__).resolve().parents[2]


def test_repository_params_are_valid():
    data = read_params(ROOT / "params.yaml")
    assert seed(data) >= 0
    episodes = section(data, "episodes", EpisodesParams)
    assert episodes.train >= 1_000_000
    section(data, "facts", FactsParams)
    section(data, "hub", HubParams)


@pytest.mark.parametrize(
    ("name", "model", "change", "message"),
    [
        ("episodes", EpisodesParams, {"train": -5}, "episodes.train"),
        ("episodes", EpisodesParams, {"validation": 0}, "episodes.validation"),
        ("episodes", EpisodesParams, {"shards": 3}, "episodes.shards"),
        ("episodes", EpisodesParams, {"row_group_rows": 1000}, "multiple of row_group_rows"),
        ("episodes", EpisodesParams, {"shard_multiple": 0}, "episodes.shard_multiple"),
        ("episodes", EpisodesParams, {"train": 10**12}, "the splits make 15,258,808 shards of at most shard_rows"),
        # Too many shards that shard_multiple forces, not the rows: it is the key to change.
        (
            "episodes",
            EpisodesParams,
            {"shard_multiple": 4000},
            r"episodes: shard_multiple \(4,000\) makes each split at least 4,000 shards, 12,000 in all "
            r"whatever shard_rows is; .*: a shard_multiple of at most 157",  # validation's 157 row groups of 128
        ),
        (
            "episodes",
            EpisodesParams,
            {"shard_rows": 128, "shard_multiple": 3000},
            r"shard_multiple \(3,000\) rounds each split's shards up to a multiple of it: 15,000 in all, where "
            r"shard_rows \(128\) needs 8,127; .*: a smaller shard_multiple or more shard_rows",
        ),
        ("episodes", EpisodesParams, {"shard_rows": 2**70}, "episodes.shard_rows: Input should be less than or equal"),
        ("episodes", EpisodesParams, {"test": 300, "shard_multiple": 8}, r"shard_multiple \(8\): test: 300 rows"),
        ("facts", FactsParams, {"sources": ["geonames", "wikipedia"]}, "facts.sources"),
        ("facts", FactsParams, {"sources": ["synthetic", "synthetic"]}, r"names \['synthetic'\] more than"),
        ("facts", FactsParams, {"split_weights": {"train": 0.5, "validation": 0.1, "test": 0.1}}, "sum to 1"),
        ("facts", FactsParams, {"split_weights": {"train": float("nan"), "validation": 0.5, "test": 0.5}}, "finite"),
        # YAML's yes/on are booleans and "8" a string: not counts.
        ("episodes", EpisodesParams, {"train": True}, "episodes.train: Input should be a valid integer"),
        ("episodes", EpisodesParams, {"workers": "2"}, "episodes.workers: Input should be a valid integer"),
        ("episodes", EpisodesParams, {"workers": 2**31}, "episodes.workers: Input should be less than or equal to"),
        ("facts", FactsParams, {"synthetic_entities": True}, "facts.synthetic_entities"),
        (
            "facts",
            FactsParams,
            {"synthetic_entities": 400_000},
            r"facts.synthetic_entities: Input should be less than or equal to 294913 \(got 400000\)",
        ),
        ("hub", HubParams, {"revision_tag": ""}, "hub.revision_tag: must be a git tag name"),
        ("hub", HubParams, {"revision_tag": "v 1/../x"}, "hub.revision_tag"),
        ("hub", HubParams, {"revision_tag": "v1.lock"}, "hub.revision_tag"),
        ("hub", HubParams, {"repo_id": "org/my data"}, "hub.repo_id: Repo id must use"),
    ],
)
def test_bad_params_name_the_key(tmp_path, name, model, change, message):
    data = read_params(ROOT / "params.yaml")
    data[name] = {**data[name], **change}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ParamsError, match=message):
        section(read_params(path), name, model, path)


def test_the_largest_synthetic_world_is_accepted():
    """Every entity up to the limit gets a name (tests/pipeline/sources checks the limit against real pools)."""
    data = read_params(ROOT / "params.yaml")
    facts = section({"facts": {**data["facts"], "synthetic_entities": MAX_SYNTHETIC_ENTITIES}}, "facts", FactsParams)
    assert facts.synthetic_entities == MAX_SYNTHETIC_ENTITIES


def test_good_tags_and_repo_ids_pass():
    for tag in ("v1", "v1.0.2", "release/2026-11", "rc_1"):
        assert HubParams(repo_id="org/context-corruption", revision_tag=tag, private=False).revision_tag == tag


def test_invalid_yaml_is_one_line_naming_the_place(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("seed: 1\nepisodes: {train: 5\nfacts: []\n")
    with pytest.raises(ParamsError) as caught:
        read_params(path)
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(f"{path}: not valid YAML at line 3, column 6: ")


def test_a_key_given_twice_is_refused_naming_it_and_its_place(tmp_path):
    """A YAML loader alone keeps the last value: this file would build 5 train episodes, not a million."""
    path = tmp_path / "params.yaml"
    path.write_text("seed: 1\nepisodes:\n  train: 1000000\n  train: 5\n")
    with pytest.raises(ParamsError) as caught:
        read_params(path)
    assert str(caught.value) == (
        f'{path}: not valid YAML at line 4, column 3: found duplicate key "train" with value "5" (original value: '
        '"1000000")'
    )
    path.write_text("seed: 1\nseed: 2\n")
    with pytest.raises(ParamsError, match='line 2, column 1: found duplicate key "seed"'):
        read_params(path)
    path.write_text("seed: 1\nfacts: &facts {hub_limit: 5}\nepisodes:\n  <<: *facts\n  train: 3\n")  # a merge key
    assert read_params(path)["episodes"] == {"hub_limit": 5, "train": 3}
    path.write_text("seed: 1\nfacts:\n  ? [a, b]\n  : 1\n")  # a list as a key: read as a tuple, as DVC reads it
    with pytest.raises(ParamsError, match=r"facts\.\('a', 'b'\): Keys should be strings"):
        check_pipeline(read_params(path), path)


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("episodes: {train: 01000}", {"episodes": {"train": 1000}}),  # PyYAML: 512 (octal)
        ("seed: 1:30", {"seed": "1:30"}),  # PyYAML: 90 (base 60); refused by the seed's check
        ("episodes: {hidden_test: yes}", {"episodes": {"hidden_test": "yes"}}),  # PyYAML: True
        ("episodes: {train: 0o17}", {"episodes": {"train": 15}}),  # PyYAML: the string "0o17"
    ],
)
def test_params_are_read_as_dvc_reads_them(tmp_path, text, read):
    """The build read these as YAML 1.1 while DVC, which records the params in dvc.lock and diffs them, reads YAML
    1.2: `train: 01000` built 512 episodes where `dvc params diff` said 1000."""
    path = tmp_path / "params.yaml"
    path.write_text(text)
    assert read_params(path) == read == parse_yaml(text, str(path))


def test_an_unknown_top_level_key_is_refused(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("sead: 1\nworkers: 4\nfacts: {}\n")
    with pytest.raises(ParamsError) as caught:
        read_params(path)
    assert str(caught.value) == (
        f"{path}: unknown top-level key(s) ['sead', 'workers']; the sections are seed, facts, episodes, hub, train, "
        "baselines"
    )


def test_the_largest_shard_multiple_suggested_is_one_that_builds():
    data = read_params(ROOT / "params.yaml")
    section({"episodes": data["episodes"] | {"shard_multiple": 157}}, "episodes", EpisodesParams)
    with pytest.raises(ParamsError, match="too few for 158 shards"):
        section({"episodes": data["episodes"] | {"shard_multiple": 158}}, "episodes", EpisodesParams)


def test_check_pipeline_validates_every_pipeline_section(tmp_path):
    data = read_params(ROOT / "params.yaml")
    check_pipeline(data)
    for name in ("facts", "episodes", "hub"):  # the first stage refuses what DVC would refuse at the last
        with pytest.raises(ParamsError, match=f"missing section '{name}'"):
            check_pipeline({key: value for key, value in data.items() if key != name})
    with pytest.raises(ParamsError, match=r"hub\.repo_id: "):
        check_pipeline(data | {"hub": data["hub"] | {"repo_id": "not a repo id!"}})
    with pytest.raises(ParamsError, match=r"hub\.privte: Extra inputs are not permitted"):
        check_pipeline(data | {"hub": data["hub"] | {"privte": True}})
    with pytest.raises(ParamsError, match="seed: must be an integer"):
        check_pipeline(data | {"seed": "1"})


def test_the_ray_engine_without_ray_installed_names_the_key_and_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # find_spec answers None for a module blocked this way
    data = read_params(ROOT / "params.yaml")
    with pytest.raises(ParamsError) as caught:
        episodes = data["episodes"] | {"engine": "ray", "ray_address": "auto"}
        section(data | {"episodes": episodes}, "episodes", EpisodesParams)
    assert "episodes.engine: ray is not installed: pip install 'contextcorruption[ray]'" in str(caught.value)
    assert "ray_address" not in str(caught.value)  # not a second, false complaint about the address


def test_a_ray_client_address_without_the_client_names_the_key_and_the_extra(monkeypatch):
    """ray_address: ray://head:10001 (the form params.yaml suggests) failed in the stage with a traceback."""
    monkeypatch.setitem(sys.modules, "grpc", None)  # what Ray Client needs; find_spec answers None for it
    data = read_params(ROOT / "params.yaml")
    episodes = data["episodes"] | {"engine": "ray", "ray_address": "ray://127.0.0.1:10001"}
    needle = r"episodes\.ray_address: .*needs the Ray Client: pip install 'ray\[client\]'"
    with pytest.raises(ParamsError, match=needle):
        section(data | {"episodes": episodes}, "episodes", EpisodesParams)
    section(data | {"episodes": episodes | {"ray_address": "auto"}}, "episodes", EpisodesParams)
    monkeypatch.setenv("RAY_ADDRESS", "ray://127.0.0.1:10001")  # joined when ray_address is empty
    with pytest.raises(ParamsError, match=r"episodes: .*address \(RAY_ADDRESS, which engine: ray joins\) needs"):
        section(data | {"episodes": episodes | {"ray_address": ""}}, "episodes", EpisodesParams)


def test_bad_seed_and_missing_file(tmp_path):
    with pytest.raises(ParamsError, match="seed"):
        seed({"seed": -1})
    assert seed({"seed": 2**64 - 1}) == 2**64 - 1
    with pytest.raises(ParamsError, match=r"seed: must be an integer in 0\.\.2\*\*64-1"):
        seed({"seed": 2**64})  # the generator keys on 64 bits: it would repeat seed 0
    with pytest.raises(ParamsError, match="not found"):
        read_params(tmp_path / "nope.yaml")


@pytest.mark.parametrize(
    "tag",
    [
        # the old whole-name regex backtracked exponentially here: 30 s for this one, doubling per character
        "dataset-release-2026-11-30-v1 x",
        "v" * 200 + "~",
        "release/" * 50 + "v1:",
        "@",  # git refuses a tag that is exactly '@'
        "a.lock/b",  # no component may end in .lock, not only the last
    ],
)
def test_a_bad_tag_is_refused_naming_the_key(tag):
    data = {"hub": {"repo_id": "org/context-corruption", "revision_tag": tag, "private": False}}
    with pytest.raises(ParamsError) as caught:
        section(data, "hub", HubParams)
    message = str(caught.value)
    assert message.startswith("params.yaml: hub.revision_tag: must be a git tag name such as v1")
    assert message.endswith(f"(got {tag!r})") and "\n" not in message


def test_the_old_tag_rules_still_hold():
    bad = ["/v1", "v1/", "v1//x", ".v1", "v1/.x", "v1.", "v1.lock", "a..b", "v@{1", "v 1", "v1~", "v^1", "a:b"]
    bad += ["a?b", "a*b", "a[b", "a\\b", "a\x7fb", "a\tb"]
    good = ["v1", "v1.0.2", "release/2026-11", "rc_1", "a@b", "v1.locked", "x.lock2/y"]
    assert [tag for tag in bad if is_git_tag(tag)] == []
    assert [tag for tag in good if not is_git_tag(tag)] == []


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "is a directory, not a params file"),
        (b"seed: 1\n\xff\xfe", "not UTF-8 text (byte 8 is 0xff)"),
        (b"seed: 1\n\x00\x01", "not valid YAML: unacceptable character #x0000: special characters are not allowed"),
        (b"seed: " + b"[" * 10_000 + b"]" * 10_000, "nested deeper than a params file can be"),  # a RecursionError
    ],
    ids=["directory", "not-utf8", "control-characters", "nested"],
)
def test_a_folder_or_binary_file_is_one_line_naming_the_file(tmp_path, content, problem):
    path = tmp_path / "params.yaml"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    with pytest.raises(ParamsError) as caught:
        read_params(path)
    assert str(caught.value).startswith(f"{path}: {problem}")
    assert "\n" not in str(caught.value)


def test_a_file_it_may_not_read_is_one_line_naming_the_file(tmp_path, monkeypatch):
    """The tests run as root, so a permission error is simulated."""
    path = tmp_path / "params.yaml"
    path.write_text("seed: 1\n")

    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_text", refuse)
    with pytest.raises(ParamsError) as caught:
        read_params(path)
    assert str(caught.value) == f"{path}: cannot be read (Permission denied)"

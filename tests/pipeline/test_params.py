from pathlib import Path

import pytest
import yaml

from pipeline.params import EpisodesParams, FactsParams, HubParams, ParamsError, read_params, section, seed

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
        ("episodes", EpisodesParams, {"test": 300, "shard_multiple": 8}, r"shard_multiple \(8\): test: 300 rows"),
        ("facts", FactsParams, {"sources": ["geonames", "wikipedia"]}, "facts.sources"),
        ("facts", FactsParams, {"split_weights": {"train": 0.5, "validation": 0.1, "test": 0.1}}, "sum to 1"),
    ],
)
def test_bad_params_name_the_key(tmp_path, name, model, change, message):
    data = read_params(ROOT / "params.yaml")
    data[name] = {**data[name], **change}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ParamsError, match=message):
        section(read_params(path), name, model, path)


def test_bad_seed_and_missing_file(tmp_path):
    with pytest.raises(ParamsError, match="seed"):
        seed({"seed": -1})
    with pytest.raises(ParamsError, match="not found"):
        read_params(tmp_path / "nope.yaml")

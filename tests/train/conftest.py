"""Fixtures for the training tests: a small episode folder, a tiny model built offline, params files."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from train.prompts import episode_text


@pytest.fixture(scope="session")
def episodes_dir(dataset_dir) -> Path:
    """The suite's small dataset, built by the real pipeline (tests/conftest.py)."""
    return dataset_dir


@pytest.fixture(scope="session")
def episode_rows(episodes_dir) -> list[dict]:
    return pq.read_table(sorted((episodes_dir / "data").glob("validation-*.parquet"))).to_pylist()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory, episodes_dir) -> Path:
    """A tiny Qwen2 model and BPE tokenizer trained on the train split's text (seconds on a CPU)."""
    from train.tiny import TinyConfig, build_tiny

    rows = pq.read_table(sorted((episodes_dir / "data").glob("train-*.parquet"))).to_pylist()[:400]
    texts = [episode_text(r["question"], r["documents"]) for r in rows]
    return build_tiny(tmp_path_factory.mktemp("tiny") / "model", texts, TinyConfig(vocab_size=1024))


@pytest.fixture
def write_params(tmp_path):
    """Write a params file whose `train:` section is `section`; returns its path."""

    def write(section: dict, name: str = "params.yaml") -> Path:
        path = tmp_path / name
        path.write_text(yaml.safe_dump({"seed": 1, "train": section}))
        return path

    return write

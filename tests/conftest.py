"""Shared fixtures: a small dataset built by the real pipeline, once per test session."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir
from pydantic import BaseModel

# No test reaches the Hub: one that forgets its loopback stand-in meets a closed port, not huggingface.co. Set before
# anything imports huggingface_hub, which reads the endpoint once; the tests with a stand-in give their own endpoint.
CLOSED_ENDPOINT = "http://127.0.0.1:9"
os.environ["HF_ENDPOINT"] = CLOSED_ENDPOINT

from pipeline.params import EpisodesParams, FactsParams, HubParams  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
# Hypothesis wrote its examples and caches into the working directory (.hypothesis/, the repository), and a run
# replayed the examples stored by earlier ones: its caches go to the temporary folder, and no example is stored.
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "contextcorruption-hypothesis")
settings.register_profile("suite", database=None)
settings.load_profile("suite")

SEED = 1234
SMALL_FACTS = FactsParams(
    sources=["geonames", "elements", "synthetic"],
    synthetic_entities=300,
    split_weights={"train": 0.8, "validation": 0.1, "test": 0.1},
    hub_limit=100,
)
HIDDEN_KEY = b"the suite's hidden-split key, 32+ characters"
SMALL_EPISODES = EpisodesParams(train=1200, validation=300, test=300, workers=1, shard_rows=512, row_group_rows=64)
SMALL_HUB = HubParams(repo_id="", revision_tag="v1", private=False)


def write_params(folder: Path, seed: int = SEED, **sections: BaseModel | dict) -> Path:
    """`folder`/params.yaml with every pipeline section (each stage checks them all): those given, as models or
    mappings, and the suite's small ones for the rest."""
    chosen = {"facts": SMALL_FACTS, "episodes": SMALL_EPISODES, "hub": SMALL_HUB} | sections
    dumped = {name: s.model_dump(mode="json") if isinstance(s, BaseModel) else s for name, s in chosen.items()}
    path = folder / "params.yaml"
    path.write_text(yaml.safe_dump({"seed": seed, **dumped}))
    return path


def copy_tracked(root: Path) -> Path:
    """The repository's tracked files copied under `root` (a test that runs DVC there leaves the repository alone)."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True)
    for name in filter(None, tracked.stdout.split("\0")):
        if (REPO / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, root / name)
    return root


@pytest.fixture(scope="session", autouse=True)
def view_cache(tmp_path_factory) -> Iterator[Path]:
    """Servers started by the tests (in process or not) keep their agent-view caches here, not in ~/.cache."""
    from reward_api.views import CACHE_ENV

    folder = tmp_path_factory.mktemp("views")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_ENV, str(folder))
        yield folder


@pytest.fixture(scope="session", autouse=True)
def datasets_cache(tmp_path_factory) -> Iterator[Path]:
    """`datasets` keeps what the tests load here, not in ~/.cache/huggingface/datasets (whose entries a real source's
    loads would then share: a local fixture folder named like a Hub dataset lands under the same name)."""
    import sys

    folder = tmp_path_factory.mktemp("datasets-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_DATASETS_CACHE", str(folder))
        if config := sys.modules.get("datasets.config"):  # imported already: it read the variable then
            patch.setattr(config, "HF_DATASETS_CACHE", folder)
        yield folder


@pytest.fixture(scope="session")
def facts_dir(tmp_path_factory) -> Path:
    from pipeline.facts import build_facts, write_facts

    out = tmp_path_factory.mktemp("facts")
    write_facts(build_facts(SMALL_FACTS, SEED), out)
    return out


@pytest.fixture(scope="session")
def hidden_facts_dir(tmp_path_factory) -> Path:
    """Facts built with HIDDEN_KEY, as a build with a hidden split needs them."""
    from pipeline.facts import build_facts, write_facts

    out = tmp_path_factory.mktemp("hidden-facts")
    write_facts(build_facts(SMALL_FACTS, SEED, hidden_key=HIDDEN_KEY), out)
    return out


@pytest.fixture(scope="session")
def dataset_dir(tmp_path_factory, facts_dir) -> Path:
    """A Hub-layout dataset folder (shards, manifest.json, README.md) built by the real episodes stage."""
    from pipeline.episodes import build_episodes

    out = tmp_path_factory.mktemp("episodes") / "episodes"
    build_episodes(facts_dir, out, SMALL_EPISODES, SEED)
    return out

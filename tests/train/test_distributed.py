"""Two processes on a CPU (gloo): `torchrun --nproc_per_node 2 -m train.grpo` trains 2 steps on a build whose
shard count follows `episodes.shard_multiple: 2`, each rank reading its own shard file. (`accelerate launch
--cpu --num_processes 2` starts one process, not two.)

A `sitecustomize` hook on PYTHONPATH records, per rank, the episode ids the reward was computed for, so the
test sees what each rank consumed without changing the command a user runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.episodes import build_episodes
from reward_api.localserver import free_port
from tests.conftest import SEED, SMALL_EPISODES
from tests.train.test_grpo import SMALL, _check_outputs

ROOT = Path(__file__).resolve().parents[2]
TORCHRUN = Path(sys.executable).with_name("torchrun")

HOOK = '''"""Test hook: each rank appends the episode ids its reward was computed for to <dir>/rank<RANK>.jsonl."""
import functools, json, os

if "RANK" in os.environ and "EPISODE_LOG_DIR" in os.environ:
    import train.rewards as rewards

    _original = rewards.episode_reward

    @functools.wraps(_original)
    def episode_reward(completions, **columns):
        path = os.path.join(os.environ["EPISODE_LOG_DIR"], f"rank{os.environ['RANK']}.jsonl")
        with open(path, "a") as log:
            log.write(json.dumps(columns["episode_id"]) + "\\n")
        return _original(completions, **columns)

    rewards.episode_reward = episode_reward
'''


def _shard_of_episode(episodes_dir: Path) -> dict[int, str]:
    files = sorted((episodes_dir / "data").glob("train-*.parquet"))
    return {i: f.name for f in files for i in pq.read_table(f, columns=["episode_id"]).column(0).to_pylist()}


@pytest.fixture(scope="module")
def two_rank_episodes(tmp_path_factory, facts_dir) -> Path:
    """The suite's small build with large shards, its shard counts made a multiple of the 2 processes."""
    out = tmp_path_factory.mktemp("two_ranks") / "episodes"
    build_episodes(facts_dir, out, SMALL_EPISODES.model_copy(update={"shard_rows": 2048, "shard_multiple": 2}), SEED)
    return out


def test_two_cpu_processes_train_on_disjoint_shards(tmp_path, write_params, two_rank_episodes, tiny_model):
    episodes_dir = two_rank_episodes
    shard_of = _shard_of_episode(episodes_dir)
    # 1,200 train episodes fit one shard of 2,048 rows: shard_multiple 2 makes it 2 files, one per rank.
    assert len(set(shard_of.values())) == 2
    hook_dir, log_dir, out = tmp_path / "hook", tmp_path / "episodes_seen", tmp_path / "run"
    hook_dir.mkdir()
    log_dir.mkdir()
    (hook_dir / "sitecustomize.py").write_text(HOOK)
    path = write_params({**SMALL, "model": str(tiny_model), "data": str(episodes_dir), "output_dir": str(out)})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELERATE_", "RANK", "WORLD_", "MASTER_"))}
    env |= {
        "PYTHONPATH": os.pathsep.join([str(hook_dir), str(ROOT)]),
        "EPISODE_LOG_DIR": str(log_dir),
        "OMP_NUM_THREADS": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
    }
    command = [
        str(TORCHRUN), "--nnodes", "1", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
        "--master_port", str(free_port()), "-m", "train.grpo", "--params", str(path),
    ]  # fmt: skip
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    for noise in ("Traceback", "terminate called", "Exception ignored", "Aborted"):
        assert noise not in run.stderr, run.stderr[-3000:]
    _check_outputs(out, "rewards/episode_reward/mean")

    seen = {
        rank: [i for line in (log_dir / f"rank{rank}.jsonl").read_text().splitlines() for i in json.loads(line)]
        for rank in (0, 1)
    }
    assert seen[0] and seen[1] and not set(seen[0]) & set(seen[1])
    files = {rank: {shard_of[i] for i in ids} for rank, ids in seen.items()}
    assert len(files[0]) == len(files[1]) == 1 and files[0] != files[1], files

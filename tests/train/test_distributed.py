"""Two processes on a CPU (gloo): `torchrun --nproc_per_node 2 -m train.grpo` trains 2 steps, each rank generating
for its own slice of every generation batch of the whole stream. (`accelerate launch --cpu --num_processes 2` starts
one process, not two.)

A `sitecustomize` hook on PYTHONPATH records, per rank, the episode ids each reward call scored, so the test sees
what each rank consumed without changing the command a user runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from reward_api.localserver import free_port
from tests.train.test_grpo import SMALL, _check_outputs
from train.data import head, stream_episodes

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


def test_two_cpu_processes_train_on_their_slices_of_each_batch(tmp_path, write_params, episodes_dir, tiny_model):
    """With gradient accumulation, each rank generated for the same episodes of its own shard file again and again
    (TRL repeats a stream in blocks sized for all ranks, and accelerate had split it by file)."""
    hook_dir, log_dir, out = tmp_path / "hook", tmp_path / "episodes_seen", tmp_path / "run"
    hook_dir.mkdir()
    log_dir.mkdir()
    (hook_dir / "sitecustomize.py").write_text(HOOK)
    section = {**SMALL, "gradient_accumulation_steps": 2}  # 2 episodes × 2 generations a rank and step
    path = write_params({**section, "model": str(tiny_model), "data": str(episodes_dir), "output_dir": str(out)})
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

    calls = {
        rank: [json.loads(line) for line in (log_dir / f"rank{rank}.jsonl").read_text().splitlines()]
        for rank in (0, 1)
    }
    # Per step, one generation batch of 2 episodes × 2 generations a rank: rank 0 the first two of the step's four
    # episodes, rank 1 the next two, and the steps go through the split in order.
    stream = [row["episode_id"] for row in head(stream_episodes(str(episodes_dir), "train"), 8)]
    for rank in (0, 1):
        expected = [stream[4 * step + 2 * rank : 4 * step + 2 * rank + 2] for step in range(2)]
        assert [sorted(set(call)) for call in calls[rank]] == [sorted(ids) for ids in expected], calls
        assert all(len(call) == 4 for call in calls[rank])

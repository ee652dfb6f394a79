"""`python -m train.grpo [--params FILE]`: GRPO training from the `train:` section of a params file.

Multi-GPU: `accelerate launch -m train.grpo --params FILE`; each rank takes its slice of every generation batch of
the whole stream (`train.data.grpo_rows`). The params are validated (and `output_dir` checked for a run to resume or
not to overwrite), and the data opened, before any model is loaded.
"""

from __future__ import annotations

import argparse
import gc
import logging
from pathlib import Path

from pipeline.console import TIMED, log_to_console
from pipeline.params import DEFAULT_PARAMS, ParamsError
from train.backend import import_unsloth_first
from train.config import load_train_params

logger = logging.getLogger("train.grpo")


def one_line(err: BaseException) -> str:
    """A library's message may span lines; the error a user reads (and greps) is one."""
    return " ".join(str(err).split())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.grpo", description=__doc__.splitlines()[0])
    parser.add_argument("--params", type=Path, default=DEFAULT_PARAMS, help="params file with a train: section")
    args = parser.parse_args(argv)
    log_to_console(TIMED)
    try:
        params = load_train_params(args.params)
        unsloth = import_unsloth_first()
        from train.trainer import checkpoint_to_resume, ensure_tool_template, train

        resume = checkpoint_to_resume(params)
    except ParamsError as err:
        parser.exit(2, f"error: {err}\n")
    from train.backend import load_policy
    from train.data import stream_episodes

    try:  # datasets: no data files, no such split, a hidden split; OSError: ConnectionError, a Hub it cannot reach
        stream = stream_episodes(params.data, params.split, revision=params.revision)
    except (ValueError, OSError) as err:
        parser.exit(2, f"error: train.data {params.data!r}, split {params.split!r}: {one_line(err)}\n")
    try:  # transformers: neither a local model folder nor a Hub model id (OSError), a folder without a model
        policy = load_policy(params)
        if params.mode == "tools":
            ensure_tool_template(policy.tokenizer)
    except ParamsError as err:
        parser.exit(2, f"error: {err}\n")
    except (OSError, ValueError) as err:
        parser.exit(2, f"error: train.model {params.model!r}: {one_line(err)}\n")
    logger.info("backend %s, mode %s, model %s, data %s", policy.backend, params.mode, params.model, params.data)
    history = train(params, policy, stream, resume)
    del stream
    gc.collect()  # the half-read stream's Parquet scanner must go while Arrow is alive (see train.data.head)
    logger.info("done: %d log entries, outputs in %s (unsloth: %s)", len(history), params.output_dir, unsloth)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

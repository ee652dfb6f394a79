"""Ctrl-C on a stage: one line and a shell's exit status for SIGINT, never a traceback.

The facts, episodes and validate stages write under temporary names until their last rename and remove them as the
interrupt unwinds (the episodes stage's staging folders, `pipeline.writer.staging_all`; the facts and metrics files),
so an interrupted one has written nothing (once the episodes stage's new folders are in, an interrupt no longer stops
it, and one among the facts stage's two renames waits for both: `held`); the publish stage says instead what an
interrupted upload leaves.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)
INTERRUPTED_STATUS = 130  # 128 + SIGINT: what a shell reports for a command Ctrl-C ended, and what DVC passes on


@contextmanager
def interruptible(
    stage: str, left: str = "nothing was written", also: tuple[type[BaseException], ...] = ()
) -> Iterator[None]:
    """A stage's work: an interrupt ends it with `stage: interrupted; left` (exit status 130). `also`: errors that
    stand for the interrupt when a worker process took it (a pool worker's `engines.Cancelled`)."""
    try:
        yield
    except (KeyboardInterrupt, *also):
        log.error("%s: interrupted; %s", stage, left)
        raise SystemExit(INTERRUPTED_STATUS) from None


@contextmanager
def held(stage: str) -> Iterator[None]:
    """Renames that belong together: a Ctrl-C among them is held until all are done, then set aside with a warning,
    since the stage's output is complete (an interrupt between two would leave one new file beside an old one). A
    Python handler, not a signal mask: any thread may take the signal, only the main thread runs the handler; in
    another thread it holds nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if came:
        log.warning("%s: interrupted as its new output was renamed into place; that output is complete", stage)

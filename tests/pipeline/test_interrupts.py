"""An interrupted stage's ending: one line naming the stage and exit status 130; any other error is left as it was."""

from __future__ import annotations

import logging

import pytest

from pipeline.engines import Cancelled
from pipeline.interrupts import INTERRUPTED_STATUS, interruptible


@pytest.mark.parametrize("stopped", [KeyboardInterrupt(), Cancelled("the build was stopped")], ids=["ctrl-c", "also"])
def test_an_interrupt_ends_the_stage_in_one_line_with_status_130(caplog, stopped):
    with pytest.raises(SystemExit) as exit_, interruptible("episodes", also=(Cancelled,)):
        raise stopped

    assert exit_.value.code == INTERRUPTED_STATUS == 130
    assert exit_.value.__suppress_context__, "no chained traceback"
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.ERROR, "episodes: interrupted; nothing was written")
    ]


def test_what_is_left_is_said_and_other_errors_pass_unchanged(caplog):
    with pytest.raises(SystemExit) as exit_, interruptible("publish", "no receipt was written"):
        raise KeyboardInterrupt
    assert exit_.value.code == 130 and caplog.messages == ["publish: interrupted; no receipt was written"]

    caplog.clear()
    error = Cancelled("a shard stopped after another failed")
    with pytest.raises(Cancelled) as raised, interruptible("episodes"):  # not named in `also`: not an interrupt
        raise error
    assert raised.value is error and caplog.messages == []

"""The suite's guard against the real Hub (tests/conftest.py): a call that names no stand-in goes nowhere."""

from __future__ import annotations

import huggingface_hub
import pytest
from huggingface_hub import constants

from tests.conftest import CLOSED_ENDPOINT


def test_a_hub_call_without_a_stand_in_meets_a_closed_port():
    assert constants.ENDPOINT == CLOSED_ENDPOINT
    with pytest.raises(Exception, match="Connection refused"):  # not a failed lookup of huggingface.co
        huggingface_hub.HfApi().dataset_info("acme/nq_open")

"""The stages' console: their own messages as plain lines; the HTTP clients' request lines left out, warnings kept."""

from __future__ import annotations

import subprocess
import sys

SPEAK = """
import logging
from pipeline.console import log_to_console

log_to_console()
for client in ("httpx", "httpx2"):  # huggingface_hub's, before and from 2.0
    logging.getLogger(client).info('HTTP Request: GET http://127.0.0.1/api/datasets "HTTP/1.1 200 OK"')
logging.getLogger("pipeline.publish").info("publish: skipped")
logging.getLogger("httpx").warning("retrying")
"""


def test_a_stage_prints_its_own_lines_and_no_http_request_lines():
    result = subprocess.run([sys.executable, "-c", SPEAK], capture_output=True, text=True, timeout=60, check=True)

    assert result.stderr.splitlines() == ["publish: skipped", "retrying"]
    assert result.stdout == ""

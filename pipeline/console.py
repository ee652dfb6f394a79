"""How the project's commands speak: one line per message on stderr, and nothing from the HTTP clients' requests."""

import logging

# huggingface_hub (hence datasets) logs one INFO line per HTTP request: through httpx before 2.0, httpx2 from it.
_HTTP_LOGGERS = ("httpx", "httpx2")
TIMED = "%(asctime)s %(name)s %(levelname)s %(message)s"  # long-running commands: the server, training, evaluation


def log_to_console(fmt: str = "%(message)s") -> None:
    """The stages' plain lines by default; long-running commands add the time and the logger (TIMED)."""
    logging.basicConfig(level=logging.INFO, format=fmt)
    for name in _HTTP_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)

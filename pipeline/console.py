"""How the stages speak: one plain line per message on stderr, and nothing from the libraries' HTTP clients."""

import logging

# huggingface_hub (hence datasets) logs one INFO line per HTTP request: through httpx before 2.0, httpx2 from it.
_HTTP_LOGGERS = ("httpx", "httpx2")


def log_to_console() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for name in _HTTP_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)

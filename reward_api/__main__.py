"""`python -m reward_api --data PATH_OR_REPO_ID [--revision REV] [--answers PATH_OR_REPO_ID [--answers-revision REV]]
[--host 127.0.0.1] [--port 7860] [--cache-mb MB] [--workers N] [--access-log] [--session-timeout S]`.

`--answers` is the build's answers folder (data/answers), the ground truth of a hidden test split: without it
that split is served and played but not scored. `--session-timeout` (default 300) is how many seconds a /ws session
may stay silent before it stops holding one of the server's 256 session slots. Every option can also come from the
environment (CONTEXTCORRUPTION_DATA, _REVISION, _ANSWERS, _ANSWERS_REVISION, _HOST, _PORT, _CACHE_MB, _ACCESS_LOG,
_WORKERS, _SESSION_TIMEOUT), which is how a container or an HF Space passes the dataset repo id. The state-token
secret is CONTEXTCORRUPTION_STATE_KEY (see reward_api.tokens); the optional API bearer token is
CONTEXTCORRUPTION_API_TOKEN (see reward_api.auth), environment only, so it never shows on a command line.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import secrets
import socket
import sys
from collections.abc import Collection
from pathlib import Path

import pyarrow as pa
import uvicorn
from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from pipeline.console import TIMED, log_to_console
from pipeline.problems import Location, one_line
from reward_api.heap import limit_malloc_arenas
from reward_api.nodelay import PROTOCOL
from reward_api.source import dataset_folder
from reward_api.store import DEFAULT_CACHE_MB, EpisodeStore, StoreError, sealed_message
from reward_api.tokens import KEY_ENV, TokenSigner, server_secret

log = logging.getLogger("reward_api")


ENV_PREFIX = "CONTEXTCORRUPTION_"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX)

    data: str = "data/episodes"
    revision: str | None = None
    answers: str | None = None
    answers_revision: str | None = None
    host: str = "127.0.0.1"
    port: int = Field(default=7860, ge=0, le=65535)
    cache_mb: float = Field(default=DEFAULT_CACHE_MB, ge=0, allow_inf_nan=False)
    access_log: bool = False
    api_token: SecretStr | None = None
    workers: int = Field(default=1, ge=1, le=64)
    # reward_api.server.SESSION_TIMEOUT_S: not imported, that would import openenv before skip_web_ui.
    session_timeout: float = Field(default=300.0, gt=0, allow_inf_nan=False)


def parse_settings(argv: list[str] | None = None) -> Settings:
    parser = argparse.ArgumentParser(prog="python -m reward_api", description="Serve a ContextCorruption dataset.")
    parser.add_argument("--data", help="dataset folder, or Hub dataset repo id (namespace/name)")
    parser.add_argument("--revision", help="Hub revision (tag, branch or commit) when --data is a repo id")
    parser.add_argument(
        "--answers", help="answers folder of the build (data/answers), or a Hub repo id: scores a hidden split"
    )
    parser.add_argument(
        "--answers-revision", dest="answers_revision", help="Hub revision of --answers when it is a repo id"
    )
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    parser.add_argument("--cache-mb", type=float, dest="cache_mb", help="memory for decoded row groups (MB)")
    parser.add_argument("--workers", type=int, help="uvicorn worker processes, each with its own store (default 1)")
    parser.add_argument(
        "--access-log", action="store_true", default=None, help="log every request (off by default: it costs CPU)"
    )
    parser.add_argument(
        "--session-timeout",
        type=float,
        dest="session_timeout",
        help="seconds a silent /ws session holds one of the 256 session slots (default 300)",
    )
    return load_settings({k: v for k, v in vars(parser.parse_args(argv)).items() if v is not None})


def load_settings(flags: dict[str, object]) -> Settings:
    """The settings from `flags` (given on the command line) and the environment; SettingError names a bad one as it
    was given."""
    try:
        return Settings(**flags)
    except ValidationError as exc:
        raise SettingError(setting_errors(exc, flags)) from None


class SettingError(ValueError):
    """Bad settings, in one line."""


def setting_errors(exc: ValidationError, flags: Collection[str]) -> str:
    """One line naming each bad setting as it was given (its flag, else its environment variable), what is wrong
    with it and the value given."""

    def named(loc: Location) -> str:
        if not loc:
            return "settings"
        field = str(loc[0])
        return f"--{field.replace('_', '-')}" if field in flags else f"{ENV_PREFIX}{field.upper()}"

    return one_line(exc, named)


def check_address(host: str, port: int) -> int:
    """Bind host:port the way uvicorn will and let it go: OSError (a port in use, an unknown host) before any work.
    The port bound: port 0 takes a free one, which the server then serves on (and its "Try it" lines name).

    uvicorn binds only after the app's start-up; what fails then is reported by uvicorn and exits 3.
    """
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        return sock.getsockname()[1]


def try_it(host: str, port: int, first_id: int) -> str:
    base = f"http://{host}:{port}"
    return "\n".join(
        [
            f"ContextCorruption reward API on {base}  (docs: {base}/docs)",
            "Try it:",
            f"  curl -s {base}/episodes/{first_id}",
            f"  curl -s -X POST {base}/reset -H 'content-type: application/json' -d '{{\"episode_id\": {first_id}}}'",
            f"  curl -s -X POST {base}/score -H 'content-type: application/json' \\",
            f'       -d \'{{"episode_id": {first_id}, "answer": "Paris", "flagged_ids": [2], "confidence": 0.7}}\'',
            f"  curl -s {base}/tasks",
        ]
    )


def skip_web_ui() -> None:
    """openenv imports its optional gradio UI eagerly (7-10 s); unless asked for, make it look absent.

    openenv already treats a missing gradio as "no web UI", so this only saves start-up time.
    """
    if os.environ.get("ENABLE_WEB_INTERFACE", "false").lower() not in ("true", "1", "yes"):
        sys.modules.setdefault("gradio", None)


def open_store(settings: Settings, answers: Path | None, preload_keys: bool = True) -> EpisodeStore:
    """The store of the dataset folder `settings.data`; StoreError names a missing or broken file."""
    # Arrow's default pool (mimalloc) holds on to freed row-group buffers: under benchmarks/soak.py one worker
    # swung between 540 and 760 MB RSS; with the system allocator, 400-560 MB at the same throughput.
    pa.set_memory_pool(pa.system_memory_pool())
    limit_malloc_arenas()
    return EpisodeStore(Path(settings.data), cache_mb=settings.cache_mb, preload_keys=preload_keys, answers=answers)


def create_app(settings: Settings | None = None, store: EpisodeStore | None = None):
    """The app for `settings` (default: those in the environment): what each worker process builds when --workers > 1.

    `settings.data` must be a dataset folder here (reward_api.app.create_app also takes a Hub repo id); `store`, if
    given, is that folder's store, already open.
    """
    from reward_api.env import Backend
    from reward_api.server import build_app

    settings = settings or Settings()
    store = store or open_store(settings, answers_folder(settings))
    token = settings.api_token.get_secret_value() if settings.api_token else None
    backend = Backend(store, TokenSigner(server_secret(), store.manifest.params_hash))
    app = build_app(backend, api_token=token, session_timeout=settings.session_timeout)
    tune_gc()
    return app


def tune_gc() -> None:
    """Keep the cyclic GC off what start-up built, and run it less often, in a serving process.

    Requests allocate many short-lived containers (a /score/batch of 1,024 builds ~10k), freed by reference
    counting; the collector still ran every 700 allocations and, every hundred runs, walked the ~250k objects
    alive since start-up. Measured in-process on /score/batch's code: 45-52k scores per CPU-second, 70-75k with
    the start-up objects frozen, 57-89k with the young generation also collected every 50,000 allocations.
    """
    gc.freeze()
    gc.set_threshold(50_000, 10, 10)


def downloaded(settings: Settings) -> Settings:
    """`settings` with the dataset at hand: `data` a local folder (a Hub repo id is downloaded at its revision)."""
    folder = dataset_folder(settings.data, settings.revision)
    return settings.model_copy(update={"data": str(folder), "revision": None})


def answers_folder(settings: Settings) -> Path | None:
    """The answers folder: a local folder as is, a Hub repo id downloaded at `answers_revision` (pin it with the
    dataset's revision: the newest answers belong to the newest build and are refused beside an older one)."""
    return dataset_folder(settings.answers, settings.answers_revision) if settings.answers else None


def export(settings: Settings, answers: Path | None = None) -> None:
    """Hand the settings to worker processes through the environment, every one as validated here (a stale variable
    that a flag overrode crashed each worker, restarted forever), with the dataset and answers already downloaded.

    Workers must sign state tokens with one key, or a token from one would be refused by the other.
    """
    downloaded = {"revision": None, "answers": None if answers is None else str(answers), "answers_revision": None}
    for name, value in {**settings.model_dump(), **downloaded}.items():
        variable = f"{ENV_PREFIX}{name.upper()}"
        if value is None:
            os.environ.pop(variable, None)
        else:
            os.environ[variable] = value.get_secret_value() if isinstance(value, SecretStr) else str(value)
    if settings.workers > 1 and not os.environ.get(KEY_ENV):
        log.warning("%s is not set: the %d workers share a random key for this run only", KEY_ENV, settings.workers)
        os.environ[KEY_ENV] = secrets.token_hex(32)


def main(argv: list[str] | None = None) -> int:
    log_to_console(TIMED)
    try:
        settings = parse_settings(argv)
    except SettingError as exc:
        log.error("bad setting: %s", exc)
        return 2
    try:
        settings = settings.model_copy(update={"port": check_address(settings.host, settings.port)})
    except OSError as exc:
        log.error("cannot serve: %s:%d: %s", settings.host, settings.port, exc.strerror or exc)
        return 2
    skip_web_ui()
    try:
        settings = downloaded(settings)
        answers = answers_folder(settings)
        # Refuses a broken dataset before serving; with one worker it is the store served (its footers parsed once).
        store = open_store(settings, answers, preload_keys=settings.workers == 1)
    except StoreError as exc:
        log.error("cannot serve: %s", exc)
        return 2
    if store.hidden and answers is None:
        log.warning("%s", sealed_message(", ".join(sorted(store.hidden))))
    export(settings, answers)
    log.info(
        "access control: %s",
        "bearer token required on /score, /score/batch, /reset, /step, /ws, /mcp"
        if settings.api_token
        else "off (set CONTEXTCORRUPTION_API_TOKEN to require a bearer token)",
    )
    log.info("%s", try_it(settings.host, settings.port, store.shards[0].first_id))
    common = {"host": settings.host, "port": settings.port, "log_level": "info", "access_log": settings.access_log}
    common["http"] = PROTOCOL  # several workers share a socket uvicorn binds without TCP_NODELAY (reward_api.nodelay)
    if settings.workers > 1:
        uvicorn.run("reward_api.__main__:create_app", factory=True, workers=settings.workers, **common)
    else:
        uvicorn.run(create_app(settings, store), **common)
    return 0


if __name__ == "__main__":
    sys.exit(main())

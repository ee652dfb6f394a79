"""Error responses: every failure is a 4xx (a 503 where the dataset changed under the running server) whose `detail`
says what is wrong, and is always valid JSON.

FastAPI's stock handlers echo the offending input back, so a NaN in a body became a 500 while the
error was being encoded; here inputs that JSON cannot carry are echoed as their repr. A body FastAPI's json.loads
fails on with an interpreter error rather than a JSON syntax error (deep nesting, a 5,000-digit integer, bytes that
are not UTF-8) got a bare 400 "There was an error parsing the body"; it is a 422 naming the problem, as every other
unparsable body is.
"""

from __future__ import annotations

import json
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException

from reward_api.game import EpisodeOver, MoveError
from reward_api.keys import GroundTruthMissing
from reward_api.store import EpisodeNotFound, StoreError
from reward_api.tokens import TokenError

MAX_ECHO = 1000  # characters of a refused input an error echoes back
# Checked in order: subclasses before their bases. GroundTruthMissing: scoring a hidden split on a server
# without its answers is refused here, whoever asks (a 403 says retrying will not help). StoreError: the dataset
# changed under a running server (503: the server, not the request, is at fault).
DOMAIN_STATUS = (
    (EpisodeNotFound, 404),
    (TokenError, 403),
    (GroundTruthMissing, 403),
    (EpisodeOver, 409),
    (MoveError, 422),
    (StoreError, 503),  # a shard removed or damaged after start-up: the message names it
)


def _json_safe(value: Any) -> Any:
    """`value` if JSON can carry it as is, else its repr (NaN, infinities, exceptions, bytes, lone surrogates); an
    input longer than MAX_ECHO characters is not echoed (a refused batch of 8,193 items came back whole).

    Encoded as the response will be (UTF-8, not ASCII escapes): a lone surrogate escapes but does not encode."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
        text.encode()
    except (TypeError, ValueError):
        text = value = repr(value).encode(errors="backslashreplace").decode()
    return f"<{len(text):,} characters, not echoed>" if len(text) > MAX_ECHO else value


def _clean(errors: Any) -> Any:
    """Pydantic error lists without context objects or doc links; other details made JSON-safe."""
    if not isinstance(errors, list | tuple):
        return _json_safe(errors)
    return [_cleaned(e) if isinstance(e, dict) else _json_safe(e) for e in errors]


def _cleaned(error: dict) -> dict:
    """One error as the response gives it. FastAPI's "JSON decode error" is located ("body", position) with the
    decoder's reason in the context the response drops ("Invalid control character at"): here it says the reason
    and the position, located at "body" as pydantic's own parser (/score/batch) locates a syntax error."""
    loc, message = tuple(error.get("loc", ())), error.get("msg", "")
    reason = (error.get("ctx") or {}).get("error")
    if error.get("type") == "json_invalid" and reason and len(loc) == 2 and isinstance(loc[1], int):
        loc, message = loc[:1], f"Invalid JSON: {reason.removesuffix(' at')} at character {loc[1]}"
    return {
        "loc": [_json_safe(part) for part in loc],
        "msg": message,
        "type": error.get("type", ""),
        "input": _json_safe(error.get("input")),
    }


def body_errors(exc: ValidationError) -> RequestValidationError:
    """pydantic's errors for a body it parsed itself (`model_validate_json`), as FastAPI reports a body's: located
    under "body", and a JSON syntax error without the input, which pydantic gives as the whole raw body."""
    return RequestValidationError(
        [
            {**error, "loc": ("body", *error["loc"]), **({"input": {}} if error["type"] == "json_invalid" else {})}
            for error in exc.errors()
        ]
    )


def _handler(status: int | None):
    async def handle(_request: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, RequestValidationError | ValidationError):
            detail = _clean(exc.errors())
        elif isinstance(exc, HTTPException):
            detail = _clean(exc.detail)
        else:
            detail = str(exc)
        code = status if status is not None else getattr(exc, "status_code", 500)
        return JSONResponse({"detail": detail}, status_code=code, headers=getattr(exc, "headers", None))

    return handle


def _unparsable(exc: ValueError | RecursionError) -> str:
    """What json.loads could not take, in the client's terms (the interpreter's advice to itself dropped)."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 (byte {exc.object[exc.start]:#04x} at offset {exc.start})"
    return str(exc).split(";")[0]


def _http_handler():
    generic = _handler(None)

    async def handle(request: Request, exc: HTTPException) -> JSONResponse:
        cause = exc.__cause__
        if exc.status_code == 400 and isinstance(cause, ValueError | RecursionError):  # FastAPI's body parsing
            problem = f"Invalid JSON: {_unparsable(cause)}"
            error = {"type": "json_invalid", "loc": ["body"], "msg": problem, "input": None}
            return JSONResponse({"detail": [error]}, status_code=422)
        return await generic(request, exc)

    return handle


def install_error_handlers(app: FastAPI) -> None:
    for exc_type, status in DOMAIN_STATUS:
        app.add_exception_handler(exc_type, _handler(status))
    app.add_exception_handler(RequestValidationError, _handler(422))
    app.add_exception_handler(ValidationError, _handler(422))
    app.add_exception_handler(HTTPException, _http_handler())


def document_errors(spec: dict) -> None:
    """Say in the OpenAPI spec what a 422 carries: a validation error list, or the message of a broken game rule.

    A malformed body gets pydantic's list; a well-formed action the game refuses (no state_token over HTTP,
    a trace that does not end the episode) gets one sentence, as every other 4xx does.
    """
    error = spec["components"]["schemas"].get("HTTPValidationError")
    if error is not None:
        listed = error["properties"]["detail"]
        error["properties"]["detail"] = {"anyOf": [listed, {"type": "string"}], "title": "Detail"}

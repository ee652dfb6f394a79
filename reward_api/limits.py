"""Input limits at the ASGI edge, before any route: request bodies and WebSocket frames.

A body over 1 MiB gets a 413: the declared Content-Length is checked first, then the bytes actually streamed, so
a chunked or lying client cannot get a larger body through. The JSON routes take one kind of body, whichever
parser reads it: Content-Type application/json, UTF-8 without a byte order mark. A /ws frame that is not a JSON
object the session can take is answered with an error and the session goes on (OpenEnv's handler would end the
session on it).
"""

from __future__ import annotations

import codecs
import json

from openenv.core.env_server.mcp_types import WSMCPResponse
from openenv.core.env_server.types import WSErrorCode, WSErrorResponse
from pydantic_core import from_json

from reward_api.mcp import session_refusal
from reward_api.models import ResetBody

MAX_BODY_BYTES = 1 << 20
JSON_ROUTES = frozenset({"/reset", "/step", "/score", "/score/batch"})


class BodySizeLimit:
    """Pure ASGI middleware; buffers bodies up to the limit and replays them to the app."""

    def __init__(self, app, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = chunked = None
        for name, value in scope["headers"]:
            if name == b"content-length":
                declared = value
            elif name == b"transfer-encoding":
                chunked = value
        if declared is None and chunked is None:  # no body (a GET): nothing to count, no buffering
            await self.app(scope, receive, send)
            return
        if declared is not None and not declared.isdigit():
            await _answer(send, 400, f"Content-Length {declared.decode(errors='replace')} is not a number of bytes")
            return
        if declared is not None and int(declared) > self.limit:
            await self._refuse(send, f"Content-Length {declared.decode()}")
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.limit:
                await self._refuse(send, f"more than {size} bytes streamed")
                return
            more = message.get("more_body", False)
        replay = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replayed():
            return replay.pop() if replay else await receive()

        await self.app(scope, replayed, send)

    async def _refuse(self, send, what: str) -> None:
        await _answer(send, 413, f"request body too large ({what}); the limit is {self.limit} bytes")


async def _answer(send, status: int, detail) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class JsonBodies:
    """Pure ASGI middleware: one rule for the bodies of the JSON routes, checked before either parser sees them.

    FastAPI's json.loads (/reset, /step, /score) decoded a byte order mark and UTF-16, and skipped a body whose
    Content-Type is not JSON; pydantic's parser (/score/batch) refused the first and took the second. Now a
    Content-Type other than application/json (or application/*+json) is a 415, and a body that opens with a byte
    order mark or is UTF-16/32 a 422, on every JSON route; a Content-Encoding (gzip...), which no part decodes, is a
    415 too. Nothing is parsed here: it looks at the first bytes, which BodySizeLimit (outside it) hands over with
    the rest of the body in one message.
    """

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in JSON_ROUTES:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if headers.get(b"content-length", b"0") == b"0" and b"transfer-encoding" not in headers:
            await self.app(scope, receive, send)  # no body: /reset takes none
            return
        media = headers.get(b"content-type", b"").decode("latin-1")
        if not _is_json(media):
            named = f"Content-Type {media}" if media else "no Content-Type"
            await _answer(send, 415, f"the body must be JSON sent as application/json; got {named}")
            return
        coding = headers.get(b"content-encoding", b"identity").decode("latin-1").strip().lower()
        if coding not in ("", "identity"):  # nothing decodes it: a gzip body was read as UTF-16, a plain one as is
            await _answer(send, 415, f"the body must be sent uncompressed; got Content-Encoding {coding}")
            return
        first = await receive()
        problem = _not_utf8(first.get("body", b""))
        if problem:
            await _answer(send, 422, [{"type": "json_invalid", "loc": ["body"], "msg": problem, "input": None}])
            return
        replay = [first]

        async def replayed():
            return replay.pop() if replay else await receive()

        await self.app(scope, replayed, send)


def _is_json(media: str) -> bool:
    """FastAPI's rule: application/json or application/<anything>+json, parameters aside."""
    kind, _, subtype = media.partition(";")[0].strip().lower().partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


def _not_utf8(head: bytes) -> str | None:
    """What is wrong with a body's encoding, judged from its first bytes (JSON text never holds a NUL byte)."""
    if head.startswith(codecs.BOM_UTF8):
        return "Invalid JSON: the body starts with a UTF-8 byte order mark; send UTF-8 without one (RFC 8259)"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or b"\x00" in head[:4]:
        return "Invalid JSON: the body is UTF-16 or UTF-32; send UTF-8 (RFC 8259)"
    return None


def _ws_error(message: str, code: WSErrorCode = WSErrorCode.INVALID_JSON) -> str:
    return WSErrorResponse(data={"message": message, "code": code}).model_dump_json()


NOT_AN_OBJECT = 'Invalid message: a JSON object with a "type" is expected'
RESET_KEYS = frozenset(ResetBody.model_fields)


class WebSocketObjects:
    """Pure ASGI middleware: a frame the session cannot take is answered with an INVALID_JSON error (a
    VALIDATION_ERROR for a reset's unknown key, `_refusal`) and never reaches it; the session goes on. A binary
    frame holding UTF-8 JSON is passed on as text (OpenEnv's handler reads text frames only and ended the session on
    a binary one).

    OpenEnv's handler ends the session (its game lost) on a frame that is JSON but no object (`"hi"`, `5`, `[]`),
    and on one its json.loads cannot parse without an interpreter error: nesting past the recursion limit, an
    integer of more than 4,300 digits, or a lone surrogate (parsed, but its reply cannot be encoded). Every frame is
    parsed here by pydantic_core's parser, whose limits sit inside json.loads's: 200 levels of nesting, 4,300-digit
    integers (the interpreter's default), no lone surrogates. It costs 20-80% of the session's own json.loads of the
    same frame (measured on 1 MB frames of text, numbers and small actions); that parse cannot be skipped, OpenEnv
    reads the text itself.
    """

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return

        async def objects_only():
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    return message
                text, problem = _frame_text(message)
                refusal = _ws_error(problem) if problem else _refusal(text)
                if refusal is None:  # a binary frame goes on as the text it holds: the session reads text only
                    return {"type": "websocket.receive", "text": text}
                await send({"type": "websocket.send", "text": refusal})

        await self.app(scope, objects_only, send)


def _frame_text(message: dict) -> tuple[str, str | None]:
    """A frame's text (a binary frame's bytes read as UTF-8, as JSON is sent), or why it has none."""
    if message.get("text") is not None:
        return message["text"], None
    try:
        return (message.get("bytes") or b"").decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return "", f"Invalid JSON: a binary frame must hold UTF-8 text ({exc.reason} at byte {exc.start})"


def _refusal(text: str) -> str | None:
    """The error frame answering a text frame the session cannot take, or None.

    A reset's keys are checked here: OpenEnv passes each to the environment's reset as an argument beside its own
    helpers' ("session_id", "func"), and those named alike broke the call with an error naming its internals. An MCP
    call that names a session is answered as POST /mcp answers it (reward_api.mcp)."""
    try:
        value = from_json(text)
    except ValueError as exc:
        return _ws_error(f"Invalid JSON: {exc}")
    if not isinstance(value, dict):
        return _ws_error(NOT_AN_OBJECT)
    kind, data = value.get("type"), value.get("data")
    if not isinstance(data, dict):
        return None
    if kind == "reset" and (unknown := sorted(set(data) - RESET_KEYS)):
        message = f"reset takes {sorted(RESET_KEYS)}; unknown key(s) {unknown}"
        return _ws_error(message, WSErrorCode.VALIDATION_ERROR)
    if kind == "mcp" and (error := session_refusal(data)) is not None:
        return WSMCPResponse(data=error).model_dump_json()
    return None

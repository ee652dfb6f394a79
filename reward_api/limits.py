"""Input limits at the ASGI edge, before any route: request bodies and WebSocket frames.

A body over 1 MiB gets a 413: the declared Content-Length is checked first, then the bytes actually streamed, so
a chunked or lying client cannot get a larger body through. A /ws frame that is JSON but not an object is answered
with an error and the session goes on (OpenEnv's handler would end the session on it).
"""

from __future__ import annotations

import json

from openenv.core.env_server.types import WSErrorCode, WSErrorResponse

MAX_BODY_BYTES = 1 << 20


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
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await self._refuse(send, f"Content-Length {declared.decode(errors='replace')}")
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
        body = json.dumps({"detail": f"request body too large ({what}); the limit is {self.limit} bytes"}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})


NOT_AN_OBJECT = WSErrorResponse(
    data={"message": 'Invalid message: a JSON object with a "type" is expected', "code": WSErrorCode.INVALID_JSON}
).model_dump_json()


class WebSocketObjects:
    """Pure ASGI middleware: a text frame that parses as JSON but not as an object (`"hi"`, `5`, `[]`) is answered
    with an INVALID_JSON error and never reaches the session. Frames that open with `{`, and text that is not JSON
    at all (which the session reports itself), pass through unparsed."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return

        async def objects_only():
            while True:
                message = await receive()
                text = message.get("text") if message["type"] == "websocket.receive" else None
                if text is None or not _json_but_no_object(text):
                    return message
                await send({"type": "websocket.send", "text": NOT_AN_OBJECT})

        await self.app(scope, objects_only, send)


def _json_but_no_object(text: str) -> bool:
    if text.lstrip().startswith("{"):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True

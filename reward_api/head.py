"""HEAD on every GET route (RFC 9110: the GET response's status and headers, no body).

FastAPI's routes answer only the methods they name, so a HEAD (what monitors and load balancers probe with) was a
405 on /health and /episodes/{id}; a route without GET still refuses it (405).
"""

from __future__ import annotations


class HeadAsGet:
    """Pure ASGI middleware: a HEAD request is served as GET, and the body of the answer is dropped."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)

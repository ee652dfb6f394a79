"""Optional bearer token: with CONTEXTCORRUPTION_API_TOKEN set, every route that plays or scores needs it.

Protected: /score, /score/batch, /reset, /step, /ws and /mcp — each of them returns rewards or drives a
game, so each could serve as an answer oracle. Open: what an agent may read anyway (/episodes/{id}, /tasks,
/manifest, /metadata, /schema, /state, /health) and the API docs. A request without the right token gets
401 with a `WWW-Authenticate: Bearer` header (RFC 6750); a WebSocket handshake is refused (403). The token
is compared in constant time and is never logged or echoed. The package's own clients (reward_api.inference,
reward_api.baselines) send it from the same variable, so they work against a server that requires it.
"""

from __future__ import annotations

import hmac
import json
import os

TOKEN_ENV = "CONTEXTCORRUPTION_API_TOKEN"
SCHEME_NAME = "bearerAuth"
OPEN_PATHS = frozenset(
    {"/health", "/metadata", "/schema", "/state", "/tasks", "/manifest", "/openapi.json", "/docs", "/redoc"}
)
OPEN_PREFIXES = ("/episodes/", "/docs/")


def needs_token(path: str) -> bool:
    return path not in OPEN_PATHS and not path.startswith(OPEN_PREFIXES)


def client_headers() -> dict[str, str]:
    """What a client sends: `Authorization: Bearer $CONTEXTCORRUPTION_API_TOKEN`, or nothing when it is unset."""
    token = os.environ.get(TOKEN_ENV)
    return {"Authorization": f"Bearer {token}"} if token else {}


def presented(headers: list[tuple[bytes, bytes]]) -> bytes | None:
    """The credentials of an `Authorization: Bearer <token>` header, or None (no header, other scheme, empty)."""
    for name, value in headers:
        if name == b"authorization":
            scheme, _, credentials = value.partition(b" ")
            return (credentials.strip() or None) if scheme.lower() == b"bearer" else None
    return None


class BearerAuth:
    """Pure ASGI middleware, outermost: a refused request costs no body read and reaches no route."""

    def __init__(self, app, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] not in ("http", "websocket") or not needs_token(scope["path"]):
            await self.app(scope, receive, send)
            return
        given = presented(scope["headers"])
        if given is not None and hmac.compare_digest(given, self._token):
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await _refuse(send, invalid=given is not None)


async def _refuse(send, invalid: bool) -> None:
    what = "invalid bearer token" if invalid else "missing bearer token"
    body = json.dumps({"detail": f"{what}: send the header `Authorization: Bearer <{TOKEN_ENV}>`"}).encode()
    challenge = b'Bearer realm="contextcorruption"' + (b', error="invalid_token"' if invalid else b"")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", challenge),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def document_security(spec: dict) -> None:
    """Declare the bearer scheme in an OpenAPI spec and require it on every protected operation."""
    spec.setdefault("components", {}).setdefault("securitySchemes", {})[SCHEME_NAME] = {
        "type": "http",
        "scheme": "bearer",
        "description": f"The value of {TOKEN_ENV} on the server",
    }
    for path, operations in spec["paths"].items():
        if needs_token(path):
            for operation in operations.values():
                operation["security"] = [{SCHEME_NAME: []}]
                operation.setdefault("responses", {})["401"] = {"description": "Missing or invalid bearer token"}

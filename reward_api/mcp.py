"""MCP JSON-RPC as this environment offers it (OpenEnv's POST /mcp, and {"type": "mcp"} frames over /ws): it has no
MCP tools, so it keeps no MCP sessions.

OpenEnv's session methods (openenv/session/*) and a call's `params.session_id` opened, closed or used one of the
server's session slots for whoever asked: 256 plain HTTP calls locked every /ws client out, a /ws client that closed
its own session played on with its slot free again (past the limit), and a session_id that is no string broke
OpenEnv's handler (a 500). A call that names a session is answered here and never reaches OpenEnv.
"""

from __future__ import annotations

import json

from openenv.core.env_server.mcp_types import JsonRpcErrorCode, JsonRpcResponse

SESSION_METHODS = "openenv/session/"
NO_SESSIONS = (
    "this environment has no MCP tools, so it keeps no MCP sessions; play over /ws (one session per connection) "
    "or /reset and /step with the state_token"
)


def rpc_call(body: bytes) -> dict | None:
    """The JSON-RPC request in a /mcp body as OpenEnv's handler reads it (json.loads: a stricter parser refused a
    lone surrogate, "\\ud800", that json.loads takes, and the call went on to open a session); {} when it is no
    object, which OpenEnv's handler refuses itself, and None when it is no JSON at all or holds a lone surrogate: no
    Unicode text, it broke the reply that echoed it (an id, a method: a 500)."""
    try:
        call = json.loads(body)
        json.dumps(call, ensure_ascii=False).encode()
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the interpreter's limit
        return None  # UnicodeEncodeError, a lone surrogate's, is a ValueError
    return call if isinstance(call, dict) else {}


def session_refusal(call: dict) -> dict | None:
    """The JSON-RPC error answering a call that opens, closes or names a session; None for any other call."""
    method, params = call.get("method"), call.get("params")
    if isinstance(method, str) and method.startswith(SESSION_METHODS):
        code, message = JsonRpcErrorCode.METHOD_NOT_FOUND, f"{method} is not offered: {NO_SESSIONS}"
    elif isinstance(params, dict) and "session_id" in params:
        code, message = JsonRpcErrorCode.INVALID_PARAMS, f"params.session_id is not taken: {NO_SESSIONS}"
    else:
        return None
    request_id = call.get("id")
    if not isinstance(request_id, str | int) or isinstance(request_id, bool):
        request_id = None
    return JsonRpcResponse.error_response(code, message, request_id=request_id).model_dump()

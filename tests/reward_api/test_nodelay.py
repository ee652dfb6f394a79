"""Every connection of a worker gets TCP_NODELAY: with several workers uvicorn binds the socket itself, and asyncio
left Nagle's algorithm on (each response then waited on the client's delayed ACK, ~40 ms on Linux)."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest
import uvicorn

from reward_api.nodelay import PROTOCOL


async def _app(scope, receive, send):
    if scope["type"] == "lifespan":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok"})


async def _nodelay_of_served_connection(http: str) -> int:
    """Serve on a socket bound as uvicorn's workers get theirs (`Config.bind_socket`: protocol number 0) and read
    TCP_NODELAY on the server's side of a kept-alive connection."""
    config = uvicorn.Config(_app, port=0, http=http, lifespan="off", log_level="warning")
    sock = config.bind_socket()
    assert sock.proto == 0  # the case: asyncio sets TCP_NODELAY only on sockets that say IPPROTO_TCP
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            await asyncio.sleep(0.01)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{sock.getsockname()[1]}") as client:
            assert (await client.get("/")).text == "ok"
            (connection,) = server.server_state.connections
            served = connection.transport.get_extra_info("socket")
            return served.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    finally:
        server.should_exit = True
        await task
        sock.close()


@pytest.mark.parametrize(("http", "nodelay"), [(PROTOCOL, True), ("auto", False)], ids=["ours", "uvicorns"])
def test_a_connection_on_a_socket_uvicorn_bound_has_tcp_nodelay(http, nodelay):
    """uvicorn's own protocol is the control: the day it sets TCP_NODELAY there, reward_api.nodelay can go."""
    assert bool(asyncio.run(_nodelay_of_served_connection(http))) is nodelay

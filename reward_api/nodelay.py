"""uvicorn's HTTP protocol with TCP_NODELAY set on every connection, whichever socket accepted it.

With several workers uvicorn binds the listening socket itself, leaving its protocol number 0, and asyncio sets
TCP_NODELAY only on sockets that report IPPROTO_TCP: each small response then waited on the client's delayed ACK
(about 40 ms a request on Linux, uvicorn issue #3149). One worker's socket, which asyncio binds, already had it.
"""

from __future__ import annotations

import asyncio
import socket

from uvicorn.protocols.http.auto import AutoHTTPProtocol

PROTOCOL = "reward_api.nodelay:NoDelayHTTPProtocol"  # uvicorn's `http=`: workers import it by name


class NoDelayHTTPProtocol(AutoHTTPProtocol):  # type: ignore[misc, valid-type]  (h11's or httptools', as uvicorn picks)
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)

"""A TCP server on loopback that accepts connections and never answers (test code only).

The worst unreachable member: connects succeed, then every TLS handshake and request waits
until the client gives up. A refused connection fails fast and tests nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass


@dataclass
class Tarpit:
    port: int = 0
    connections: int = 0

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"


@contextlib.asynccontextmanager
async def serve_tarpit() -> AsyncIterator[Tarpit]:
    """Accept on 127.0.0.1 and hold every connection open, silent, while the block runs."""
    tarpit = Tarpit()
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        tarpit.connections += 1
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    tarpit.port = server.sockets[0].getsockname()[1]
    try:
        yield tarpit
    finally:
        server.close()
        for writer in held:
            writer.close()
        await server.wait_closed()

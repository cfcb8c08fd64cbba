"""Byte forwarding between two sockets: a port forward while a block runs.

What bridges a network namespace to the host (:mod:`cluster_inventory.testing.netns`: the
hub's port into it, a published port out of it) and what this repository's test proxies
pipe their tunnels with. Nothing is read or logged of the bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

__all__ = ["pipe", "serve_forward", "tcp_to_unix", "unix_to_tcp"]

#: Bytes read from a socket at once.
_CHUNK = 65536


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy ``reader`` to ``writer`` until end of stream, then close ``writer``.

    A connection reset or a cancellation ends the copy quietly (the other side's copy sees
    its end in turn).
    """
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


@contextlib.asynccontextmanager
async def serve_forward(
    listen: Callable[[Callable[..., Awaitable[None]]], Awaitable[asyncio.Server]],
    dial: Callable[[], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]],
) -> AsyncIterator[asyncio.Server]:
    """A port forward while the block runs.

    Each connection ``listen`` accepts is piped to one ``dial`` opens (a connection ``dial``
    cannot open is closed).

    Args:
        listen: Starts the server with the handler given, e.g.
            ``lambda h: asyncio.start_unix_server(h, path)``.
        dial: Opens the upstream connection, e.g.
            ``lambda: asyncio.open_connection("127.0.0.1", port)``.

    Yields:
        The listening server; on exit it is closed and every open forward is cut.
    """
    tunnels: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await dial()
        except OSError:
            writer.close()
            return
        task = asyncio.current_task()
        assert task is not None
        tunnels.add(task)
        try:
            # Cancelled at the end of the block: asyncio would log a cancelled handler.
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            tunnels.discard(task)

    server = await listen(handle)
    try:
        yield server
    finally:
        server.close()
        for task in list(tunnels):
            task.cancel()
        await asyncio.gather(*tunnels, return_exceptions=True)
        await server.wait_closed()


def tcp_to_unix(port: int, path: Path) -> contextlib.AbstractAsyncContextManager[asyncio.Server]:
    """:func:`serve_forward` from ``127.0.0.1:port`` (TCP) to the Unix socket ``path``."""
    return serve_forward(
        lambda handle: asyncio.start_server(handle, "127.0.0.1", port),
        lambda: asyncio.open_unix_connection(str(path)),
    )


def unix_to_tcp(path: Path, port: int) -> contextlib.AbstractAsyncContextManager[asyncio.Server]:
    """:func:`serve_forward` from the Unix socket ``path`` to ``127.0.0.1:port`` (TCP)."""
    return serve_forward(
        lambda handle: asyncio.start_unix_server(handle, str(path)),
        lambda: asyncio.open_connection("127.0.0.1", port),
    )

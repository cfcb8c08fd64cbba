"""A cluster proxy's tunnel and CONNECT listener on loopback, with no hub (test code only).

The real :class:`~cluster_inventory.proxy.Tunnel`, :class:`~cluster_inventory.proxy.Routes`
and :class:`~cluster_inventory.proxy.ConnectServer`, and an agent end whose streams go to a
TCP server the test names, over a plain ``ws://`` WebSocket: what the wire and the refusals
do, without TLS or the hub's reviews (those are tested on a real hub).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web
from prometheus_client import CollectorRegistry

from cluster_inventory._clock import utcnow
from cluster_inventory.proxy import AgentPeer, ConnectServer, Route, Routes, Tunnel, wire

#: An agent's stream handler factory: given a one-element list holding the agent's tunnel.
OnOpen = Callable[[list[Tunnel]], Callable[[int], Coroutine[Any, Any, None]]]


def connect_answers(registry: CollectorRegistry) -> dict[int, int]:
    """``cluster_inventory_proxy_connects_total`` in ``registry``: answers by HTTP status."""
    found: dict[int, int] = {}
    for family in registry.collect():
        for sample in family.samples:
            if sample.name == "cluster_inventory_proxy_connects_total" and sample.value:
                found[int(sample.labels["code"])] = int(sample.value)
    return found


@dataclass
class LoopbackProxy:
    """The two ends of one member's tunnel and the consumers' listener.

    Attributes:
        routes: The proxy's routes (one member's, ``member``).
        connect_port: The CONNECT listener's port on 127.0.0.1.
        proxy_end: The proxy's end of the tunnel.
        agent_end: The agent's end.
        server: The CONNECT server.
        registry: Where the CONNECT server counts (its own, for this proxy alone).
        dial_agent: Dial one more tunnel for the member, with the stream handler the given
            factory builds (as ``on_open`` of :func:`loopback_proxy`); returns its agent's
            end and the proxy's, once the proxy routes it (the newest).
    """

    routes: Routes
    connect_port: int
    proxy_end: Tunnel
    agent_end: Tunnel
    server: ConnectServer
    registry: CollectorRegistry
    dial_agent: Callable[[OnOpen], Awaitable[tuple[Tunnel, Tunnel]]]

    def answers(self) -> dict[int, int]:
        """The CONNECT answers given so far, by HTTP status (200 included)."""
        return connect_answers(self.registry)


def peer(member: str) -> AgentPeer:
    """An agent the hub would have vouched for."""
    return AgentPeer(
        member=member,
        user=f"cluster-inventory:agent:{member}",
        groups=(),
        expires=None,
        credential="certificate",
    )


@contextlib.asynccontextmanager
async def loopback_proxy(
    member: str,
    target: tuple[str, int],
    *,
    on_open: OnOpen | None = None,
    open_timeout: float = 10.0,
) -> AsyncIterator[LoopbackProxy]:
    """A proxy holding one tunnel for ``member`` whose agent dials ``target``.

    Args:
        member: The member name the tunnel serves.
        target: Where the agent's streams go.
        on_open: The agent's stream handler, given a one-element list holding the agent's
            tunnel (default: dial ``target``).
        open_timeout: Seconds the CONNECT server waits for the agent.
    """
    routes = Routes()
    registry = CollectorRegistry()
    server = ConnectServer(routes, open_timeout=open_timeout, registry=registry)
    proxy_ends: asyncio.Queue[Tunnel] = asyncio.Queue()

    async def endpoint(request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(protocols=(wire.SUBPROTOCOL,), max_msg_size=wire.WS_MAX_MSG_SIZE)
        await ws.prepare(request)
        tunnel = Tunnel(ws, label=f"tunnel of member {member}")
        route = Route(peer=peer(member), tunnel=tunnel, since=utcnow())
        routes.add(route)
        proxy_ends.put_nowait(tunnel)
        try:
            await tunnel.run()
        finally:
            routes.remove(route)
        return ws

    app = web.Application()
    app.router.add_get("/tunnel/v1", endpoint)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = int(runner.addresses[0][1])
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    connect_port = listener.sockets[0].getsockname()[1]
    session = aiohttp.ClientSession()
    agents: list[tuple[Tunnel, Tunnel, asyncio.Task[None]]] = []

    def dial_target(box: list[Tunnel]) -> Callable[[int], Coroutine[Any, Any, None]]:
        async def handler(stream_id: int) -> None:
            try:
                reader, writer = await asyncio.open_connection(*target)
            except OSError as exc:
                await box[0].refuse(stream_id, f"cannot reach: {type(exc).__name__}")
                return
            await box[0].accept(stream_id, reader, writer)

        return handler

    async def dial_agent(handler_for: OnOpen) -> tuple[Tunnel, Tunnel]:
        ws = await session.ws_connect(
            f"http://127.0.0.1:{port}/tunnel/v1",
            protocols=(wire.SUBPROTOCOL,),
            max_msg_size=wire.WS_MAX_MSG_SIZE,
        )
        box: list[Tunnel] = []
        agent_end = Tunnel(ws, label=f"agent of {member}", on_open=handler_for(box))
        box.append(agent_end)
        task = asyncio.create_task(agent_end.run())
        proxy_end = await asyncio.wait_for(proxy_ends.get(), 10)
        agents.append((agent_end, proxy_end, task))
        return agent_end, proxy_end

    try:
        agent_end, proxy_end = await dial_agent(on_open or dial_target)
        yield LoopbackProxy(
            routes, connect_port, proxy_end, agent_end, server, registry, dial_agent
        )
    finally:
        for agent_end, proxy_end, task in agents:
            await agent_end.close("test over")
            await proxy_end.close("test over")
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await session.close()
        listener.close()
        await listener.wait_closed()
        await runner.cleanup()


async def connect(
    port: int, target: str, *, user: str | None = None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
    """``CONNECT target`` to the listener at ``port`` (as the proxy's ``user``, if given, as
    a proxy URL's user is sent); returns the socket and the answer head."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    auth = ""
    if user is not None:
        auth = f"Proxy-Authorization: Basic {base64.b64encode(f'{user}:'.encode()).decode()}\r\n"
    writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{auth}\r\n".encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    return reader, writer, head


@contextlib.asynccontextmanager
async def echo_server() -> AsyncIterator[tuple[str, int]]:
    """A TCP server echoing every byte back (the member's API server's stand-in)."""

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
            writer.write_eof()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    try:
        yield "127.0.0.1", server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()

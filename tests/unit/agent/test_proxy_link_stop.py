"""Stopping the agent's proxy link closes every connection it dialled, held or not.

A tunnel's holder task closes its connection in a ``finally``; a task cancelled before its
first step never runs it. The link's stop closes what is left: no aiohttp session is left
for the garbage collector (an "Unclosed client session" ResourceWarning, which the suite
turns into an error wherever it is collected). Served by a real aiohttp WebSocket on
loopback; no hub.
"""

from __future__ import annotations

import aiohttp
from aiohttp import web

from cluster_inventory import kube
from cluster_inventory.agent.proxy_link import ProxyLink
from cluster_inventory.proxy.dial import Dialled


async def test_stop_closes_a_dialled_connection_no_task_holds() -> None:
    async def endpoint(request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for _ in ws:
            pass
        return ws

    app = web.Application()
    app.router.add_get("/tunnel/v1", endpoint)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = int(runner.addresses[0][1])
    try:
        session = aiohttp.ClientSession()
        ws = await session.ws_connect(f"http://127.0.0.1:{port}/tunnel/v1")
        link = ProxyLink(
            "edge-1",
            (f"wss://127.0.0.1:{port}",),
            member_server="https://127.0.0.1:6443",
            credential=lambda: kube.ClusterConnection(server="https://hub"),
        )
        # As _keep leaves it right after a dial whose holder task never started.
        link._open.add(Dialled(ws=ws, server_id="a", server_count=1, session=session))
        await link.stop()
        assert session.closed and ws.closed
        assert link._open == set()
        await link.stop()  # idempotent
    finally:
        await runner.cleanup()

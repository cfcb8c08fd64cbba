"""The agent's side of a tunnel's handshake: TLS, its credential, the replica's answer.

The agent dials ``wss://PROXY/tunnel/v1?member=NAME`` with its hub identity: the client
certificate it holds (presented in the TLS handshake) or its bearer token
(``Authorization``), and the proxy's CA. The answer names the replica
(:data:`~.server.HEADER_SERVER_ID`) and how many replicas there are
(:data:`~.server.HEADER_SERVER_COUNT`), which is how an agent behind one Service address
knows it holds a tunnel to each (apiserver-network-proxy's ``serverCount``).
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from urllib.parse import urlencode

import aiohttp

from cluster_inventory.proxy import wire
from cluster_inventory.proxy.server import HEADER_SERVER_COUNT, HEADER_SERVER_ID, TUNNEL_PATH

__all__ = ["Dialled", "TunnelRefused", "dial"]


class TunnelRefused(Exception):
    """The proxy did not open the tunnel.

    Attributes:
        status: The handshake's HTTP status (0: no answer: refused, reset, TLS failure).
        problem: What the proxy or the connection said (no credential).
    """

    def __init__(self, status: int, problem: str) -> None:
        self.status = status
        self.problem = problem
        super().__init__(f"{status} {problem}" if status else problem)


@dataclass(eq=False)
class Dialled:
    """An open tunnel connection.

    Attributes:
        ws: The WebSocket.
        server_id: The replica's id.
        server_count: How many replicas it says serve.
        session: The client session that holds it (closed by :meth:`close`).
    """

    ws: aiohttp.ClientWebSocketResponse
    server_id: str
    server_count: int
    session: aiohttp.ClientSession

    async def close(self) -> None:
        """Close the WebSocket and its session."""
        await self.ws.close()
        await self.session.close()


async def dial(
    url: str,
    member: str,
    *,
    ssl_context: ssl.SSLContext,
    token: str | None = None,
    heartbeat: float = 30.0,
    timeout: float = 10.0,
) -> Dialled:
    """Open a tunnel to the proxy replica behind ``url`` for ``member``.

    Args:
        url: The proxy's agents' endpoint, ``wss://HOST:PORT`` (its path is replaced).
        member: The member the agent serves.
        ssl_context: Trusts the proxy's CA; holds the agent's client certificate if it has one.
        token: The agent's bearer token, if its identity is one.
        heartbeat: Seconds between pings.
        timeout: Seconds the handshake may take.

    Raises:
        TunnelRefused: The proxy answered with an error status, or could not be reached.
    """
    base = url.rstrip("/")
    if base.endswith(TUNNEL_PATH):
        base = base[: -len(TUNNEL_PATH)]
    target = f"{base}{TUNNEL_PATH}?{urlencode({'member': member})}"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    session = aiohttp.ClientSession(trust_env=False)
    try:
        ws = await session.ws_connect(
            target,
            protocols=(wire.SUBPROTOCOL,),
            ssl=ssl_context,
            headers=headers,
            heartbeat=heartbeat,
            max_msg_size=wire.WS_MAX_MSG_SIZE,
            compress=0,
            timeout=aiohttp.ClientWSTimeout(ws_receive=None, ws_close=timeout),
        )
    except aiohttp.WSServerHandshakeError as exc:
        await session.close()
        raise TunnelRefused(exc.status, exc.message) from None
    except aiohttp.ClientConnectorError as exc:  # its text holds the SSLContext's repr
        await session.close()
        cause = f"{type(exc.os_error).__name__}: {exc.os_error.strerror or exc.os_error}"
        where = f"{exc.host}:{exc.port}"
        raise TunnelRefused(0, f"cannot reach the proxy at {where}: {cause}") from None
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        await session.close()
        raise TunnelRefused(0, f"cannot reach the proxy: {type(exc).__name__}: {exc}") from None
    except BaseException:  # cancelled while dialling: the session goes with it
        await asyncio.shield(session.close())
        raise
    server_id = ws._response.headers.get(HEADER_SERVER_ID, "")
    try:
        count = max(1, int(ws._response.headers.get(HEADER_SERVER_COUNT, "1")))
    except ValueError:
        count = 1
    return Dialled(ws=ws, server_id=server_id, server_count=count, session=session)

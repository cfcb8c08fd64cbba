"""The agent's side of the cluster proxy: tunnels to every replica, streams to the API server.

With ``agent run --proxy-server URL`` the agent dials out to the hub's cluster proxy
(``docs/cluster-proxy.md``) and keeps one tunnel to each replica behind ``URL``: it dials
again until it holds as many distinct replica ids as the replicas say there are
(apiserver-network-proxy's ``serverCount``), so whichever replica a consumer's CONNECT lands
on reaches the member. Each stream the proxy opens becomes one TCP connection to the
member's API server (the host and port of the agent's member kubeconfig); the bytes are
the consumer's TLS, never read here.

A tunnel that ends (a replica killed, the hub's network gone) is dialled again with the
project's backoff (:class:`~cluster_inventory.kube.Throttle`: one warning, one line when it
works again); each dial reads the agent's current credential, so a rotated certificate is
presented from the next tunnel on.
"""

from __future__ import annotations

import asyncio
import logging
import random
import ssl
from collections.abc import Callable
from dataclasses import replace
from urllib.parse import urlsplit

from cluster_inventory import kube
from cluster_inventory.proxy import Tunnel, TunnelRefused, dial
from cluster_inventory.proxy.dial import Dialled

__all__ = ["ProxyLink", "member_address"]

_log = logging.getLogger("cluster_inventory.agent")

#: Seconds the agent gives its API server to accept a stream's connection.
CONNECT_TIMEOUT = 10.0
#: Backoff between dials that fail (seconds).
_BACKOFF = kube.Backoff(first=0.2, cap=30.0, jitter=0.2)
#: Pauses after dials that reached a replica already held (the Service picked it again).
_DUPLICATES = kube.Backoff(first=0.05, cap=30.0, jitter=0.5)


def member_address(server: str) -> tuple[str, int]:
    """The ``(host, port)`` a stream dials: the member API server's URL's (443 by default)."""
    parts = urlsplit(server)
    return parts.hostname or "", parts.port or 443


class ProxyLink:
    """Keeps the member's tunnels to the cluster proxy.

    Args:
        name: The member's name.
        servers: The proxy's agents' endpoints (``wss://``), each a Service or a replica.
        member_server: The member API server's URL (streams go to its host and port).
        credential: The agent's current hub connection (its client certificate or token).
        proxy_ca: PEM CA of the proxy's serving certificate (None: the system's trust).
        heartbeat: Seconds between WebSocket pings.
    """

    def __init__(
        self,
        name: str,
        servers: tuple[str, ...],
        *,
        member_server: str,
        credential: Callable[[], kube.ClusterConnection],
        proxy_ca: bytes | None = None,
        heartbeat: float = 30.0,
    ) -> None:
        self.name = name
        self.servers = servers
        self.target = member_address(member_server)
        self._credential = credential
        self._proxy_ca = proxy_ca
        self.heartbeat = heartbeat
        #: Replica id -> its tunnel, while it is open (whichever URL reached it).
        self.tunnels: dict[str, Tunnel] = {}
        #: How many replicas there are, as the last one answered (at least 1).
        self.server_count = 1
        self._tasks = kube.TaskSet(f"proxy link of {name}", logger=_log)
        self._changed = asyncio.Condition()
        #: Every dialled connection not closed yet: a holder task cancelled before its first
        #: step never runs its ``finally``, so :meth:`stop` closes what is left here.
        self._open: set[Dialled] = set()

    @property
    def connected(self) -> int:
        """Tunnels open now."""
        return len(self.tunnels)

    async def run(self) -> None:
        """Keep the tunnels until cancelled."""
        keepers = [
            self._tasks.spawn(self._keep(url), name=f"keep {url}", awaited=True)
            for url in self.servers
        ]
        try:
            await asyncio.gather(*keepers)
        finally:
            await self.stop()

    async def stop(self) -> None:
        """Close every tunnel and its connection (idempotent)."""
        for tunnel in list(self.tunnels.values()):
            await tunnel.close("the agent is stopping")
        await self._tasks.stop()
        for dialled in list(self._open):
            self._open.discard(dialled)
            await dialled.close()

    async def _keep(self, url: str) -> None:
        """Dial ``url`` while fewer replicas than there are hold a tunnel of ours."""
        throttle = kube.Throttle(
            f"keep a tunnel to the cluster proxy {url}",
            logger=_log,
            backoff=_BACKOFF,
            extra={"object": self.name},
        )
        duplicates = 0
        while True:
            async with self._changed:
                await self._changed.wait_for(lambda: len(self.tunnels) < self.server_count)
            try:
                dialled = await dial(
                    url,
                    self.name,
                    ssl_context=self._ssl(),
                    token=self._credential().token,
                    heartbeat=self.heartbeat,
                )
            except (TunnelRefused, kube.KubeConfigError) as exc:
                await throttle.pause(exc)
                continue
            self._open.add(dialled)
            throttle.succeeded()
            self.server_count = dialled.server_count
            tunnel_id = dialled.server_id
            if tunnel_id in self.tunnels:
                # The URL (a Service) led to a replica we hold: ask again, ever more slowly
                # while it keeps doing so (a replica behind another URL may be down).
                self._open.discard(dialled)
                await dialled.close()
                duplicates += 1
                await asyncio.sleep(_DUPLICATES.delay(duplicates, random.random()))  # noqa: S311 - jitter
                continue
            duplicates = 0
            tunnel = self._tunnel(dialled, tunnel_id)
            self.tunnels[tunnel_id] = tunnel
            _log.info(
                "tunnel to cluster proxy replica %s open (%d of %d)",
                tunnel_id,
                len(self.tunnels),
                self.server_count,
                extra={"object": self.name},
            )
            self._tasks.spawn(self._hold(tunnel_id, tunnel, dialled), name=f"tunnel {tunnel_id}")

    def _tunnel(self, dialled: Dialled, tunnel_id: str) -> Tunnel:
        """A tunnel over ``dialled`` whose streams go to the member's API server."""
        opened: list[Tunnel] = []

        async def on_open(stream_id: int) -> None:
            await self._carry(opened[0], stream_id)

        tunnel = Tunnel(
            dialled.ws,
            label=f"tunnel of member {self.name} to proxy {tunnel_id}",
            on_open=on_open,
        )
        opened.append(tunnel)
        return tunnel

    async def _hold(self, tunnel_id: str, tunnel: Tunnel, dialled: Dialled) -> None:
        try:
            await tunnel.run()
        finally:
            if self.tunnels.get(tunnel_id) is tunnel:
                del self.tunnels[tunnel_id]
            self._open.discard(dialled)
            await asyncio.shield(dialled.close())  # also when cancelled (the agent stops)
            _log.warning(
                "tunnel to cluster proxy replica %s ended: %s; dialling again",
                tunnel_id,
                tunnel.close_reason,
                extra={"object": self.name},
            )
            async with self._changed:
                self._changed.notify_all()

    async def _carry(self, tunnel: Tunnel, stream_id: int) -> None:
        """Carry stream ``stream_id`` to the member's API server (or refuse it, saying why)."""
        host, port = self.target
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                reader, writer = await asyncio.open_connection(host, port)
        except (OSError, TimeoutError) as exc:
            await tunnel.refuse(
                stream_id, f"the agent cannot reach its API server: {type(exc).__name__}"
            )
            return
        await tunnel.accept(stream_id, reader, writer)

    def _ssl(self) -> ssl.SSLContext:
        conn = replace(self._credential(), ca_data=self._proxy_ca, token=None)
        return kube.ssl_context_for(conn)

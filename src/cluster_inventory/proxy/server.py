"""The cluster proxy as one runnable: the agents' tunnel endpoint and the consumers' CONNECT.

``cluster-inventory proxy run`` adds a :class:`ClusterProxy` to a
:class:`~cluster_inventory.controller.Manager` (hub client, ``/healthz``, ``/readyz``,
``/metrics``, signals); like the agent it satisfies the Manager's ``Runnable`` protocol
without importing it. Every replica serves (no leader): an agent holds a tunnel to each
replica (``docs/cluster-proxy.md``, "Replicas"), and a replica announces its id and the
number of replicas in the handshake's answer so the agent knows when it holds them all.

Two listeners: agents dial ``wss://HOST:PORT/tunnel/v1?member=NAME`` (TLS with this
replica's serving certificate; a client certificate is asked for and verified against the
hub's client CA, or a bearer token is sent: :mod:`.peers`), and consumers send ``CONNECT``
to a plain TCP port (:mod:`.connect`: their TLS runs end to end inside the stream).

At rest a tunnel costs its WebSocket ping (every ``heartbeat`` s, both ways) and one
SubjectAccessReview per ``recheck_interval`` (``docs/scale.md``); a tunnel whose agent lost
its acceptance, or whose certificate expired, is closed at the next check.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import ssl
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web
from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory import kube
from cluster_inventory._clock import utcnow
from cluster_inventory.proxy import wire
from cluster_inventory.proxy.connect import ConnectServer
from cluster_inventory.proxy.metrics import ProxyMetrics
from cluster_inventory.proxy.peers import AgentRefused, Authenticator
from cluster_inventory.proxy.routes import Route, Routes
from cluster_inventory.proxy.tunnel import Tunnel

__all__ = [
    "HEADER_SERVER_COUNT",
    "HEADER_SERVER_ID",
    "TUNNEL_PATH",
    "ClusterProxy",
    "ProxyConfig",
    "hub_client_ca",
]

_log = logging.getLogger("cluster_inventory.proxy")

#: The agents' endpoint.
TUNNEL_PATH = "/tunnel/v1"
#: Handshake answer headers: this replica's id, and how many replicas there are.
HEADER_SERVER_ID = "Cluster-Proxy-Server-Id"
HEADER_SERVER_COUNT = "Cluster-Proxy-Server-Count"
#: Where the hub's API server publishes the CA it verifies client certificates with.
_AUTH_CONFIGMAP = ("kube-system", "extension-apiserver-authentication")


@dataclass(frozen=True, kw_only=True)
class ProxyConfig:
    """A proxy replica's settings.

    Attributes:
        namespace: The cluster manager's hub namespace (the members' Leases).
        tunnel_address: ``(host, port)`` the agents' TLS endpoint listens on.
        connect_address: ``(host, port)`` the consumers' CONNECT listener listens on.
        tls_cert_file: PEM serving certificate (chain) of the agents' endpoint.
        tls_key_file: Its PEM private key.
        client_ca_pem: PEM CA bundle agents' client certificates are verified with
            (None: read the hub's, :func:`hub_client_ca`).
        server_id: This replica's id (default: random, 16 hex digits).
        server_count: How many replicas serve (each agent keeps a tunnel to each).
        heartbeat: Seconds between WebSocket pings of an idle tunnel.
        recheck_interval: Seconds between re-checks of every tunnel's agent with the hub.
    """

    namespace: str
    tunnel_address: tuple[str, int]
    connect_address: tuple[str, int]
    tls_cert_file: Path
    tls_key_file: Path
    client_ca_pem: bytes | None = None
    server_id: str = field(default_factory=lambda: secrets.token_hex(8))
    server_count: int = 1
    heartbeat: float = 30.0
    recheck_interval: float = 300.0

    def __post_init__(self) -> None:
        if self.server_count < 1:
            raise ValueError(f"proxy server_count: {self.server_count} is not at least 1")
        for name, seconds in (
            ("heartbeat", self.heartbeat),
            ("recheck_interval", self.recheck_interval),
        ):
            if not seconds > 0:
                raise ValueError(f"proxy {name}: {seconds:g} s is not positive")


async def hub_client_ca(hub: kube.ApiClient) -> bytes:
    """The CA bundle the hub's API server verifies client certificates with.

    Raises:
        KubeError: The ConfigMap cannot be read, or has no ``client-ca-file``.
    """
    namespace, name = _AUTH_CONFIGMAP
    found = await kube.get(hub, kube.CONFIG_MAPS, name, namespace)
    pem = (found.get("data") or {}).get("client-ca-file")
    if not pem:
        raise kube.errors.KubeAPIError(
            status=404,
            reason="NotFound",
            message="has no client-ca-file",
            target=f"ConfigMap {namespace}/{name}",
        )
    return str(pem).encode()


class ClusterProxy:
    """One replica of the cluster proxy.

    Args:
        hub: The proxy's hub client (reviews; the caller closes it).
        config: Its settings.
        registry: Where it is counted (:class:`.ProxyMetrics`; the Manager's, which
            ``/metrics`` serves).
    """

    #: Every replica serves: an agent keeps a tunnel to each.
    needs_leader_election = False

    def __init__(
        self, hub: kube.ApiClient, config: ProxyConfig, *, registry: CollectorRegistry = REGISTRY
    ) -> None:
        self.hub = hub
        self.config = config
        self.routes = Routes()
        self.authenticator = Authenticator(hub, config.namespace)
        self.connect = ConnectServer(self.routes, registry=registry)
        self.metrics = ProxyMetrics.for_registry(registry)
        self._runner: web.AppRunner | None = None
        self._connect_server: asyncio.Server | None = None
        self._tasks = kube.TaskSet(f"cluster proxy {config.server_id}", logger=_log)
        #: Ports bound (after :meth:`prepare`): the agents' and the consumers'.
        self.tunnel_port = 0
        self.connect_port = 0

    def _tls(self, client_ca: bytes) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(self.config.tls_cert_file, self.config.tls_key_file)
        ctx.load_verify_locations(cadata=client_ca.decode())
        ctx.verify_mode = ssl.CERT_OPTIONAL  # a bearer token is the other way in
        return ctx

    async def prepare(self) -> None:
        """Read the hub's client CA, bind both listeners.

        Raises:
            KubeError: The hub's client CA cannot be read.
            OSError: A port cannot be bound, or the TLS files do not load.
        """
        if self._runner is not None:
            return
        client_ca = self.config.client_ca_pem or await hub_client_ca(self.hub)
        app = web.Application()
        app.router.add_get(TUNNEL_PATH, self._tunnel)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        host, port = self.config.tunnel_address
        site = web.TCPSite(runner, host, port, ssl_context=self._tls(client_ca))
        await site.start()
        self._runner = runner
        self.tunnel_port = int(runner.addresses[0][1])
        host, port = self.config.connect_address
        self._connect_server = await asyncio.start_server(self.connect.handle, host, port)
        self.connect_port = self._connect_server.sockets[0].getsockname()[1]
        _log.info(
            "cluster proxy %s: agents at %s:%d, consumers' CONNECT at %s:%d",
            self.config.server_id,
            self.config.tunnel_address[0],
            self.tunnel_port,
            host,
            self.connect_port,
        )

    async def run(self) -> None:
        """Serve until cancelled, re-checking every tunnel's agent with the hub."""
        await self.prepare()
        while True:
            await asyncio.sleep(self.config.recheck_interval)
            await self.recheck()

    async def recheck(self) -> None:
        """Close each tunnel whose credential expired or whose agent the hub now refuses.

        A hub that does not answer closes nothing (its outage is not the agents' fault).
        """
        now = utcnow()
        for route in self.routes:
            peer = route.peer
            if peer.expires is not None and peer.expires <= now:
                self.metrics.closed_by_recheck.labels("expired").inc()
                await self._close(route, "the agent's certificate expired")
                continue
            try:
                allowed = await self.authenticator.allowed(peer.member, peer.user, peer.groups)
            except kube.KubeError:
                continue
            if not allowed:
                self.metrics.closed_by_recheck.labels("revoked").inc()
                await self._close(route, "the hub no longer lets the agent serve its member")

    async def _close(self, route: Route, reason: str) -> None:
        _log.info(
            "tunnel of member %s closed: %s",
            route.peer.member,
            reason,
            extra={"object": route.peer.member},
        )
        self.routes.remove(route)
        await route.tunnel.close(reason)

    def ready(self) -> bool:
        """Both listeners are bound."""
        return self._runner is not None and self._connect_server is not None

    async def stop(self) -> None:
        """Close every tunnel and both listeners (idempotent)."""
        server, self._connect_server = self._connect_server, None
        if server is not None:
            server.close()
        for route in self.routes:
            await route.tunnel.close("the proxy is stopping")
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        if server is not None:
            with contextlib.suppress(Exception):
                await server.wait_closed()
        await self._tasks.stop()

    async def _tunnel(self, request: web.Request) -> web.StreamResponse:
        """The agents' endpoint: authenticate, then hold the tunnel until it ends."""
        member = request.query.get("member", "")
        auth = request.headers.get("Authorization", "")
        token = auth[7:].strip() if auth[:7].lower() == "bearer " else None
        certificate = request.transport.get_extra_info("peercert") if request.transport else None
        try:
            peer = await self.authenticator.authenticate(
                member, certificate=certificate or None, token=token
            )
        except AgentRefused as exc:
            _log.warning(
                "tunnel refused (%d) for member %.64r: %s",
                exc.status,
                member,
                exc.problem,
                extra={"object": member[:64]},
            )
            self.metrics.handshakes.labels(str(exc.status)).inc()
            return web.Response(status=exc.status, text=exc.problem + "\n")
        except kube.KubeError as exc:
            self.metrics.handshakes.labels("503").inc()
            return web.Response(status=503, text=f"the hub did not answer: {exc}\n")
        ws = web.WebSocketResponse(
            protocols=(wire.SUBPROTOCOL,),
            heartbeat=self.config.heartbeat,
            max_msg_size=wire.WS_MAX_MSG_SIZE,
            compress=False,
        )
        ws.headers[HEADER_SERVER_ID] = self.config.server_id
        ws.headers[HEADER_SERVER_COUNT] = str(self.config.server_count)
        await ws.prepare(request)
        self.metrics.handshakes.labels("101").inc()
        tunnel = Tunnel(ws, label=f"tunnel of member {peer.member}")
        route = Route(peer=peer, tunnel=tunnel, since=utcnow())
        self.routes.add(route)
        self.metrics.tunnels.inc()
        _log.info(
            "tunnel of member %s open (%s %s)",
            peer.member,
            peer.credential,
            peer.user,
            extra={"object": peer.member},
        )
        try:
            await tunnel.run()
        finally:
            self.routes.remove(route)
            self.metrics.tunnels.dec()
            _log.info(
                "tunnel of member %s ended: %s",
                peer.member,
                tunnel.close_reason,
                extra={"object": peer.member},
            )
        return ws

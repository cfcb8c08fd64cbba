"""Running the manager as a process: leader election, health and metrics endpoints, shutdown.

``cluster-inventory manager run`` calls :func:`run_manager`. Replicas elect a leader with a
Lease on the hub (client-go timings 15 s / 10 s / 2 s); only the leader reconciles. Every
replica serves ``/healthz`` and ``/readyz`` (ready once the leader's informers synced, or
while waiting as a standby) and Prometheus ``/metrics``. Cancelling the task (SIGTERM in the
CLI) stops the reconcilers and releases the Lease so a standby takes over at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

from cluster_inventory import kube
from cluster_inventory.kube.leaderelection import LeaderElectionConfig, LeaderElector
from cluster_inventory.manager.config import ManagerConfig
from cluster_inventory.manager.controller import ClusterManager

__all__ = [
    "LEASE_NAME",
    "ManagerProcess",
    "default_identity",
    "parse_bind_address",
    "run_manager",
    "serve_endpoints",
]

#: Name of the leader-election Lease in the manager's namespace.
LEASE_NAME = "cluster-inventory-manager"
_log = logging.getLogger("cluster_inventory.manager")


def default_identity() -> str:
    """``$POD_NAME`` when deployed, else ``<hostname>_<pid>`` (client-go's convention)."""
    return os.environ.get("POD_NAME") or f"{socket.gethostname()}_{os.getpid()}"


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """``:8080``, ``127.0.0.1:8080`` or ``0`` (disabled) to (host, port) or None.

    Raises:
        ValueError: Not ``[host]:port``; the message quotes the value.
    """
    if address in ("0", ""):
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bind address {address!r} is not [host]:port")
    return host.strip("[]") or "0.0.0.0", int(port)  # noqa: S104 - an explicit choice of the user


@dataclass
class ManagerProcess:
    """State shared with the HTTP endpoints."""

    manager: ClusterManager
    elector: LeaderElector | None
    started: bool = False

    def ready(self) -> bool:
        """Ready: a standby waiting on the Lease, or the leader with synced informers."""
        if self.elector is not None and not self.elector.is_leader:
            return self.started
        return self.manager.synced.is_set()


async def serve_endpoints(
    ready: Callable[[], bool],
    health: tuple[str, int] | None,
    metrics: tuple[str, int] | None,
    registry: CollectorRegistry,
) -> list[web.AppRunner]:
    """Serve ``/healthz`` and ``/readyz`` on ``health`` and ``/metrics`` on ``metrics``.

    The endpoints of a controller-runtime manager (``--health-probe-bind-address``,
    ``--metrics-bind-address``), shared by every long-running process of ours.

    Args:
        ready: Called on each ``/readyz``: True answers 200 ``ok``, False 503 ``not ready``.
        health: (host, port) of the probes, or None for none.
        metrics: (host, port) of the Prometheus text exposition, or None for none.
        registry: The registry ``/metrics`` exposes.

    Returns:
        The running servers; call ``cleanup()`` on each to stop them.

    Raises:
        OSError: An address cannot be bound (in use, not permitted).
    """

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        ok = ready()
        return web.Response(text="ok" if ok else "not ready", status=200 if ok else 503)

    async def metrics_handler(_: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    runners = []
    for address, routes in (
        (health, [web.get("/healthz", healthz), web.get("/readyz", readyz)]),
        (metrics, [web.get("/metrics", metrics_handler)]),
    ):
        if address is None:
            continue
        app = web.Application()
        app.add_routes(routes)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, address[0], address[1]).start()
        runners.append(runner)
    return runners


async def run_manager(
    hub: kube.ClusterConnection,
    config: ManagerConfig,
    *,
    identity: str | None = None,
    leader_elect: bool = True,
    health_address: tuple[str, int] | None = None,
    metrics_address: tuple[str, int] | None = None,
    lease: LeaderElectionConfig | None = None,
    registry: CollectorRegistry = REGISTRY,
    started: asyncio.Event | None = None,
) -> bool:
    """Run one manager replica until cancelled or until it loses leadership.

    Args:
        hub: Hub connection.
        config: Manager settings.
        identity: Replica identity for the Lease (default :func:`default_identity`).
        leader_elect: Take part in leader election (off: reconcile at once).
        health_address: Where to serve ``/healthz`` and ``/readyz`` (None: nowhere).
        metrics_address: Where to serve ``/metrics`` (None: nowhere).
        lease: Lease settings (defaults: ``config.namespace``/``cluster-inventory-manager``,
            client-go timings).
        registry: Prometheus registry for metrics.
        started: Set once the endpoints are up.

    Returns:
        True if leadership was lost (exit and let the supervisor restart the process, as
        controller-runtime does); False if the manager stopped on its own.

    Raises:
        KubeConfigError: The hub TLS material does not load.
    """
    identity = identity or default_identity()
    async with await kube.new_client(hub) as client:
        manager = ClusterManager(client, config, identity=identity, registry=registry)
        elector = None
        if leader_elect:
            elector = LeaderElector(
                client,
                lease
                or LeaderElectionConfig(
                    namespace=config.namespace, name=LEASE_NAME, identity=identity
                ),
                registry=registry,
            )
        process = ManagerProcess(manager, elector)
        runners = await serve_endpoints(process.ready, health_address, metrics_address, registry)
        process.started = True
        if started is not None:
            started.set()
        try:
            if elector is None:
                await manager.run()
                return False
            lost = await elector.run(manager.run)
            if lost:
                _log.error("leadership lost; stopping", extra={"object": identity})
            return lost
        finally:
            for runner in runners:
                with contextlib.suppress(Exception):
                    await runner.cleanup()

"""The pieces every long-running controller process shares: identity, probes, metrics.

controller-runtime's manager serves ``/healthz`` and ``/readyz`` on one address
(``--health-probe-bind-address``, default ``:8081``) and Prometheus ``/metrics`` on another
(``--metrics-bind-address``, default ``:8080``), and names a replica in its Lease by pod
name. The cluster manager, the Argo CD sync and the MultiKueue sync all do the same, so the
code lives here once (aiohttp is already this package's HTTP stack).
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import AsyncIterator, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

__all__ = ["default_identity", "parse_bind_address", "serve_endpoints"]


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


@contextlib.asynccontextmanager
async def serve_endpoints(
    ready: Callable[[], bool],
    *,
    health: tuple[str, int] | None,
    metrics: tuple[str, int] | None,
    registry: CollectorRegistry = REGISTRY,
) -> AsyncIterator[None]:
    """Serve ``/healthz`` + ``/readyz`` and ``/metrics`` while the context is open.

    ``/healthz`` answers 200 while the event loop runs; ``/readyz`` answers 200 when
    ``ready()`` is true and 503 otherwise; ``/metrics`` is ``registry`` in the Prometheus
    text format.

    Args:
        ready: Readiness, asked on every ``/readyz`` request (must not block).
        health: Where to serve the probes (None: nowhere).
        metrics: Where to serve the metrics (None: nowhere).
        registry: The Prometheus registry to expose.

    Raises:
        OSError: An address cannot be bound (e.g. the port is taken).
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

    runners: list[web.AppRunner] = []
    try:
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
            runners.append(runner)
            await web.TCPSite(runner, address[0], address[1]).start()
        yield
    finally:
        for runner in runners:
            with contextlib.suppress(Exception):
                await runner.cleanup()

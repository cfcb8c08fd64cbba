"""A real member's outage, observed by a cluster manager that a real Prometheus scrapes.

:func:`observed_outage` starts a member of the test's own (a kube-apiserver on the session
fleet's etcd, not a session member other tests use), registers it with a cluster manager on
the session hub (:mod:`.manager`), serves the manager's own registry on the
product's ``/metrics`` endpoint and has Prometheus (:mod:`tests.support.processes.prometheus`) scrape it every
second. It kills the member's kube-apiserver, starts it again, and yields once the hub and
Prometheus both saw it back, with the times measured on the way: every wait is on the hub's
or Prometheus's own answers, never a fixed time. The manager and Prometheus run until the
context exits, so the test can read the Events, the series, or open the dashboard.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from cluster_inventory.api.constants import (
    CONDITION_CONTROL_PLANE_HEALTHY,
    METRIC_PROFILE_CONDITION,
)
from cluster_inventory.kube.endpoints import serve_endpoints
from cluster_inventory.testing import ControlPlane, Fleet, free_port
from tests.support.hub.manager import Harness, running_manager
from tests.support.processes.prometheus import Prometheus, prometheus
from tests.support.waiting import eventually

#: Prometheus's scrape interval, seconds.
SCRAPE = 1.0


@dataclass
class ObservedOutage:
    """What :func:`observed_outage` ran and measured (Unix seconds).

    Attributes:
        harness: The cluster manager (its registry, its hub client).
        member: The member's control plane.
        name: The member's registration name (its profile's name).
        namespace: The inventory its profile is in.
        prometheus: The server scraping the manager.
        began: Before the member was registered.
        stopped, started: When its kube-apiserver was killed, and when it answered again.
        down, up: When the hub was seen saying ``ControlPlaneHealthy`` False, then True.
    """

    harness: Harness
    member: ControlPlane
    name: str
    namespace: str
    prometheus: Prometheus
    began: float
    stopped: float
    started: float
    down: float
    up: float


async def _scrapes(server: Prometheus, ns: str, name: str, status: str, window: str) -> float:
    found = await server.query(
        f'sum_over_time({METRIC_PROFILE_CONDITION}{{namespace="{ns}",name="{name}",'
        f'condition="ControlPlaneHealthy",status="{status}"}}[{window}])'
    )
    return float(found[0]["value"][1]) if found else 0.0


@contextlib.asynccontextmanager
async def observed_outage(
    fleet: Fleet, test_namespace: str, workdir: Path
) -> AsyncIterator[ObservedOutage]:
    """Run a member through an outage under a scraped manager; yield what was measured."""
    name = "outage-" + uuid.uuid4().hex[:6]
    port = free_port()
    async with (
        ControlPlane(name, etcd=fleet.etcd) as member,
        running_manager(fleet, test_namespace) as h,
        serve_endpoints(
            lambda: True, health=None, metrics=("127.0.0.1", port), registry=h.manager.registry
        ),
        prometheus(workdir, [f"127.0.0.1:{port}"], scrape_interval=f"{SCRAPE:g}s") as server,
    ):
        began = time.time()
        clusterset = f"{h.manager.config.name}-outage"
        ns = await h.inventory("outage", clusterset)
        await h.register(name, member, [clusterset])

        async def health() -> str:
            cond = await h.condition(ns, name, CONDITION_CONTROL_PLANE_HEALTHY)
            return "" if cond is None else str(cond["status"])

        async def profile_is(status: str) -> float | None:
            return time.time() if await health() == status else None

        async def scraped(status: str, window: str, count: int) -> bool:
            return await _scrapes(server, ns, name, status, window) >= count

        await eventually(lambda: profile_is("True"), timeout=60, what="the member healthy")
        await eventually(lambda: scraped("true", "1m", 3), timeout=60, what="3 healthy scrapes")
        stopped = time.time()
        await member.stop_apiserver(kill=True)
        down = await eventually(lambda: profile_is("False"), timeout=30, what="profile False")
        await eventually(lambda: scraped("false", "1m", 5), timeout=60, what="5 scrapes down")
        await member.start_apiserver()
        started = time.time()
        up = await eventually(lambda: profile_is("True"), timeout=60, what="profile True again")
        await eventually(lambda: scraped("true", "3s", 3), timeout=60, what="healthy scrapes")
        yield ObservedOutage(
            harness=h,
            member=member,
            name=name,
            namespace=ns,
            prometheus=server,
            began=began,
            stopped=stopped,
            started=started,
            down=down,
            up=up,
        )

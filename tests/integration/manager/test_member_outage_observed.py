"""A real member stopped and started: its Events on the profile and its outage in Prometheus.

A member of the test's own (a kube-apiserver on the session fleet's etcd, not a session
member other tests use) is registered with a cluster manager on the session hub; the
manager's own ``/metrics`` (its registry, served by the product's endpoint) is scraped by a
real Prometheus (built from its Go module) every second. The member's kube-apiserver is
killed, then started again. The test waits on the hub and on Prometheus's own answers, never
a fixed time, and checks:

- the Events on the ClusterProfile: ``Warning ControlPlaneUnhealthy`` on the way down and
  ``Normal ControlPlaneHealthy`` on the way back, each naming the member, from the manager;
- the manager's health counter, labelled with the member's name;
- Prometheus's answer for the outage (``integrations.availability``, what
  ``cluster-inventory availability`` and the dashboard ask) within one scrape interval and
  one step of the outage as measured on the hub (the profile seen turning False, then True).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api.constants import CONDITION_CONTROL_PLANE_HEALTHY
from cluster_inventory.integrations.availability import read_availability
from cluster_inventory.kube.endpoints import serve_endpoints
from cluster_inventory.testing import ControlPlane, Fleet, free_port
from tests.manager_harness import Harness, running_manager
from tests.prometheus import Prometheus, prometheus
from tests.waiting import eventually

SCRAPE = 1.0
STEP = 1.0
METRIC = "cluster_inventory_cluster_profile_condition"


async def _health(h: Harness, ns: str, name: str) -> str:
    cond = await h.condition(ns, name, CONDITION_CONTROL_PLANE_HEALTHY)
    return "" if cond is None else str(cond["status"])


async def _scrapes(server: Prometheus, ns: str, name: str, status: str, window: str) -> float:
    found = await server.query(
        f'sum_over_time({METRIC}{{namespace="{ns}",name="{name}",'
        f'condition="ControlPlaneHealthy",status="{status}"}}[{window}])'
    )
    return float(found[0]["value"][1]) if found else 0.0


async def _events(h: Harness, ns: str, name: str) -> list[dict[str, Any]]:
    listed = await kube.list_objects(h.hub_client, kube.EVENTS, namespace=ns)
    return [e for e in listed["items"] if (e.get("regarding") or {}).get("name") == name]


async def test_a_stopped_member_gives_its_events_and_prometheus_its_outage(
    fleet: Fleet, test_namespace: str, tmp_path: Path
) -> None:
    member_name = "outage-" + uuid.uuid4().hex[:6]
    port = free_port()
    async with (
        ControlPlane(member_name, etcd=fleet.etcd) as member,
        running_manager(fleet, test_namespace) as h,
        serve_endpoints(
            lambda: True, health=None, metrics=("127.0.0.1", port), registry=h.manager.registry
        ),
        prometheus(tmp_path, [f"127.0.0.1:{port}"], scrape_interval=f"{SCRAPE:g}s") as server,
    ):
        began = time.time()
        ns = await h.inventory("outage", f"{h.manager.config.name}-outage")
        await h.register(member_name, member, [f"{h.manager.config.name}-outage"])
        await eventually(
            lambda: _health(h, ns, member_name), timeout=60, what="the member's profile"
        )
        assert await _health(h, ns, member_name) == "True"

        async def healthy_scrapes() -> bool:
            return await _scrapes(server, ns, member_name, "true", "1m") >= 3

        await eventually(healthy_scrapes, timeout=60, what="three healthy scrapes")

        stopped = time.time()
        await member.stop_apiserver(kill=True)

        async def profile_is(status: str) -> float | None:
            return time.time() if await _health(h, ns, member_name) == status else None

        down = await eventually(lambda: profile_is("False"), timeout=30, what="profile False")

        async def down_scrapes() -> bool:
            return await _scrapes(server, ns, member_name, "false", "1m") >= 5

        await eventually(down_scrapes, timeout=60, what="five scrapes down")
        await member.start_apiserver()
        started = time.time()
        up = await eventually(lambda: profile_is("True"), timeout=60, what="profile True again")

        async def back_scrapes() -> bool:
            return await _scrapes(server, ns, member_name, "true", "3s") >= 3

        await eventually(back_scrapes, timeout=60, what="healthy scrapes again")
        report = await read_availability(
            server.url,
            since=time.time() - began + 5,
            step=STEP,
            namespace=ns,
            name=member_name,
        )
        events = await _events(h, ns, member_name)
        transitions = h.manager.registry.get_sample_value(
            "cluster_inventory_member_health_transitions_total",
            {"status": "False", "member": member_name},
        )

    (history,) = report.members
    (outage,) = history.outages
    assert outage.end is not None
    print(
        f"kube-apiserver down {started - stopped:.1f}s; outage as measured on the hub "
        f"{up - down:.1f}s from {down:.1f}; Prometheus's answer {outage.seconds:.0f}s from "
        f"{outage.start.timestamp():.1f} ({outage.reason}, availability "
        f"{history.availability:.4f})"
    )
    slack = SCRAPE + STEP
    assert down - slack <= outage.start.timestamp() <= down + slack
    assert up - slack <= outage.end.timestamp() <= up + slack
    assert abs(outage.seconds - (up - down)) <= slack
    assert (outage.status, outage.reason) == ("False", "APIServerUnreachable")

    by_reason = {(e["type"], e["reason"]): e for e in events}
    warning = by_reason[("Warning", "ControlPlaneUnhealthy")]
    normal = by_reason[("Normal", "ControlPlaneHealthy")]
    for event in (warning, normal):
        assert event["regarding"]["kind"] == "ClusterProfile"
        assert event["regarding"]["namespace"] == ns
        assert event["reportingController"] == "cluster-inventory.dev/manager"
        assert event["note"].startswith(f"member {member_name}: ControlPlaneHealthy ")
    assert "True -> False (APIServerUnreachable)" in warning["note"]
    assert "False -> True" in normal["note"]
    assert transitions is not None and transitions >= 1

"""A real member stopped and started: its Events on the profile and its outage in Prometheus.

The outage is ``tests/support/hub/member_outage.py``'s: a member of the test's own behind a cluster
manager on the session hub, whose ``/metrics`` a real Prometheus scrapes every second; its
kube-apiserver killed, then started again. Checked:

- the Events on the ClusterProfile: ``Warning ControlPlaneUnhealthy`` on the way down and
  ``Normal ControlPlaneHealthy`` on the way back, each naming the member, from the manager;
- the manager's health counter, labelled with the member's name;
- Prometheus's answer for the outage (``integrations.availability``, what
  ``cluster-inventory availability`` and the dashboard ask) within one scrape interval and
  one step of the outage as measured on the hub (the profile seen turning False, then True).
"""

from __future__ import annotations

import time
from pathlib import Path

from cluster_inventory import kube
from cluster_inventory.integrations.availability import read_availability
from cluster_inventory.testing import Fleet
from tests.support.hub.member_outage import SCRAPE, observed_outage

STEP = 1.0


async def test_a_stopped_member_gives_its_events_and_prometheus_its_outage(
    fleet: Fleet, test_namespace: str, tmp_path: Path
) -> None:
    async with observed_outage(fleet, test_namespace, tmp_path) as seen:
        report = await read_availability(
            seen.prometheus.url,
            since=time.time() - seen.began + 5,
            step=STEP,
            namespace=seen.namespace,
            name=seen.name,
        )
        listed = await kube.list_objects(
            seen.harness.hub_client, kube.EVENTS, namespace=seen.namespace
        )
        transitions = seen.harness.manager.registry.get_sample_value(
            "cluster_inventory_member_health_transitions_total",
            {"status": "False", "member": seen.name},
        )

    (history,) = report.members
    (outage,) = history.outages
    assert outage.end is not None
    print(
        f"kube-apiserver down {seen.started - seen.stopped:.1f}s; outage as measured on the "
        f"hub {seen.up - seen.down:.1f}s from {seen.down:.1f}; Prometheus's answer "
        f"{outage.seconds:.0f}s from {outage.start.timestamp():.1f} ({outage.reason}, "
        f"availability {history.availability:.4f})"
    )
    slack = SCRAPE + STEP
    assert seen.down - slack <= outage.start.timestamp() <= seen.down + slack
    assert seen.up - slack <= outage.end.timestamp() <= seen.up + slack
    assert abs(outage.seconds - (seen.up - seen.down)) <= slack
    assert (outage.status, outage.reason) == ("False", "APIServerUnreachable")

    events = [e for e in listed["items"] if e["regarding"]["name"] == seen.name]
    for event in events:
        assert event["regarding"]["kind"] == "ClusterProfile"
        assert event["regarding"]["namespace"] == seen.namespace
        assert event["reportingController"] == "cluster-inventory.dev/manager"
        assert event["note"].startswith(f"member {seen.name}: ")
    notes = {(e["type"], e["reason"], e["note"].split(":")[1].strip()) for e in events}
    # Down: the probe found nothing listening. Back: healthy again (between them, maybe
    # a restarting kube-apiserver's failing readyz checks, another reason while False).
    assert (
        "Warning",
        "ControlPlaneUnhealthy",
        "ControlPlaneHealthy True -> False (APIServerUnreachable)",
    ) in notes, notes
    assert any(
        t == "Normal"
        and r == "ControlPlaneHealthy"
        and n.startswith("ControlPlaneHealthy False -> True")
        for t, r, n in notes
    ), notes
    print(
        "events:",
        *sorted(f"{e['type']} {e['reason']}: {e['note'][:100]}" for e in events),
        sep="\n  ",
    )
    assert transitions is not None and transitions >= 1

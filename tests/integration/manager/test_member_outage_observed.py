"""A real member stopped and started: its Events on the profile and its outage in Prometheus.

The outage is ``tests/support/hub/member_outage.py``'s: a member of the test's own behind a cluster
manager on the session hub, whose ``/metrics`` a real Prometheus scrapes every second; its
kube-apiserver killed, then started again. Checked:

- the Events on the ClusterProfile: ``Warning ControlPlaneUnhealthy`` on the way down and
  ``Normal ControlPlaneHealthy`` on the way back, each naming the member, from the manager;
- the manager's health counter, labelled with the member's name;
- Prometheus's answer for the outage (``integrations.availability``, what
  ``cluster-inventory availability`` and the dashboard ask) within one scrape interval and
  one step of the outage as measured on the hub (the profile seen turning False, then True);
- the member's page on the dashboard, given that Prometheus
  (:class:`~cluster_inventory.dashboard.availability.PrometheusAvailability`, what
  ``dashboard --prometheus URL`` wires), in Debian's headless Chromium: each window's figure,
  the outage with its reason, and the manager's Events about it on the timeline; a screenshot
  is saved under the test's tmp dir (its path printed; docs/images/dashboard-availability.png).

The outage is the module's (:func:`member_outage`): one member's kube-apiserver stopped and started
once, read by both tests, since the outage itself (about 20 s of waiting on the hub and on
Prometheus) is the cost, not what each test reads of it.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cluster_inventory import kube
from cluster_inventory.dashboard import Dashboard, HubState
from cluster_inventory.dashboard.availability import PrometheusAvailability
from cluster_inventory.integrations.availability import read_availability
from cluster_inventory.testing import Fleet
from cluster_inventory_workshop.browser import Browser
from tests.support.hub.member_outage import SCRAPE, ObservedOutage, observed_outage

STEP = 1.0


@pytest.fixture(scope="module")
async def member_outage(
    fleet: Fleet, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[ObservedOutage]:
    """The module's member outage, in a hub namespace of the module's own."""
    namespace = f"outage-observed-{uuid.uuid4().hex[:6]}"
    async with await fleet.hub.client() as hub:
        await kube.apply(
            hub, kube.NAMESPACES, {"metadata": {"name": namespace}}, field_manager="test"
        )
        try:
            async with observed_outage(fleet, namespace, tmp_path_factory.mktemp("outage")) as seen:
                yield seen
        finally:
            await kube.delete(hub, kube.NAMESPACES, namespace)


def _all_text(selector: str) -> str:
    return f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.textContent.trim())"


async def test_a_stopped_member_gives_its_events_and_prometheus_its_outage(
    member_outage: ObservedOutage,
) -> None:
    seen = member_outage
    report = await read_availability(
        seen.prometheus.url,
        since=time.time() - seen.began + 5,
        step=STEP,
        namespace=seen.namespace,
        name=seen.name,
    )
    listed = await kube.list_objects(seen.harness.hub_client, kube.EVENTS, namespace=seen.namespace)
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


async def test_a_member_page_shows_its_availability_and_outage_from_prometheus(
    member_outage: ObservedOutage, tmp_path: Path
) -> None:
    seen = member_outage
    async with Browser.start() as browser:
        store = PrometheusAvailability(seen.prometheus.url)
        state = HubState(seen.harness.hub_client, [seen.namespace])
        dashboard = Dashboard(state, address=("127.0.0.1", 0), availability=store)
        async with dashboard.serve() as url:
            page = await browser.page()
            await page.goto(f"{url}member/{seen.namespace}/{seen.name}")
            await page.wait_for("document.querySelector('#availability dl.facts dd')", timeout=30)
            windows = await page.evaluate(_all_text("#availability dl.facts dt"))
            figures = await page.evaluate(_all_text("#availability dl.facts dd"))
            outages = await page.evaluate(_all_text("#availability tbody tr"))
            source = await page.evaluate(_all_text("#availability h2 .muted"))
            reasons = await page.evaluate(
                "[...document.querySelectorAll('#timeline li.event')].map(li => li.dataset.reason)"
            )
            png = await page.screenshot(full_page=True)
    assert windows == ["1h", "1d", "7d", "30d"]
    # The last hour is what Prometheus saw: up, down for the outage, up again.
    hour = float(figures[0].rstrip("%"))
    assert 0 < hour < 100, figures
    (outage,) = outages
    assert "APIServerUnreachable" in outage
    assert source == [f"from {seen.prometheus.url}"]
    assert {"ControlPlaneUnhealthy", "ControlPlaneHealthy"} <= set(reasons), reasons
    assert len(png) > 10_000, "the screenshot is blank"
    shot = tmp_path / "member-availability.png"
    await asyncio.to_thread(shot.write_bytes, png)
    print(
        f"member page with availability: {shot}; windows {dict(zip(windows, figures, strict=True))}"
    )

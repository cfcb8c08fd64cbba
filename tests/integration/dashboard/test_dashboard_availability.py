"""A member's page with its availability from a real Prometheus, in Debian's headless Chromium.

The member goes through ``tests/support/hub/member_outage.py``'s outage (its kube-apiserver killed and
started again under a cluster manager that Prometheus scrapes); the dashboard is given that
Prometheus (:class:`~cluster_inventory.dashboard.availability.PrometheusAvailability`, what
``dashboard --prometheus URL`` wires). The member's page shows each window's figure, the
outage with its reason, and the manager's Events about it on the timeline; a screenshot is
saved under the test's tmp dir (its path printed; docs/images/dashboard-availability.png).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from cluster_inventory.dashboard import Dashboard, HubState
from cluster_inventory.dashboard.availability import PrometheusAvailability
from cluster_inventory.testing import Fleet
from cluster_inventory_workshop.browser import Browser
from tests.support.hub.member_outage import observed_outage


def _all_text(selector: str) -> str:
    return f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.textContent.trim())"


async def test_a_member_page_shows_its_availability_and_outage_from_prometheus(
    fleet: Fleet, test_namespace: str, browser: Browser, tmp_path: Path
) -> None:
    async with (
        observed_outage(fleet, test_namespace, tmp_path) as seen,
        await fleet.hub.client() as client,
    ):
        store = PrometheusAvailability(seen.prometheus.url)
        state = HubState(client, [seen.namespace])
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

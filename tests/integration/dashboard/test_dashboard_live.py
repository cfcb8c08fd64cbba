"""A member that stops turns red on an open page, with a real cluster manager probing it.

Our cluster manager runs in the test's loop (probing every 0.5 s); the dashboard shows its
inventory in Chromium; the member's kube-apiserver is killed. The row turns red through the
chain the product uses: probe, profile status, watch event, Server-Sent Event, htmx swap.
The wait is event-driven in the page (a MutationObserver) with a generous timeout; how fast
this is, is the benchmark's business (bench/dashboard.py).
"""

from __future__ import annotations

import json

from cluster_inventory.testing import Fleet
from cluster_inventory_workshop.browser import Browser
from tests.support.hub.manager import running_manager
from tests.support.waiting import eventually


async def test_a_stopped_member_turns_red_without_a_reload(
    fleet: Fleet, test_namespace: str, serve, browser: Browser
) -> None:
    async with running_manager(fleet, test_namespace) as h:
        ns = await h.inventory("prod", "prod")
        member_name = list(h.fleet.members)[1]
        await h.register("beta", h.member(1), ["prod"])
        await eventually(lambda: _healthy(h, ns), timeout=60, what="beta healthy before the outage")
        async with serve([ns]) as url:
            page = await browser.page()
            await page.goto(url)
            # Our manager labels the profile with a member id: find the row by its profile.
            row = (
                "[...document.querySelectorAll('#members tbody tr')]"
                f".find(tr => tr.textContent.includes({json.dumps(ns + '/beta')}))"
            )
            await page.wait_for(f"{row} && {row}.dataset.health === 'True'")
            await page.evaluate("window.notReloaded = true")
            try:
                await h.fleet.stop_member(member_name, kill=True)
                await page.wait_for(f"{row}.dataset.health === 'False'", timeout=60)
                colour = await page.evaluate(
                    f"getComputedStyle({row}.querySelector('td')).backgroundColor"
                )
                assert colour == "rgb(255, 235, 233)"  # the row's red
                assert "APIServerUnreachable" in await page.evaluate(f"{row}.textContent")
                assert await page.evaluate("window.notReloaded === true")
                summary = await page.evaluate("document.querySelector('#summary').textContent")
                assert "1 unhealthy" in summary
            finally:
                await h.fleet.start_member(member_name)
            await page.wait_for(f"{row}.dataset.health === 'True'", timeout=60)


async def _healthy(h, ns: str) -> bool:
    cond = await h.condition(ns, "beta", "ControlPlaneHealthy")
    return cond is not None and cond["status"] == "True"

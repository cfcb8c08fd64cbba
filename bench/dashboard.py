"""The dashboard in Debian's headless Chromium: 1,000 profiles rendered, filtered, sorted, live.

Starts one real hub, writes N ClusterProfiles with full status (conditions, version, two
properties, labels, a member id) into one inventory namespace, serves the dashboard over it
and over an empty inventory (the baseline: the same page with no row), and drives Chromium
over the DevTools protocol (cluster_inventory_workshop.browser). Figures, medians over the
runs, A B A B so drift of the machine's speed hits both:

- render: from navigation to the first animation frame after the load event, in the page's
  own clock (server render, transfer, parse, style, layout), N profiles against the empty
  page, and their ratio (target: N=1,000 within 1 s);
- filter and sort: a property selector typed into the page's control, a click on a column
  header, each until htmx has swapped the new table in (page clock);
- live: from a status patch on the hub to the row turning red on the open page (wall clock:
  watch event, Server-Sent Event, fetch, swap; target within 2 s).

    uv run python bench/dashboard.py --profiles 1000 --runs 5
    uv run python bench/dashboard.py --smoke   (N=20, one run)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

from _common import SMOKE_HELP, bounded, require, require_times

from cluster_inventory import kube
from cluster_inventory.dashboard import Dashboard, HubState
from cluster_inventory.testing import Fleet
from cluster_inventory_workshop.browser import Browser, Page

NAMESPACE = "bench-dashboard"
EMPTY = "bench-dashboard-empty"

# The first animation frame after load, in ms since navigation start (page clock).
_RENDERED = "new Promise(r => requestAnimationFrame(() => r(performance.now())))"
# Time from an action until htmx has settled the new content in #content (page clock).
_SWAP = """new Promise(resolve => {{
    const content = document.getElementById('content');
    const t0 = performance.now();
    content.addEventListener('htmx:afterSettle',
        () => requestAnimationFrame(() => resolve(performance.now() - t0)), {{once: true}});
    {action}
}})"""
_FILTER = (
    "const i = document.querySelector('input[name=properties]'); i.value = {value};"
    " i.dispatchEvent(new Event('change', {{bubbles: true}}));"
)
_SORT = (
    "[...document.querySelectorAll('button.sort')].find(b => b.textContent.trim()"
    ".startsWith('Version')).click();"
)
_ROWS = "document.querySelectorAll('#members tbody tr').length"


def _profile(i: int) -> dict:
    name = f"member-{i:05d}"
    return {
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {
                "x-k8s.io/cluster-manager": "bench",
                "multicluster.x-k8s.io/inventory-member-id": f"uid-{i:05d}",
                "env": "prod" if i % 2 else "staging",
            },
        },
        "spec": {"displayName": name, "clusterManager": {"name": "bench"}},
    }


def _status(i: int, healthy: bool = True) -> dict:
    return {
        "conditions": [
            {
                "type": "ControlPlaneHealthy",
                "status": "True" if healthy else "False",
                "reason": "APIServerReady" if healthy else "APIServerUnreachable",
                "message": "readyz: all checks passed" if healthy else "connection refused",
                "lastTransitionTime": "2026-11-23T00:00:00Z",
            },
            {
                "type": "Joined",
                "status": "True",
                "reason": "Joined",
                "message": "registered",
                "lastTransitionTime": "2026-11-23T00:00:00Z",
            },
        ],
        "version": {"kubernetes": f"v1.3{4 + i % 3}.{i % 5}"},
        "properties": [
            {"name": "region", "value": f"region-{i % 7}"},
            {"name": "zone", "value": f"zone-{i % 3}"},
        ],
    }


async def _populate(hub: kube.ApiClient, n: int) -> None:
    for ns in (NAMESPACE, EMPTY):
        await kube.apply(hub, kube.NAMESPACES, {"metadata": {"name": ns}}, field_manager="bench")

    async def one(i: int) -> None:
        await kube.apply(hub, kube.CLUSTER_PROFILES, _profile(i), field_manager="bench")
        body = {**_profile(i), "status": _status(i)}
        await kube.apply(
            hub, kube.CLUSTER_PROFILES, body, field_manager="bench", subresource="status"
        )

    await bounded([one(i) for i in range(n)], limit=16)


async def _render(page: Page, url: str, rows: int) -> float:
    await page.goto(url)
    ms = await page.evaluate(_RENDERED)
    require(await page.evaluate(_ROWS) == rows, f"{rows} rows rendered")
    return ms / 1000


async def _live(page: Page, hub: kube.ApiClient, i: int, healthy: bool) -> float:
    body = {**_profile(i), "status": _status(i, healthy)}
    member = f"{NAMESPACE}/member-{i:05d}"  # a row is addressed by its first profile
    selector = f'tr[data-member="{member}"]'
    row = f"document.querySelector({json.dumps(selector)})"
    want = "True" if healthy else "False"
    started = time.perf_counter()
    await kube.apply(hub, kube.CLUSTER_PROFILES, body, field_manager="bench", subresource="status")
    await page.wait_for(f"{row} && {row}.dataset.health === '{want}'", timeout=60)
    return time.perf_counter() - started


async def run(n: int, runs: int) -> None:
    fleet = Fleet([])
    await fleet.start()
    try:
        async with await fleet.hub.client() as hub, Browser.start() as browser:
            await _populate(hub, n)
            full_state, empty_state = HubState(hub, [NAMESPACE]), HubState(hub, [EMPTY])
            async with (
                Dashboard(full_state, address=("127.0.0.1", 0)).serve() as full_url,
                Dashboard(empty_state, address=("127.0.0.1", 0)).serve() as empty_url,
            ):
                page = await browser.page()
                await _render(page, empty_url, 0)  # warm-up: Chromium's caches, templates
                await _render(page, full_url, n)
                full, empty, ratios, filters, sorts, lives = [], [], [], [], [], []
                for r in range(runs):
                    b = await _render(page, empty_url, 0)
                    a = await _render(page, full_url, n)
                    full.append(a)
                    empty.append(b)
                    ratios.append(a / b)
                    value = json.dumps("region=region-3")
                    filters.append(
                        await page.evaluate(_SWAP.format(action=_FILTER.format(value=value))) / 1000
                    )
                    shown = await page.evaluate(_ROWS)
                    require(shown == len(range(3, n, 7)), f"filter shows {shown} rows")
                    await page.evaluate(_SWAP.format(action=_FILTER.format(value='""')))
                    sorts.append(await page.evaluate(_SWAP.format(action=_SORT)) / 1000)
                    require(await page.evaluate(_ROWS) == n, "sort keeps every row")
                    lives.append(await _live(page, hub, r % n, healthy=False))
                    await _live(page, hub, r % n, healthy=True)
                require_times(
                    full=min(full), empty=min(empty), filter=min(filters), sort=min(sorts)
                )
                require_times(live=min(lives))
                med = statistics.median
                print(f"profiles: {n}, runs: {runs}")
                print(
                    f"render {n} profiles: {med(full) * 1000:.0f} ms p50 (target <= 1000 ms for "
                    f"1,000); empty page: {med(empty) * 1000:.0f} ms p50; ratio p50 "
                    f"{med(ratios):.2f}x"
                )
                print(
                    f"filter (property selector): {med(filters) * 1000:.0f} ms p50; "
                    f"sort (column header): {med(sorts) * 1000:.0f} ms p50"
                )
                print(
                    f"live (status patch on the hub to a red row): {med(lives) * 1000:.0f} ms "
                    f"p50, max {max(lives) * 1000:.0f} ms (target <= 2000 ms)"
                )
    finally:
        await fleet.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profiles", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.profiles, args.runs = 20, 1
    asyncio.run(run(args.profiles, args.runs))


if __name__ == "__main__":
    main()

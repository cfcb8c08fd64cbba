"""A member's page in Debian's headless Chromium, over the session fleet's real hub.

A member registered in two cluster sets (two inventories, one member id) runs under a real
cluster manager; its page shows both profiles, the mode, the access provider and the Events
about its profiles, and follows an outage of its kube-apiserver without a reload, saying
since when ``ControlPlaneHealthy`` is False. A screenshot of the page is saved under the
test's tmp dir (its path printed). A hostile member (markup in its display name, properties,
condition messages, Events, a credential in its access provider's URL and extension) gets
escaped text, no script, and no credential in any response.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path
from typing import Any

import aiohttp

from cluster_inventory import kube
from cluster_inventory.api import format_micro_time
from cluster_inventory.api.constants import LABEL_INVENTORY_MEMBER_ID
from cluster_inventory.kube.events import object_reference, record_event
from cluster_inventory.testing import Fleet
from cluster_inventory_workshop.browser import Browser, Page
from tests.support.hub.inventory import Inventory
from tests.support.hub.manager import running_manager
from tests.support.waiting import eventually

#: What a hostile writer puts in a credential's place: it must reach no response.
TOKEN = "eyJhbGciOiJSUzI1NiJ9.member-page-must-not-show-this"
#: Markup that would run or render were it not escaped.
MARKUP = '<img src=x onerror="window.pwned=1"><script>window.pwned=1</script>'


def _js(value: str) -> str:
    return json.dumps(value)


def _text(selector: str) -> str:
    return f"(document.querySelector({_js(selector)}) || {{}}).textContent || ''"


async def _event(hub: kube.ApiClient, profile: dict[str, Any], **fields: Any) -> None:
    """An events.k8s.io/v1 Event about ``profile`` (as a recorder writes one)."""
    now = dt.datetime.now(dt.UTC)
    meta = profile["metadata"]
    await kube.create(
        hub,
        kube.EVENTS,
        {
            "metadata": {"generateName": f"{meta['name']}-", "namespace": meta["namespace"]},
            "eventTime": format_micro_time(now - dt.timedelta(minutes=30)),
            "reportingController": "cluster-inventory.dev/test",
            "reportingInstance": "test",
            "action": "Probe",
            "regarding": object_reference(profile),
            **fields,
        },
    )


async def _healthy(h, ns: str, name: str, status: str) -> bool:
    cond = await h.condition(ns, name, "ControlPlaneHealthy")
    return cond is not None and cond["status"] == status


async def _screenshot(page: Page, path: Path) -> None:
    png = await page.screenshot(full_page=True)
    assert len(png) > 10_000, "the screenshot is blank"
    await asyncio.to_thread(path.write_bytes, png)
    print(f"member page screenshot: {path}")


async def test_a_member_page_shows_its_profiles_since_and_events_through_an_outage(
    fleet: Fleet, test_namespace: str, serve, browser: Browser, tmp_path: Path
) -> None:
    async with running_manager(fleet, test_namespace) as h:
        prod = await h.inventory("prod", "prod")
        staging = await h.inventory("staging", "staging")
        member_name = list(h.fleet.members)[1]
        await h.register("beta", h.member(1), ["prod", "staging"])
        for ns in (prod, staging):
            await eventually(
                lambda ns=ns: _healthy(h, ns, "beta", "True"), timeout=60, what=f"{ns}/beta"
            )
        profile = await h.profile(prod, "beta")
        member_id = profile["metadata"]["labels"][LABEL_INVENTORY_MEMBER_ID]
        await record_event(
            h.hub_client,
            object_reference(profile),
            reason="Registered",
            note="member beta registered in cluster sets prod, staging",
            action="Register",
            controller="cluster-inventory.dev/test",
            instance="test",
            dedupe="registered",
            event_type="Normal",
        )
        await _event(
            h.hub_client,
            await h.profile(staging, "beta"),
            type="Warning",
            reason="ProbeSlow",
            note="/readyz answered in 2.5 s",
            series={
                "count": 12,
                "lastObservedTime": format_micro_time(dt.datetime.now(dt.UTC)),
            },
        )
        async with serve([prod, staging]) as url:
            page = await browser.page()
            await page.goto(url)
            row = "#members tbody tr"
            await page.wait_for(f"document.querySelector({_js(row)})")
            # Named, not numbered: the row and its link say "beta", the UID is nowhere.
            assert await page.evaluate(_text(f"{row} td.member")) == "beta"
            assert member_id not in await page.evaluate("document.body.innerHTML")
            # Its name links its page (followed with goto: a click's navigation would race
            # the DevTools evaluation that made it).
            link = await page.evaluate(f"document.querySelector({_js(row + ' td.member a')}).href")
            assert link == f"{url}member/{prod}/beta"
            await page.goto(link)
            await page.wait_for("document.querySelector('#member')")
            html = await page.evaluate("document.body.innerHTML")
            assert member_id not in html
            # Every profile of the member, one per inventory, each probed by the manager.
            sections = await page.evaluate(
                "[...document.querySelectorAll('section.profile')].map(s => s.dataset.profile)"
            )
            assert sections == [f"{prod}/beta", f"{staging}/beta"]
            modes = await page.evaluate(
                "[...document.querySelectorAll('section.profile .mode')].map(m => m.dataset.mode)"
            )
            assert modes == ["probe", "probe"]
            access = await page.evaluate(_text("section.profile table.access"))
            assert "secretreader" in access and h.member(1).server in access
            # The Events about both profiles, newest first, the repeated one with its count.
            reasons = await page.evaluate(
                "[...document.querySelectorAll('#timeline li.event')].map(li => li.dataset.reason)"
            )
            assert reasons == ["ProbeSlow", "Registered"]
            assert "\u00d712" in await page.evaluate(_text("#timeline li.event"))  # "x12"
            await page.evaluate("window.notReloaded = true")
            healthy = f"section.profile[data-profile={_js(prod + '/beta')}] tr[data-type=ControlPlaneHealthy]"
            assert await page.evaluate(
                f"document.querySelector({_js(healthy)}).dataset.status"
            ) == ("True")
            try:
                await h.fleet.stop_member(member_name, kill=True)
                await page.wait_for(
                    f"document.querySelector({_js(healthy)}).dataset.status === 'False'",
                    timeout=60,
                )
                since = await page.evaluate(_text(healthy + " td.since"))
                assert "for " in since and since.strip().startswith(
                    str(dt.datetime.now(dt.UTC).year)
                )
                assert "APIServerUnreachable" in await page.evaluate(_text(healthy))
                assert await page.evaluate("document.querySelector('#member').dataset.health") == (
                    "False"
                )
                assert await page.evaluate("window.notReloaded === true")
                await _screenshot(page, tmp_path / "member-page.png")
            finally:
                await h.fleet.start_member(member_name)
            await page.wait_for(
                f"document.querySelector({_js(healthy)}).dataset.status === 'True'", timeout=60
            )
            assert not page.errors, page.errors  # htmx ran under the Content-Security-Policy


async def test_a_hostile_member_gets_escaped_text_no_script_and_no_credential_shown(
    inventory: Inventory, serve, browser: Browser, tmp_path: Path
) -> None:
    """As the attacker: a member (or its agent, or its manager) writes markup and a token
    wherever a profile or an Event holds text; the page must show the text, run nothing and
    send the token to no one."""
    hub, ns = inventory.hub, inventory.namespace
    body = {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {
            "name": "evil",
            "namespace": ns,
            "labels": {LABEL_INVENTORY_MEMBER_ID: "attacker-uid-7"},
        },
        "spec": {"displayName": f"evil {MARKUP}", "clusterManager": {"name": "test"}},
    }
    stored = await kube.apply(hub, kube.CLUSTER_PROFILES, body, field_manager="test")
    await inventory.patch_status(
        "evil",
        {
            "conditions": [
                {
                    "type": "ControlPlaneHealthy",
                    "status": "False",
                    "reason": "Evil",
                    "message": MARKUP,
                    "lastTransitionTime": "2026-11-25T10:00:00Z",
                }
            ],
            "properties": [{"name": "evil.example.com", "value": MARKUP}],
            "accessProviders": [
                {
                    "name": "secretreader",
                    "cluster": {
                        "server": f"https://admin:{TOKEN}@evil.example:6443/?token={TOKEN}",
                        "proxy-url": f"http://u:{TOKEN}@proxy.example:3128",
                        "extensions": [
                            {
                                "name": "client.authentication.k8s.io/exec",
                                "extension": {"token": TOKEN},
                            }
                        ],
                    },
                }
            ],
        },
    )
    await _event(hub, stored, type="Warning", reason="Evil", note=MARKUP)
    async with serve([ns]) as url:
        page = await browser.page()
        await page.goto(f"{url}member/{ns}/evil")
        await page.wait_for("document.querySelector('#timeline li.event')")
        # Shown as text, wherever it came from ...
        assert MARKUP in await page.evaluate(_text("#member h2"))
        assert MARKUP in await page.evaluate(_text("section.profile td.message"))
        assert MARKUP in await page.evaluate(_text("section.profile table.properties td.value"))
        assert MARKUP in await page.evaluate(_text("#timeline .note"))
        # ... never as markup: no element of it, nothing ran.
        assert await page.evaluate("document.querySelectorAll('main img, main script').length") == 0
        assert await page.evaluate("window.pwned === undefined")
        access = await page.evaluate(_text("section.profile table.access"))
        assert "https://evil.example:6443/" in access and "http://proxy.example:3128" in access
        assert "attacker-uid-7" not in await page.evaluate("document.body.innerHTML")
        await _screenshot(page, tmp_path / "hostile-member-page.png")
        bodies = [r.body for r in await page.settled_responses()]
        async with aiohttp.ClientSession() as http:
            for path in (f"member/{ns}/evil", f"member/{ns}/evil/content", "", "content"):
                async with http.get(url + path) as response:
                    assert response.status == 200, path
                    bodies.append(await response.text())
            async with http.get(f"{url}member/{ns}/<script>alert(1)") as response:
                assert response.status == 404
                missing = await response.text()
                assert "<script>" not in missing and "&lt;script&gt;" in missing
        assert len(bodies) > 4
        for text in bodies:
            assert TOKEN not in text
            assert MARKUP not in text  # escaped in every response, not only as rendered
        assert not page.errors, page.errors

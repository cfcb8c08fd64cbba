"""The dashboard in Debian's headless Chromium, over the session fleet's real hub.

The page shows what the hub holds (inventories, members once, properties, conditions,
placements with reasons, conformance, Argo CD delivery), follows a change without a reload,
and no response the browser received (pages, fragments, Server-Sent Events, assets) holds a
token minted for a member or any Secret's data.
"""

from __future__ import annotations

import base64
import json
from urllib.parse import urlsplit

import aiohttp

from cluster_inventory import kube
from cluster_inventory.api.constants import (
    ANNOTATION_PROFILE,
    LABEL_DECISION_INDEX,
    LABEL_DECISION_KEY,
)
from cluster_inventory.integrations.placement import PLACEMENTS
from cluster_inventory.integrations.sync import argocd
from cluster_inventory.integrations.sync._ownership import LABEL_MANAGED_BY
from cluster_inventory_workshop.browser import Browser, Page
from tests.support.hub.inventory import Inventory

#: A Secret value that must never reach the page (the Argo CD Secret's data).
SECRET_MARKER = "do-not-show-this-secret-value-7f3a9c"


def _row(member: str) -> str:
    return f"tr[data-member={json.dumps(member)}]"


def _text_of(selector: str) -> str:
    return f"(document.querySelector({json.dumps(selector)}) || {{}}).textContent || ''"


async def _member_health(page: Page, member: str) -> str:
    return await page.evaluate(
        f"(document.querySelector({json.dumps(_row(member))}) || {{dataset: {{}}}})"
        ".dataset.health || ''"
    )


async def _hub_with_placement(inv: Inventory) -> str:
    """Two profiles in the test inventory, one member also in a second inventory, a
    Placement that chose one of them, and an Argo CD Secret of ours. Returns the second
    inventory."""
    await inv.publish("alpha", inv.member(0), member_id="member-a", properties={"region": "eu"})
    await inv.publish("beta", inv.member(1), healthy=False, properties={"region": "us"})
    other = await inv.namespace_for("b")
    await inv.publish("alpha", inv.member(0), namespace=other, member_id="member-a")
    await kube.apply(
        inv.hub,
        PLACEMENTS,
        {
            "apiVersion": PLACEMENTS.api_version,
            "kind": PLACEMENTS.kind,
            "metadata": {"name": "web", "namespace": inv.namespace},
            "spec": {"propertySelector": {"matchProperties": {"region": "eu"}}},
        },
        field_manager="test",
    )
    await kube.apply(
        inv.hub,
        kube.PLACEMENT_DECISIONS,
        {
            "apiVersion": kube.PLACEMENT_DECISIONS.api_version,
            "kind": kube.PLACEMENT_DECISIONS.kind,
            "metadata": {
                "name": "web-decision-0",
                "namespace": inv.namespace,
                "labels": {LABEL_DECISION_KEY: "web", LABEL_DECISION_INDEX: "0"},
            },
            "decisions": [{"clusterProfileRef": {"name": "alpha"}, "reason": "selected"}],
        },
        field_manager="test",
    )
    return other


async def _argocd_secret(inv: Inventory) -> str:
    ns = await inv.namespace_for("argocd")
    await kube.apply(
        inv.hub,
        kube.SECRETS,
        {
            "metadata": {
                "name": "cluster-alpha",
                "namespace": ns,
                "labels": {
                    argocd.LABEL_SECRET_TYPE: "cluster",
                    LABEL_MANAGED_BY: argocd.FIELD_MANAGER,
                },
                "annotations": {ANNOTATION_PROFILE: f"{inv.namespace}/alpha"},
            },
            "stringData": {"config": SECRET_MARKER},
        },
        field_manager="test",
    )
    return ns


async def test_page_shows_the_hub_and_follows_a_change_without_a_reload(
    inventory: Inventory, serve, browser: Browser
) -> None:
    other = await _hub_with_placement(inventory)
    argocd_ns = await _argocd_secret(inventory)
    async with serve([inventory.namespace, other], argocd_namespace=argocd_ns) as url:
        page = await browser.page()
        await page.goto(url)
        alpha = f"{inventory.namespace}/alpha"  # member-a's first profile: its row's address
        await page.wait_for(f"document.querySelector({json.dumps(_row(alpha))})")
        # One member in two inventories is one row, listing both profiles, by its name.
        assert await page.evaluate("document.querySelectorAll('#members tbody tr').length") == 2
        shared = await page.evaluate(_text_of(_row(alpha)))
        assert alpha in shared and f"{other}/alpha" in shared
        assert "cluster-alpha" in shared  # its Argo CD Secret, by name
        assert await page.evaluate(_text_of(_row(alpha) + " td.member")) == "alpha"
        assert "member-a" not in await page.evaluate("document.body.innerHTML")  # its member id
        assert await _member_health(page, alpha) == "True"
        beta = f"{inventory.namespace}/beta"
        assert await _member_health(page, beta) == "False"
        assert "ReadyzCheckFailed" in await page.evaluate(_text_of(_row(beta)))
        # The bad row is red.
        colour = await page.evaluate(
            f"getComputedStyle(document.querySelector({json.dumps(_row(beta) + ' td')}))"
            ".backgroundColor"
        )
        assert colour == "rgb(255, 235, 233)", colour
        # Properties are columns; the placement shows its choice and why beta was left out.
        headers = await page.evaluate(_text_of("#members thead"))
        assert "region" in headers
        placement = await page.evaluate(_text_of("#placements"))
        assert f"{inventory.namespace}/alpha" in placement
        assert "PropertiesDoNotMatch" in placement and beta in placement
        # Conformance per inventory (the test's profiles lack the cluster-manager label, a
        # Required check: shown red), and the version chart.
        cards = await page.evaluate(_text_of("#inventories"))
        assert "Not conformant" in cards and "v1.36.3" in cards
        failing = await page.evaluate(
            "[...document.querySelectorAll('details.conformance li.required')]"
            ".map(li => [li.textContent, getComputedStyle(li).color])"
        )
        assert any("x-k8s.io/cluster-manager" in text for text, _ in failing), failing
        assert {colour for _, colour in failing} == {"rgb(207, 34, 46)"}
        # Filter by property selector, then sort, through the page's own controls.
        await page.evaluate(
            "(() => { const i = document.querySelector('input[name=properties]');"
            " i.value = 'region=us'; i.dispatchEvent(new Event('change', {bubbles: true})); })()"
        )
        await page.wait_for("document.querySelectorAll('#members tbody tr').length === 1")
        assert await _member_health(page, beta) == "False"
        await page.evaluate(
            "(() => { const i = document.querySelector('input[name=properties]');"
            " i.value = ''; i.dispatchEvent(new Event('change', {bubbles: true})); })()"
        )
        await page.wait_for("document.querySelectorAll('#members tbody tr').length === 2")
        await page.evaluate(
            "[...document.querySelectorAll('button.sort')].find(b => b.textContent.trim()"
            " === 'Healthy').click()"
        )
        await page.wait_for(
            "document.querySelector('#members tbody tr').dataset.health === 'False'"
        )
        # Live: a property changed on the hub shows without a reload, sort kept.
        await page.evaluate("window.notReloaded = true")
        await inventory.patch_status(
            "beta", {"properties": [{"name": "region", "value": "ap-south"}]}
        )
        await page.wait_for(f"({_text_of(_row(beta))}).includes('ap-south')", timeout=30)
        assert await page.evaluate("window.notReloaded === true")
        assert (
            await page.evaluate("document.querySelector('#members tbody tr').dataset.health")
            == "False"
        )
        responses = await page.settled_responses()
        assert not page.errors, page.errors  # htmx ran under the Content-Security-Policy
        # Nothing came from anywhere but the dashboard (no CDN), and live updates arrived.
        assert all(r.url.startswith(url) for r in responses), {r.url for r in responses}
        assert any(urlsplit(r.url).path.endswith("/events") for r in responses)
        assert all(SECRET_MARKER not in r.body for r in responses)


async def test_no_response_holds_a_minted_token_or_secret_data(
    inventory: Inventory, serve, browser: Browser
) -> None:
    other = await _hub_with_placement(inventory)
    argocd_ns = await _argocd_secret(inventory)
    secrets = []
    for ns in (inventory.namespace, other, argocd_ns):
        listed = await kube.list_objects(inventory.hub, kube.SECRETS, ns)
        secrets += listed["items"]
    values = {base64.b64decode(v).decode() for s in secrets for v in (s.get("data") or {}).values()}
    tokens = set(inventory.tokens.values())
    assert tokens and tokens <= values  # the tokens the hub's Secrets hold
    forbidden = {x for v in values for x in (v, base64.b64encode(v.encode()).decode())}
    async with serve([inventory.namespace, other], argocd_namespace=argocd_ns) as url:
        page = await browser.page()
        await page.goto(url)
        alpha = _row(f"{inventory.namespace}/alpha")
        await page.wait_for(f"document.querySelector({json.dumps(alpha)})")
        await inventory.set_healthy("alpha", False)  # one live update through the stream
        await page.wait_for(
            f"document.querySelector({json.dumps(alpha)}).dataset.health === 'False'",
            timeout=30,
        )
        bodies = [r.body for r in await page.settled_responses()]
        # And every route fetched directly, whatever the browser did not ask for.
        async with aiohttp.ClientSession() as http:
            for path in (
                "",
                "content?sort=label:x&order=desc",
                f"member/{inventory.namespace}/alpha",  # the member pages: access providers
                f"member/{other}/alpha/content",
                f"member/{inventory.namespace}/beta",
                "content?q=alpha&labels=a%20in%20(",
                "healthz",
                "readyz",
                "static/dashboard.css",
                "static/htmx.min.js",
                "static/htmx-ext-sse.min.js",
            ):
                async with http.get(url + path) as response:
                    assert response.status == 200, path
                    bodies.append(await response.text())
                    assert "Content-Security-Policy" in response.headers
    assert len(bodies) > 10
    for body in bodies:
        for value in forbidden:
            assert value not in body


async def test_a_request_for_another_host_name_is_refused(inventory: Inventory, serve) -> None:
    async with serve([inventory.namespace]) as url, aiohttp.ClientSession() as http:
        async with http.get(url, headers={"Host": "attacker.example:80"}) as response:
            assert response.status == 421
        async with http.post(url + "content") as response:
            assert response.status == 405  # read-only: no route takes a write

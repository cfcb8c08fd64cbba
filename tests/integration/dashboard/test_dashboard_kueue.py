"""The dashboard's MultiKueue column shows the ``Active`` condition Kueue itself sets.

Our manager publishes a member in Kueue's inventory, our MultiKueue sync writes its
MultiKueueCluster (no status yet: the page shows the name alone), then Kueue v0.19.2's own
manager starts on the hub (as in ``tests/integration/integrations/test_kueue_multikueue.py``,
run as in :mod:`tests.support.consumers.kueue`), connects through our plugin and writes ``Active=True``, which
the page in Debian's headless Chromium shows without a reload.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api.constants import ANNOTATION_MEMBER_ROLE
from cluster_inventory.credentials import load_provider_file
from cluster_inventory.integrations.sync.multikueue import (
    MULTIKUEUE_CLUSTERS,
    MultiKueueSync,
    kueue_configuration,
)
from cluster_inventory.testing import Fleet
from cluster_inventory_workshop.browser import Browser
from tests.support.consumers.kueue import (
    condition,
    install_kueue_crds,
    remove_kueue_crds,
    running_kueue,
    worker_role,
)
from tests.support.data.provider_files import PLUGIN, provider_file
from tests.support.hub.manager import running_manager

_MEMBERS = "document.querySelector('#members')?.textContent || ''"


async def test_the_multikueue_column_shows_the_active_condition_kueue_sets(
    fleet: Fleet, test_namespace: str, tmp_path: Path, serve, browser: Browser
) -> None:
    ns = test_namespace
    short = ns[-8:]
    member = fleet.members[sorted(fleet.members)[-1]]
    role = f"multikueue-worker-{short}"
    name = f"dash-{short}"
    await install_kueue_crds(fleet.hub)
    await install_kueue_crds(member)
    await worker_role(member, role)
    try:
        async with contextlib.AsyncExitStack() as stack:
            h = await stack.enter_async_context(
                running_manager(fleet, ns, member_roles={f"dash-{short}": (role,)})
            )
            kueue_ns = await h.inventory(
                "kueue", f"dash-{short}", annotations={ANNOTATION_MEMBER_ROLE: role}
            )
            await h.register(name, member, [f"dash-{short}"])
            sync = MultiKueueSync(
                h.hub_client, kueue_namespace=kueue_ns, registry=CollectorRegistry(), identity="t"
            )
            await sync.start()
            stack.push_async_callback(sync.stop)
            url = await stack.enter_async_context(serve([kueue_ns]))
            page = await browser.page()
            await page.goto(url)
            # The sync's MultiKueueCluster, before Kueue runs: its name, no condition.
            await page.wait_for(
                f"document.querySelector('#members th')?.parentElement.textContent"
                f".includes('MultiKueue') && ({_MEMBERS}).includes({json.dumps(name)})"
            )
            assert "Active=" not in await page.evaluate(_MEMBERS)

            providers = provider_file(
                tmp_path / "providers.json",
                str(PLUGIN),
                ["--namespace", kueue_ns],
                {"KUBECONFIG": str(fleet.hub.kubeconfig_path)},
            )
            fragment = kueue_configuration(load_provider_file(providers), namespace=kueue_ns)
            await page.evaluate("window.notReloaded = true")
            await stack.enter_async_context(
                running_kueue(
                    fleet.hub,
                    tmp_path / "hub",
                    namespace=kueue_ns,
                    access_providers=fragment["multiKueue"]["clusterProfile"]["accessProviders"],
                )
            )
            await page.wait_for(
                "[...document.querySelectorAll('#members span.cond.True')]"
                ".some(s => s.textContent === 'Active=True')",
                timeout=90,
            )
            assert await page.evaluate("window.notReloaded === true")
            # What the page shows is Kueue's own condition on the hub.
            mkc = await kube.get(h.hub_client, MULTIKUEUE_CLUSTERS, name)
            cond = condition(mkc, "Active")
            assert cond is not None and (cond["status"], cond["reason"]) == ("True", "Active")
            assert not page.errors, page.errors
    finally:
        async with await fleet.hub.client() as hub:
            await kube.delete(hub, MULTIKUEUE_CLUSTERS, name)
        async with await member.client() as client:
            await kube.delete(client, kube.CLUSTER_ROLES, role)
        await remove_kueue_crds(member)

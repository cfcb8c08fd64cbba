"""Kueue's MultiKueue controller connects to a worker it reaches only through the cluster proxy.

The worker runs in a network namespace of its own, joined by its agent, which keeps a
tunnel to the hub's cluster proxy; our cluster manager publishes its profile with the
proxy's access provider, and our MultiKueue sync writes its MultiKueueCluster. Kueue's own
manager (v0.19.2, ``MultiKueueClusterProfile``, our secretreader as its access provider)
builds the worker's client with the upstream ``pkg/access`` from that profile, starts its
watches there through the proxy (TLS end to end to the worker's API server) and marks the
MultiKueueCluster ``Active``. The worker has Kueue's CRDs and no Kueue of its own (what
``Active`` needs; dispatching a Job to a worker is ``test_kueue_multikueue.py``'s).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.credentials import load_provider_file
from cluster_inventory.integrations.sync.multikueue import (
    MULTIKUEUE_CLUSTERS,
    MULTIKUEUE_CONFIGS,
    MultiKueueSync,
    kueue_configuration,
)
from cluster_inventory.testing import Fleet
from cluster_inventory_workshop.upstream_crds import kueue_manager_crds
from tests.support.consumers.kueue import (
    condition,
    install_kueue_crds,
    release_kueue_objects,
    running_kueue,
)
from tests.support.data.provider_files import PLUGIN, provider_file
from tests.support.hub.cluster_proxy import proxied_member
from tests.support.waiting import eventually


async def test_kueue_marks_a_worker_behind_the_proxy_active(
    fleet: Fleet, test_namespace: str, tmp_path: Path
) -> None:
    ns = test_namespace
    short = ns[-8:]
    name = f"edge-kueue-{short}"  # the MultiKueueCluster's (cluster-scoped) name too
    account = f"consumer-{uuid.uuid4().hex[:6]}"
    config_name = f"{short}-proxied"
    verbs = ["create", "delete", "get", "list", "watch", "update", "patch"]
    await install_kueue_crds(fleet.hub)
    try:
        async with contextlib.AsyncExitStack() as stack:
            pm = await stack.enter_async_context(
                proxied_member(fleet, ns, tmp_path, name=name, account=account)
            )
            hub = pm.harness.hub_client
            remote = await stack.enter_async_context(await kube.new_client(pm.admin()))
            # The worker's admin, through the proxy: Kueue's CRDs, and what MultiKueue's
            # manager does on a worker (Kueue's docs) for the consumers' account.
            await kube.ensure_crds(remote, await asyncio.to_thread(kueue_manager_crds), timeout=60)
            await pm.grant(
                ns,
                account,
                f"{ns}-worker",
                [
                    {"apiGroups": ["batch"], "resources": ["jobs", "jobs/status"], "verbs": verbs},
                    {
                        "apiGroups": ["kueue.x-k8s.io"],
                        "resources": ["workloads", "workloads/status"],
                        "verbs": verbs,
                    },
                ],
            )
            await pm.token_published()
            sync = MultiKueueSync(
                hub,
                kueue_namespace=pm.inventory,
                config_name=config_name,
                registry=CollectorRegistry(),
                identity="test",
            )
            await sync.start()
            stack.push_async_callback(sync.stop)
            providers = provider_file(
                tmp_path / "providers.json",
                str(PLUGIN),
                ["--namespace", pm.inventory],
                {"KUBECONFIG": str(fleet.hub.kubeconfig_path)},
            )
            fragment = kueue_configuration(load_provider_file(providers), namespace=pm.inventory)
            access = fragment["multiKueue"]["clusterProfile"]["accessProviders"]
            kueue = await stack.enter_async_context(
                running_kueue(
                    fleet.hub, tmp_path / "hub", namespace=pm.inventory, access_providers=access
                )
            )

            async def active() -> dict[str, Any] | None:
                try:
                    mkc = await kube.get(hub, MULTIKUEUE_CLUSTERS, name)
                except kube.NotFoundError:
                    return None
                cond = condition(mkc, "Active")
                return mkc if cond and cond["status"] == "True" else None

            mkc = await eventually(
                active, timeout=90, what=f"the MultiKueueCluster Active ({kueue.log_path})"
            )
            assert mkc["spec"]["clusterSource"] == {"clusterProfileRef": {"name": name}}
            assert condition(mkc, "Active")["reason"] == "Active"  # nothing routes there else
    finally:
        await release_kueue_objects(fleet.hub)
        async with await fleet.hub.client() as admin:
            await kube.delete(admin, MULTIKUEUE_CONFIGS, config_name)
            await kube.delete(admin, MULTIKUEUE_CLUSTERS, name)

"""Argo CD's own code reads the Secrets the sync writes and reaches the member through them.

``argocd-check`` (built from ``github.com/argoproj/argo-cd/v3``, see
:mod:`cluster_inventory_workshop.argocd_check`) converts each Secret with Argo CD's
``SecretToCluster``, builds the REST config with ``Cluster.RawRestConfig`` (running our
``cluster-inventory-secretreader`` as the exec provider) and lists ConfigMaps on the member.
"""

from __future__ import annotations

import asyncio
import json
import subprocess

from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.credentials import load_provider_file
from cluster_inventory.integrations.sync.argocd import ArgoCDSync
from cluster_inventory_workshop.argocd_check import argocd_check
from tests.support.data.provider_files import PLUGIN
from tests.support.hub.inventory import Inventory
from tests.support.waiting import eventually


async def test_argo_cd_loads_our_secrets_and_lists_configmaps_on_each_member(
    inventory: Inventory,
) -> None:
    binary = await asyncio.to_thread(argocd_check)  # cached; fails saying how to get Go
    ns, hub = inventory.namespace, inventory.hub
    argo = await inventory.namespace_for("argocd")
    members = {"c1": inventory.member(0), "c2": inventory.member(1)}
    for name, member in members.items():
        await inventory.publish(name, member, member_id=f"m-{name}")
        async with await member.client() as admin:
            await kube.apply(
                admin,
                kube.CONFIG_MAPS,
                {"metadata": {"name": f"on-{member.name}", "namespace": ns}},
                field_manager="test",
            )
    sync = ArgoCDSync(
        hub,
        load_provider_file(inventory.provider_file),
        namespaces=[ns],
        argocd_namespace=argo,
        registry=CollectorRegistry(),
    )
    await sync.start()
    try:

        async def written() -> dict | None:
            listed = await kube.list_objects(
                hub, kube.SECRETS, argo, label_selector="argocd.argoproj.io/secret-type=cluster"
            )
            return listed if len(listed["items"]) == 2 else None

        listed = await eventually(written, timeout=30, what="two cluster Secrets")
    finally:
        await sync.stop()
    run = await asyncio.to_thread(
        subprocess.run,
        [str(binary), ns],
        input=json.dumps(listed),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    results = {r["name"]: r for r in json.loads(run.stdout)}
    assert sorted(results) == ["c1", "c2"]
    for name, member in members.items():
        r = results[name]
        assert "error" not in r, r["error"]
        assert r["secret"] == f"cluster-{ns}-{name}"
        assert r["server"] == member.server
        assert r["execCommand"] == str(PLUGIN)
        assert json.loads(json.dumps(r["execConfig"])) == {"clusterName": name}
        assert r["insecure"] is False
        assert r["labels"]["multicluster.x-k8s.io/inventory-member-id"] == f"m-{name}"
        # Argo CD reached this member (and only it) through our exec plugin
        assert f"on-{member.name}" in r["configMaps"]
        others = {f"on-{m.name}" for m in members.values() if m is not member}
        assert not others & set(r["configMaps"])

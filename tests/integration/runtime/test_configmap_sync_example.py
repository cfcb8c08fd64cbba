"""examples/fleet_configmap_sync.py keeps a hub ConfigMap in sync on every engaged member.

Also as the only copy of a shard group (``--sharding``): it engages every member.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from cluster_inventory import kube
from cluster_inventory.controller.sharding import lease_name
from tests.support.hub.inventory import Inventory
from tests.support.waiting import eventually

EXAMPLE = Path(__file__).parents[3] / "examples" / "fleet_configmap_sync.py"


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fleet_configmap_sync", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def _member_data(member, namespace: str) -> dict | None:
    async with await member.client() as admin:
        try:
            cm = await kube.get(admin, kube.CONFIG_MAPS, "fleet-settings", namespace)
        except kube.NotFoundError:
            return None
    return cm.get("data") or {}


async def test_hub_configmap_reaches_every_member_and_follows_changes(
    inventory: Inventory, fleet_manager
) -> None:
    example = _example()
    ns = inventory.namespace
    members = [inventory.member(0), inventory.member(1)]
    await kube.apply(
        inventory.hub,
        kube.CONFIG_MAPS,
        {"metadata": {"name": "fleet-settings", "namespace": ns}, "data": {"color": "blue"}},
        field_manager="test",
    )
    fm = fleet_manager()
    example.ConfigMapSync(fm, ns, "fleet-settings", ns)
    await fm.start()
    await inventory.publish("c1", members[0])
    await inventory.publish("c2", members[1])

    async def everywhere(data: dict) -> bool:
        return all([await _member_data(m, ns) == data for m in members])

    await eventually(lambda: everywhere({"color": "blue"}), what="copies on both members")

    # A change on the hub reaches every member.
    await kube.apply(
        inventory.hub,
        kube.CONFIG_MAPS,
        {"metadata": {"name": "fleet-settings", "namespace": ns}, "data": {"color": "green"}},
        field_manager="test",
    )
    await eventually(lambda: everywhere({"color": "green"}), what="the hub change on both")

    # A copy edited by hand on a member is put back (the member watch triggers a reconcile).
    async with await members[0].client() as admin:
        await kube.apply(
            admin,
            kube.CONFIG_MAPS,
            {"metadata": {"name": "fleet-settings", "namespace": ns}, "data": {"color": "red"}},
            field_manager="someone",
            force=True,
        )
    await eventually(lambda: everywhere({"color": "green"}), what="the drift to be repaired")

    # Deleting the hub ConfigMap removes the copies this controller made.
    await kube.delete(inventory.hub, kube.CONFIG_MAPS, "fleet-settings", ns)
    await eventually(lambda: everywhere(None), what="the copies to be deleted")


async def test_sharded_copy_alone_syncs_every_member_and_holds_its_lease(
    inventory: Inventory, monkeypatch
) -> None:
    example = _example()
    ns = inventory.namespace
    members = [inventory.member(0), inventory.member(1)]
    monkeypatch.setenv("POD_NAME", "sync-0")
    await kube.apply(
        inventory.hub,
        kube.CONFIG_MAPS,
        {"metadata": {"name": "fleet-settings", "namespace": ns}, "data": {"color": "blue"}},
        field_manager="test",
    )
    await inventory.publish("c1", members[0])
    await inventory.publish("c2", members[1])
    args = [
        "--hub-kubeconfig",
        str(inventory.fleet.hub.kubeconfig_path),
        "--provider-file",
        str(inventory.provider_file),
        "--inventory-namespace",
        ns,
        "--source",
        f"{ns}/fleet-settings",
        "--target-namespace",
        ns,
        "--sharding",
        ns,
        "--name",
        "sync-example",
    ]
    task = asyncio.get_running_loop().create_task(example.main(args))
    lease = lease_name("sync-example", "sync-0")
    try:

        async def everywhere(data: dict) -> bool:
            return all([await _member_data(m, ns) == data for m in members])

        await eventually(lambda: everywhere({"color": "blue"}), what="copies on both members")
        held = await kube.get(inventory.hub, kube.LEASES, lease, ns)
        assert held["spec"]["holderIdentity"] == "sync-0"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    with pytest.raises(kube.NotFoundError):
        await kube.get(inventory.hub, kube.LEASES, lease, ns)

"""The controller layer on a real hub: a Controller with map functions under a Manager.

One Manager runs controllers the way every long-running command does: endpoints, caches
listed before the Lease, leader election, a bounded stop.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from cluster_inventory import kube
from cluster_inventory.controller import Controller, Manager, Result
from cluster_inventory.kube.informer import Informer, object_key
from cluster_inventory.kube.leaderelection import LeaderElectionConfig
from cluster_inventory.testing import free_port
from tests.support.waiting import eventually

NO_SUCH_KIND = kube.Resource(
    group="example.com", version="v1", plural="nosuchthings", kind="NoSuchThing"
)


class ConfigMapCopier(Controller[str]):
    """Copies each ConfigMap's ``data.value`` into its annotation ``copied`` (keys ``ns/name``)."""

    def __init__(self, hub: kube.ApiClient, namespace: str, registry: CollectorRegistry) -> None:
        super().__init__("copier", self.reconcile, workers=2, registry=registry)
        self.hub = hub
        self.seen: list[str] = []
        self.configmaps = Informer(hub, kube.CONFIG_MAPS, namespace=namespace, name="cms")
        self.watch(self.configmaps, lambda _, obj, __: [object_key(obj)])

    async def reconcile(self, key: str) -> Result | None:
        cm = self.configmaps.get(key)
        if cm is None:
            return None
        value = (cm.get("data") or {}).get("value")
        if cm["metadata"].get("annotations", {}).get("copied") != value:
            namespace, _, name = key.partition("/")
            await kube.apply(
                self.hub,
                kube.CONFIG_MAPS,
                {
                    "metadata": {
                        "name": name,
                        "namespace": namespace,
                        "annotations": {"copied": value},
                    }
                },
                field_manager="copier",
            )
        self.seen.append(key)
        return None


async def _readyz(port: int) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/readyz") as response,
    ):
        return response.status


async def test_a_controller_under_a_leader_elected_manager_reconciles_and_releases_the_lease(
    fleet: Any, test_namespace: str
) -> None:
    ns = test_namespace
    registry = CollectorRegistry()
    port = free_port()
    lease = LeaderElectionConfig(namespace=ns, name="copier", identity="replica-a")
    manager = Manager(
        fleet.hub.connection(), lease=lease, health=("127.0.0.1", port), registry=registry
    )
    made: list[ConfigMapCopier] = []
    manager.add(lambda hub: made.append(ConfigMapCopier(hub, ns, registry)) or made[-1])
    started = asyncio.Event()
    task = asyncio.get_running_loop().create_task(manager.run(started=started.set))
    async with await fleet.hub.client() as hub:
        try:
            await asyncio.wait_for(started.wait(), 60)
            await kube.apply(
                hub,
                kube.CONFIG_MAPS,
                {"metadata": {"name": "a", "namespace": ns}, "data": {"value": "1"}},
                field_manager="test",
            )

            async def copied() -> bool:
                cm = await kube.get(hub, kube.CONFIG_MAPS, "a", namespace=ns)
                return cm["metadata"].get("annotations", {}).get("copied") == "1"

            await eventually(copied, what="the controller's write")
            assert (await kube.get(hub, kube.LEASES, "copier", namespace=ns))["spec"][
                "holderIdentity"
            ] == "replica-a"
            assert await eventually(lambda: _readyz(port), what="/readyz") == 200
            assert 'controller_runtime_reconcile_total{controller="copier",result="success"}' in (
                generate_latest(registry).decode()
            )
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        # Released on the way out (holder cleared), so a standby takes over at once.
        held = await kube.get(hub, kube.LEASES, "copier", namespace=ns)
        assert not held["spec"].get("holderIdentity")
        assert not made[0].configmaps.running


async def test_a_source_that_cannot_be_read_stops_the_manager_before_the_lease(
    fleet: Any, test_namespace: str
) -> None:
    ns = test_namespace
    registry = CollectorRegistry()
    made: list[Controller[str]] = []

    def good(hub: kube.ApiClient) -> Controller[str]:
        made.append(ConfigMapCopier(hub, ns, registry))
        return made[-1]

    def missing_crd(hub: kube.ApiClient) -> Controller[str]:
        async def never(_: str) -> None:
            raise AssertionError("nothing is reconciled when a source cannot be read")

        controller: Controller[str] = Controller("missing", never, registry=registry)
        controller.watch(Informer(hub, NO_SUCH_KIND, namespace=ns, name="NoSuchThing"))
        made.append(controller)
        return controller

    lease = LeaderElectionConfig(namespace=ns, name="never-taken", identity="x")
    manager = Manager(fleet.hub.connection(), lease=lease, registry=registry)
    manager.add(good).add(missing_crd)
    with pytest.raises(kube.SourceUnavailableError) as raised:
        await asyncio.wait_for(manager.run(), 60)
    assert "NoSuchThing" in str(raised.value)
    async with await fleet.hub.client() as hub:
        with pytest.raises(kube.NotFoundError):
            await kube.get(hub, kube.LEASES, "never-taken", namespace=ns)
    # The first controller's cache, started by its prepare, was stopped too.
    assert all(not i.running for c in made for i in c.informers())

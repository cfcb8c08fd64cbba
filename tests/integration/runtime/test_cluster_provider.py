"""Another cluster provider feeds the same FleetManager (the ClusterProvider contract)."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.credentials import ClusterAccess, load_provider_file, resolve_access
from cluster_inventory.runtime import (
    ClusterAware,
    EngagedCluster,
    EngagementPolicy,
    FleetManager,
    Request,
)
from tests.support.hub.inventory import Inventory, metric
from tests.support.waiting import eventually


class StaticProvider:
    """A fixed list of clusters, engaged at start; ``remove`` disengages one."""

    def __init__(self, clusters: dict[str, ClusterAccess]) -> None:
        self.clusters = clusters
        self.fleet: ClusterAware | None = None
        self.events: list[str] = []
        self._task: asyncio.Task[None] | None = None

    async def start(self, fleet: ClusterAware) -> None:
        self.fleet = fleet
        self.events.append("start")
        self._task = asyncio.get_running_loop().create_task(self._engage_all())

    async def _engage_all(self) -> None:
        assert self.fleet is not None
        for name, access in self.clusters.items():
            await self.fleet.engage(name, access, profile={})

    async def wait_synced(self) -> None:
        assert self._task is not None
        await asyncio.shield(self._task)

    async def remove(self, name: str) -> None:
        assert self.fleet is not None
        await self.fleet.disengage(name, "deleted")

    async def stop(self) -> None:
        self.events.append("stop")
        if self._task is not None:
            self._task.cancel()


async def test_a_static_provider_engages_clusters_on_the_fleet_manager(
    inventory: Inventory,
) -> None:
    member = inventory.member(0)
    ns = inventory.namespace
    profile = await inventory.publish("static", member)
    access = resolve_access(profile, load_provider_file(inventory.provider_file))
    async with await member.client() as admin:
        await kube.apply(
            admin,
            kube.CONFIG_MAPS,
            {"metadata": {"name": "hello", "namespace": ns}, "data": {}},
            field_manager="test",
        )
    provider = StaticProvider({"static/one": access})
    registry = CollectorRegistry()
    fm = FleetManager(
        inventory.hub,
        provider=provider,
        policy=EngagementPolicy(cache_sync_timeout=60),
        registry=registry,
        graceful_shutdown=5.0,
    )
    seen: list[Request] = []
    engaged: list[str] = []

    @fm.reconciler("v1/ConfigMap", namespace=ns)
    async def reconcile(request: Request, cluster: EngagedCluster) -> None:
        seen.append(request)

    @fm.on_engage
    async def on_engage(cluster: EngagedCluster) -> None:
        engaged.append(cluster.name)

    assert fm.profiles is None
    try:
        await fm.start()
        await asyncio.wait_for(fm.wait_synced(), 60)
        assert engaged == ["static/one"]
        assert fm.cluster("static/one").access.server == member.server
        await eventually(
            lambda: Request("static/one", ns, "hello") in seen,
            what="the reconciler to run on the provider's cluster",
        )
        await provider.remove("static/one")
        assert fm.clusters == {}
        assert (
            metric(
                registry,
                "cluster_inventory_runtime_disengagements_total",
                fleet="fleet",
                reason="deleted",
            )
            == 1
        )
        await provider.fleet.engage("static/two", access, profile={})  # type: ignore[union-attr]
    finally:
        await fm.stop()
    assert provider.events == ["start", "stop"]
    assert fm.clusters == {}  # the fleet manager disengages what the provider left engaged
    assert (
        metric(
            registry,
            "cluster_inventory_runtime_disengagements_total",
            fleet="fleet",
            reason="stopped",
        )
        == 1
    )

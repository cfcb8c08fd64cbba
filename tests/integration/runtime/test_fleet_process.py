"""The fleet manager as a long-running process: hub outages, leader election, graceful stop."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry

from cluster_inventory.kube.leaderelection import LeaderElectionConfig
from cluster_inventory.runtime import EngagedCluster, Request
from tests.support.hub.inventory import Inventory
from tests.support.waiting import eventually


async def test_hub_apiserver_restart_loses_no_profile_event(
    inventory: Inventory, fleet_manager
) -> None:
    fm = fleet_manager()
    await fm.start()
    ns = inventory.namespace
    await inventory.publish("before", inventory.member(0))
    before = await eventually(lambda: fm.clusters.get(f"{ns}/before"), what="engagement")
    hub = inventory.fleet.hub
    # A crash and restart (SIGKILL: open watches end at once, with no drain to wait out).
    await hub.stop_apiserver(kill=True)
    await hub.start_apiserver()
    # Changes right after the restart race the informer's reconnect: none may be lost.
    await inventory.publish("after", inventory.member(1))
    await inventory.delete("before")
    await eventually(lambda: f"{ns}/after" in fm.clusters, timeout=60, what="the new profile")
    await eventually(lambda: before.closed, timeout=60, what="the deleted profile")
    assert set(fm.clusters) == {f"{ns}/after"}
    # The member cluster's caches were not affected by the hub's outage.
    assert not fm.clusters[f"{ns}/after"].closed


async def test_two_replicas_elect_one_leader_and_fail_over(
    inventory: Inventory, fleet_manager
) -> None:
    await inventory.publish("c1", inventory.member(0))
    key = f"{inventory.namespace}/c1"
    replicas = {name: fleet_manager(name=name, registry=CollectorRegistry()) for name in "ab"}
    reconciled: dict[str, list[Request]] = {"a": [], "b": []}
    for name, fm in replicas.items():

        async def reconcile(request: Request, cluster: EngagedCluster, name: str = name) -> None:
            reconciled[name].append(request)

        fm.add_reconciler("v1/ServiceAccount", reconcile, namespace=inventory.namespace)

    def lease(identity: str) -> LeaderElectionConfig:
        return LeaderElectionConfig(
            namespace=inventory.namespace,
            name="fleet",
            identity=identity,
            # Short enough for a test, long enough that a busy machine does not lose it.
            lease_duration=10.0,
            renew_deadline=8.0,
            retry_period=0.5,
        )

    loop = asyncio.get_running_loop()
    tasks = {
        name: loop.create_task(fm.run(leader_election=lease(name))) for name, fm in replicas.items()
    }
    try:
        leader = await eventually(
            lambda: next((n for n, fm in replicas.items() if key in fm.clusters), None),
            timeout=30,
            what="a leader to engage the cluster",
        )
        standby = "b" if leader == "a" else "a"
        await eventually(lambda: reconciled[leader], what="the leader's reconciler")
        assert replicas[leader].elector is not None and replicas[leader].elector.is_leader
        assert not replicas[standby].clusters and not reconciled[standby]

        tasks[leader].cancel()  # a clean stop releases the Lease: the standby takes over at once
        # Bounded, so a stop that ignored its cancel fails here and names this step.
        stopped, _ = await asyncio.wait({tasks[leader]}, timeout=30)
        assert stopped, "the leader's run() did not end within 30 s of its cancel"
        assert tasks[leader].cancelled()
        assert not replicas[leader].clusters
        await eventually(lambda: key in replicas[standby].clusters, timeout=30, what="failover")
        await eventually(lambda: reconciled[standby], what="the new leader's reconciler")
    finally:
        for task in tasks.values():
            task.cancel()
        _, running = await asyncio.wait(tasks.values(), timeout=30)
        assert not running, f"replicas still running 30 s after their cancel: {running}"

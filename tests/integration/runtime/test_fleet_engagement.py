"""Engaging and disengaging member clusters from ClusterProfiles on a real hub and members."""

from __future__ import annotations

import asyncio

import pytest

from cluster_inventory import kube
from cluster_inventory.runtime import (
    ClusterNotEngaged,
    EngagedCluster,
    EngagementPolicy,
    Request,
    Result,
)
from tests.support.hub.inventory import Inventory, metric, write_provider_file
from tests.support.waiting import eventually


async def _configmap(member, namespace: str, name: str, data: dict[str, str]) -> dict:
    async with await member.client() as admin:
        return await kube.apply(
            admin,
            kube.CONFIG_MAPS,
            {"metadata": {"name": name, "namespace": namespace}, "data": data},
            field_manager="test",
            force=True,
        )


async def test_ready_profile_is_engaged_and_its_reconciler_runs(
    inventory: Inventory, fleet_manager
) -> None:
    member = inventory.member(0)
    await _configmap(member, inventory.namespace, "hello", {"from": "member"})
    fm = fleet_manager()
    seen: list[tuple[Request, dict | None]] = []

    @fm.reconciler("v1/ConfigMap", namespace=inventory.namespace)
    async def reconcile(request: Request, cluster: EngagedCluster) -> None:
        seen.append((request, cluster.get("v1/ConfigMap", request.name, request.namespace)))

    await fm.start()
    await inventory.publish("c1", member)
    key = f"{inventory.namespace}/c1"
    await eventually(
        lambda: any(r.cluster == key and r.name == "hello" for r, _ in seen),
        what="the reconciler to run for the member's ConfigMap",
    )
    request, cached = next((r, o) for r, o in seen if r.name == "hello")
    assert request == Request(key, inventory.namespace, "hello")
    assert cached is not None and cached["data"] == {"from": "member"}
    assert fm.cluster(key).access.server == member.server
    # The profile cache keeps no managedFields (the hub wrote some: applied, then patched).
    assert fm.cluster(key).profile["metadata"]["name"] == "c1"
    assert "managedFields" not in fm.cluster(key).profile["metadata"]
    assert metric(fm.registry, "cluster_inventory_runtime_engaged_clusters", fleet="fleet") == 1
    assert (
        metric(
            fm.registry,
            "controller_runtime_reconcile_total",
            controller="configmap",
            result="success",
        )
        >= 1
    )
    # A change on the member reaches the reconciler through the cluster's watch.
    await _configmap(member, inventory.namespace, "hello", {"from": "member", "v": "2"})
    await eventually(
        lambda: any((o or {}).get("data", {}).get("v") == "2" for _, o in seen),
        what="the updated ConfigMap",
    )


async def test_deleted_profile_disengages_stops_its_tasks_and_closes_its_client(
    inventory: Inventory, fleet_manager
) -> None:
    member = inventory.member(0)
    await _configmap(member, inventory.namespace, "blocker", {})
    fm = fleet_manager()
    started = asyncio.Event()
    cancelled = asyncio.Event()
    disengaged: list[str] = []

    @fm.reconciler("v1/ConfigMap", namespace=inventory.namespace)
    async def reconcile(request: Request, cluster: EngagedCluster) -> None:
        if request.name != "blocker":
            return
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    @fm.on_disengage
    async def record(cluster: EngagedCluster) -> None:
        disengaged.append(cluster.name)

    await fm.start()
    await inventory.publish("c1", member)
    await asyncio.wait_for(started.wait(), 30)
    key = f"{inventory.namespace}/c1"
    cluster = fm.cluster(key)
    informers = list(cluster.informers.values())
    assert cluster.tasks, "the blocked reconcile runs as a task of its cluster"

    await inventory.delete("c1")
    await asyncio.wait_for(cancelled.wait(), 30)
    await eventually(lambda: cluster.closed, what="the cluster to close")
    assert key not in fm.clusters
    with pytest.raises(ClusterNotEngaged, match="c1"):
        fm.cluster(key)
    assert disengaged == [key]
    assert not cluster.tasks
    assert informers and not any(informer.running for informer in informers)
    assert cluster.client.rest_client.pool_manager.closed
    assert (
        metric(
            fm.registry,
            "cluster_inventory_runtime_disengagements_total",
            fleet="fleet",
            reason="deleted",
        )
        == 1
    )


async def test_unhealthy_profile_is_not_engaged_until_it_turns_healthy(
    inventory: Inventory, fleet_manager
) -> None:
    fm = fleet_manager()
    engaged: list[str] = []

    @fm.on_engage
    async def record(cluster: EngagedCluster) -> None:
        engaged.append(cluster.name)

    await fm.start()
    await inventory.publish("sick", inventory.member(0), healthy=False)
    await inventory.publish("well", inventory.member(1))
    ns = inventory.namespace
    await eventually(lambda: f"{ns}/well" in fm.clusters, what="the healthy profile")
    # The sick profile is re-checked every 0.5 s: wait for one re-check after "well" engaged.
    rechecks = metric(
        fm.registry,
        "controller_runtime_reconcile_total",
        controller="clusterprofile",
        result="requeue_after",
    )
    await eventually(
        lambda: (
            metric(
                fm.registry,
                "controller_runtime_reconcile_total",
                controller="clusterprofile",
                result="requeue_after",
            )
            > rechecks
        ),
        what="a re-check of the unhealthy profile",
    )
    assert engaged == [f"{ns}/well"]
    assert f"{ns}/sick" not in fm.clusters

    await inventory.set_healthy("sick", True)
    await eventually(lambda: f"{ns}/sick" in fm.clusters, what="the recovered profile")
    assert engaged == [f"{ns}/well", f"{ns}/sick"]


async def test_access_change_rebuilds_the_client_and_a_status_change_does_not(
    inventory: Inventory, fleet_manager
) -> None:
    member = inventory.member(0)
    fm = fleet_manager()
    await fm.start()
    await inventory.publish("c1", member, properties={"region": "eu"})
    key = f"{inventory.namespace}/c1"
    first = await eventually(lambda: fm.clusters.get(key), what="engagement")
    client = first.client

    # Unrelated status: a property and the version change; the cluster is kept as it is.
    await inventory.patch_status(
        "c1",
        {"properties": [{"name": "region", "value": "us"}], "version": {"kubernetes": "v1.37.0"}},
    )
    await eventually(
        lambda: first.profile["status"]["properties"][0]["value"] == "us",
        what="the fleet to see the status change",
    )
    await eventually(lambda: len(fm.queue) == 0, what="the queue to drain")
    assert fm.cluster(key) is first and first.client is client and not first.closed

    # The access provider now names another Secret (same token): a new client.
    await inventory.publish("c1", member, secret="c1-rotated")
    second = await eventually(
        lambda: (c := fm.clusters.get(key)) is not None and c is not first and c,
        what="the rebuilt cluster",
    )
    assert first.closed and first.client.rest_client.pool_manager.closed
    assert second.access.cluster_config == {"clusterName": "c1-rotated"}
    assert (
        metric(
            fm.registry,
            "cluster_inventory_runtime_disengagements_total",
            fleet="fleet",
            reason="access-changed",
        )
        == 1
    )

    # The consumer's provider file changes (new plugin environment): rebuilt again.
    write_provider_file(
        inventory.provider_file,
        env={"FLEET_TEST": "1"},
        namespace=inventory.namespace,
        hub=inventory.fleet.hub,
    )
    third = await eventually(
        lambda: (c := fm.clusters.get(key)) is not None and c is not second and c,
        what="the cluster rebuilt for the provider file",
    )
    assert second.closed
    assert any(e.name == "FLEET_TEST" for e in third.access.exec_config.env)

    # A broken provider file is refused and the engaged cluster kept.
    inventory.provider_file.write_text("{not json")
    await eventually(
        lambda: (
            metric(
                fm.registry,
                "cluster_inventory_runtime_provider_file_reloads_total",
                fleet="fleet",
                result="invalid",
            )
            == 1
        ),
        what="the broken provider file to be refused",
    )
    assert fm.cluster(key) is third and not third.closed
    assert any(e.name == "FLEET_TEST" for e in fm.providers.providers[0].exec_config.env)


async def test_unhealthy_engaged_cluster_is_disengaged_after_the_policy_period(
    inventory: Inventory, fleet_manager
) -> None:
    fm = fleet_manager(
        policy=EngagementPolicy(disengage_unhealthy_after=0.5, readiness_recheck=0.2)
    )
    await fm.start()
    await inventory.publish("c1", inventory.member(0))
    key = f"{inventory.namespace}/c1"
    first = await eventually(lambda: fm.clusters.get(key), what="engagement")
    await inventory.set_healthy("c1", False)
    await eventually(lambda: first.closed, what="disengagement for ill health")
    assert key not in fm.clusters
    assert (
        metric(
            fm.registry,
            "cluster_inventory_runtime_disengagements_total",
            fleet="fleet",
            reason="unhealthy",
        )
        == 1
    )
    await inventory.set_healthy("c1", True)
    await eventually(lambda: key in fm.clusters, what="re-engagement after recovery")


async def test_conflicts_are_retried_with_backoff(inventory: Inventory, fleet_manager) -> None:
    member = inventory.member(0)
    await _configmap(member, inventory.namespace, "counter", {"n": "0"})
    fm = fleet_manager()
    attempts: list[str] = []

    @fm.reconciler("v1/ConfigMap", namespace=inventory.namespace)
    async def bump(request: Request, cluster: EngagedCluster) -> Result | None:
        if request.name != "counter":
            return None
        current = await kube.get(cluster.client, kube.CONFIG_MAPS, "counter", request.namespace)
        if current["data"].get("done"):
            return None
        if not attempts:
            # Someone else writes between our read and our write: our update must conflict.
            await _configmap(member, request.namespace, "counter", {"n": "1"})
        attempts.append(current["metadata"]["resourceVersion"])
        current["data"] = {"n": str(int(current["data"]["n"]) + 1), "done": "yes"}
        await kube.request(
            cluster.client,
            "PUT",
            kube.CONFIG_MAPS.path(request.namespace, "counter"),
            body=current,
        )
        return None

    await fm.start()
    await inventory.publish("c1", member)

    async def done() -> bool:
        async with await member.client() as admin:
            cm = await kube.get(admin, kube.CONFIG_MAPS, "counter", inventory.namespace)
        return cm["data"] == {"n": "2", "done": "yes"}

    await eventually(done, what="the retried update")
    assert len(attempts) >= 2
    assert (
        metric(fm.registry, "controller_runtime_reconcile_errors_total", controller="configmap")
        >= 1
    )
    labels = {"name": "configmap", "controller": "configmap"}
    assert metric(fm.registry, "workqueue_retries_total", **labels) >= 1


async def test_profiles_of_one_member_in_two_inventories_engage_once(
    inventory: Inventory, fleet_manager
) -> None:
    other = await inventory.namespace_for("b")
    fm = fleet_manager(
        namespaces=[inventory.namespace, other],
        policy=EngagementPolicy(dedupe_by_member_id=True, readiness_recheck=0.5),
    )
    await fm.start()
    member = inventory.member(0)
    a = f"{inventory.namespace}/shared"
    b = f"{other}/shared"
    await inventory.publish("shared", member, member_id="uid-1")
    await inventory.publish("shared", member, member_id="uid-1", namespace=other)
    await inventory.publish("solo", inventory.member(1), member_id="uid-2")
    solo = f"{inventory.namespace}/solo"
    holder = await eventually(
        lambda: solo in fm.clusters and ({a, b} & set(fm.clusters)),
        what="one profile per member id",
    )
    await eventually(lambda: len(fm.queue) == 0, what="the queue to drain")
    assert {a, b} & set(fm.clusters) == holder and len(holder) == 1, (
        "exactly one profile of uid-1 is engaged"
    )
    (engaged,) = holder
    twin = b if engaged == a else a
    await inventory.delete("shared", namespace=engaged.split("/")[0])
    await eventually(
        lambda: twin in fm.clusters and engaged not in fm.clusters, what="failover to the twin"
    )


async def test_profiles_with_the_same_access_share_one_connection_and_one_watch(
    inventory: Inventory, fleet_manager
) -> None:
    member = inventory.member(0)
    await _configmap(member, inventory.namespace, "shared", {"v": "1"})
    fm = fleet_manager()
    seen: list[tuple[str, str]] = []  # (cluster, data v)

    @fm.reconciler("v1/ConfigMap", namespace=inventory.namespace)
    async def reconcile(request: Request, cluster: EngagedCluster) -> None:
        if request.name == "shared":
            obj = cluster.get("v1/ConfigMap", "shared", request.namespace) or {}
            seen.append((request.cluster, obj.get("data", {}).get("v", "")))

    await fm.start()
    k1, k2, k3 = (f"{inventory.namespace}/{n}" for n in ("c1", "c2", "c3"))
    # c1 and c2 name one Secret on one member: the same access, hence the same credential.
    await inventory.publish("c1", member, secret="shared-token")
    await inventory.publish("c2", member, secret="shared-token")
    await inventory.publish("c3", member)  # its own Secret: its own connection
    await eventually(
        lambda: {(k1, "1"), (k2, "1"), (k3, "1")} <= set(seen), what="all three reconciled"
    )
    c1, c2, c3 = fm.cluster(k1), fm.cluster(k2), fm.cluster(k3)
    assert c1.connection is c2.connection and c1.client is c2.client
    assert c3.connection is not c1.connection
    shared = next(iter(c1.informers.values()))
    assert shared is next(iter(c2.informers.values()))
    assert shared.lists == 1, "one LIST serves both clusters"
    assert metric(fm.registry, "cluster_inventory_runtime_connections", fleet="fleet") == 2

    # c1 goes: c2 keeps the connection and the watch; c1's handler no longer fires.
    await inventory.delete("c1")
    await eventually(lambda: c1.closed, what="c1 to disengage")
    assert shared.running and not c2.client.rest_client.pool_manager.closed
    seen.clear()
    await _configmap(member, inventory.namespace, "shared", {"v": "2"})
    await eventually(lambda: (k2, "2") in seen and (k3, "2") in seen, what="the update on c2, c3")
    assert all(cluster != k1 for cluster, _ in seen), seen

    # The last user closes it.
    await inventory.delete("c2")
    await eventually(lambda: c2.closed, what="c2 to disengage")
    assert not shared.running and c2.client.rest_client.pool_manager.closed
    assert metric(fm.registry, "cluster_inventory_runtime_connections", fleet="fleet") == 1
    assert not c3.closed and not c3.client.rest_client.pool_manager.closed


async def test_stop_does_not_wait_the_grace_period_when_no_reconcile_runs(
    inventory: Inventory, fleet_manager
) -> None:
    # The provider-file poll used to sit among the reconcile workers, so every stop waited
    # out the whole grace (then 30 s by default) for a task that never ends by itself.
    fm = fleet_manager(graceful_shutdown=3600.0)

    async def reconcile(request: Request, cluster: EngagedCluster) -> None:
        return None

    fm.add_reconciler("v1/ConfigMap", reconcile, namespace=inventory.namespace)
    await fm.start()
    await fm.wait_synced()
    stopping = asyncio.ensure_future(fm.stop())
    done, _ = await asyncio.wait({stopping}, timeout=60)
    assert done, "stop() waited for the grace period with nothing to finish"
    stopping.result()

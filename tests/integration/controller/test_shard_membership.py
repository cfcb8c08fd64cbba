"""Shard membership and the fence on a real hub.

Replicas find each other through their Leases: one that leaves cleanly is gone at once, one
that dies is gone after the Lease duration. The fence rests on the hub refusing a
server-side apply whose ``metadata.resourceVersion`` is outdated; a replica whose view says
it owns a member another live replica holds writes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import time

import yaml
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api.constants import ANNOTATION_SHARD_HOLDER, LABEL_CLUSTER_SET
from cluster_inventory.controller import Manager, ShardConfig, ShardMembership
from cluster_inventory.controller.sharding import rendezvous_owner
from cluster_inventory.manager import ClusterManagerRunnable, ManagerConfig, registration_secret
from tests.support.waiting import eventually


def _config(namespace: str, identity: str, **timings: float) -> ShardConfig:
    settings = {"lease_duration": 2.0, "renew_interval": 0.5, "settle": 0.2, **timings}
    return ShardConfig(namespace=namespace, group="g", identity=identity, **settings)


async def test_peers_join_leave_and_die(fleet, test_namespace):
    async with await fleet.hub.client() as hub:
        one = ShardMembership(hub, _config(test_namespace, "one"), registry=CollectorRegistry())
        two = ShardMembership(hub, _config(test_namespace, "two"), registry=CollectorRegistry())
        changes: list[tuple[str, ...]] = []
        one.on_change(lambda: changes.append(one.replicas))
        runs = [asyncio.ensure_future(m.run()) for m in (one, two)]
        try:
            await eventually(
                lambda: (
                    one.ready() and two.ready() and one.replicas == ("one", "two") == two.replicas
                )
            )
            owners = {m: one.owner(m) for m in (f"m{i}" for i in range(40))}
            assert owners == {m: two.owner(m) for m in owners}
            assert set(owners.values()) == {"one", "two"}
            # Killed (no clean stop): its Lease stays and is noticed only once it expires.
            runs[1].cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await runs[1]
            died = time.monotonic()
            await eventually(lambda: one.replicas == ("one",), timeout=10)
            assert time.monotonic() - died >= 1.0  # not before the Lease could have expired
            assert all(one.owns(m) for m in owners)
            # It comes back, then leaves cleanly: its Lease is deleted and it is gone at once.
            await two.stop()
            two = ShardMembership(hub, _config(test_namespace, "two"), registry=CollectorRegistry())
            runs[1] = asyncio.ensure_future(two.run())
            await eventually(lambda: one.replicas == ("one", "two"))
            await two.stop()
            runs[1].cancel()
            left = time.monotonic()
            await eventually(lambda: one.replicas == ("one",), timeout=10)
            assert time.monotonic() - left < 1.5
            assert changes[-1] == ("one",) and ("one", "two") in changes
        finally:
            for task in runs:
                task.cancel()
            await asyncio.gather(*runs, return_exceptions=True)
            await one.stop()
            await two.stop()


async def test_the_hub_refuses_an_apply_on_an_outdated_version(fleet, test_namespace):
    async with await fleet.hub.client() as hub:
        body = {
            "metadata": {"name": "p", "namespace": test_namespace},
            "spec": {"clusterManager": {"name": "t"}},
        }
        created = await kube.create(hub, kube.CLUSTER_PROFILES, body)
        old = created["metadata"]["resourceVersion"]
        await kube.apply(
            hub,
            kube.CLUSTER_PROFILES,
            {
                **body,
                "metadata": {**body["metadata"], "annotations": {ANNOTATION_SHARD_HOLDER: "b"}},
            },
            field_manager="b",
        )
        stale = {**body, "metadata": {**body["metadata"], "resourceVersion": old}}
        try:
            await kube.apply(
                hub,
                kube.CLUSTER_PROFILES,
                {**stale, "status": {"version": {"kubernetes": "v0"}}},
                field_manager="a",
                subresource="status",
            )
        except kube.ConflictError:
            pass
        else:
            raise AssertionError("a status apply on an outdated resourceVersion was accepted")
        stored = await kube.get(hub, kube.CLUSTER_PROFILES, "p", namespace=test_namespace)
        assert "status" not in stored or not stored["status"].get("version")


async def test_a_replica_never_writes_a_profile_a_live_replica_holds(fleet, test_namespace):
    """Replica b's view is wrong (it believes it owns every member); a holds the profile."""
    inventory = f"{test_namespace}-inv"[:63]
    member = next(iter(fleet.members.values()))
    async with await fleet.hub.client() as hub:
        await kube.apply(
            hub,
            kube.NAMESPACES,
            {"metadata": {"name": inventory, "labels": {LABEL_CLUSTER_SET: test_namespace}}},
            field_manager="test",
        )
        # A name rendezvous hashing gives to "a" among {a, b}.
        name = next(n for n in (f"m{i}" for i in range(50)) if rendezvous_owner(n, "ab") == "a")
        secret = registration_secret(
            name, test_namespace, yaml.safe_dump(member.kubeconfig()), [test_namespace]
        )
        await kube.apply(hub, kube.SECRETS, secret, field_manager="test")
        config = ManagerConfig(
            name=f"f-{test_namespace[-8:]}",
            namespace=test_namespace,
            member_namespace=test_namespace,
            probe_interval=0.5,
            workers=2,
        )
        replicas = {}
        tasks = {}
        for identity in ("a", "b"):
            registry = CollectorRegistry()
            cm = ClusterManagerRunnable(hub, config, registry=registry, identity=identity)
            replicas[identity] = cm
            process = Manager(hub, shard=_config(test_namespace, identity), registry=registry)
            tasks[identity] = asyncio.ensure_future(process.add(cm).run())
        try:

            async def held_by(identity: str) -> bool:
                p = await kube.get(hub, kube.CLUSTER_PROFILES, name, namespace=inventory)
                held = (p["metadata"].get("annotations") or {}).get(ANNOTATION_SHARD_HOLDER)
                return held == identity and bool((p.get("status") or {}).get("accessProviders"))

            await eventually(lambda: held_by("a"), timeout=30)
            b = replicas["b"]
            assert b.shard is not None
            b.shard.owns = lambda member: True  # type: ignore[method-assign]
            # As the shard says a change of the live replicas (a pass is incremental).
            b.inventory.touch_all()
            writes_before = b.metrics.status_writes._value.get()
            # A change on the member: a writes it; b, blocked by a live holder, does not.
            async with await member.client() as client:
                await kube.apply(
                    client,
                    kube.CLUSTER_PROPERTIES,
                    {"metadata": {"name": f"fence.{test_namespace}"}, "spec": {"value": "1"}},
                    field_manager="test",
                )

            async def shows_change() -> bool:
                p = await kube.get(hub, kube.CLUSTER_PROFILES, name, namespace=inventory)
                props = (p.get("status") or {}).get("properties") or []
                return any(x["name"] == f"fence.{test_namespace}" for x in props)

            await eventually(shows_change, timeout=30)
            assert await held_by("a")
            # b's placement ran and its reconciles saw the profile (it is in its desired set).
            await eventually(lambda: any(k.name == name for k in b.state.desired), timeout=10)
            assert b.metrics.status_writes._value.get() == writes_before
            # a leaves cleanly: b now owns the member and takes the profile.
            tasks["a"].cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await tasks["a"]
            await eventually(lambda: held_by("b"), timeout=30)
        finally:
            for task in tasks.values():
                task.cancel()
            await asyncio.gather(*tasks.values(), return_exceptions=True)
            async with await member.client() as client:
                await kube.delete(client, kube.CLUSTER_PROPERTIES, f"fence.{test_namespace}")
            await kube.delete(hub, kube.NAMESPACES, inventory)


async def test_our_lease_is_renewed_while_the_main_loop_is_blocked(fleet, test_namespace):
    """A replica behind on its own work still renews: peers never see it die (issue 31)."""
    async with await fleet.hub.client() as hub:
        registry = CollectorRegistry()
        busy = ShardMembership(
            hub, _config(test_namespace, "busy", lease_duration=3.0), registry=registry
        )
        run = asyncio.ensure_future(busy.run())
        try:
            await eventually(busy.ready)
            before = await kube.get(hub, kube.LEASES, busy.lease, namespace=test_namespace)
            # The load, not a wait: this loop runs nothing else for longer than the Lease
            # duration, as a replica's loop does when thousands of members are due at once.
            time.sleep(4.0)  # noqa: ASYNC251 - blocking the loop is the point
            after = await kube.get(hub, kube.LEASES, busy.lease, namespace=test_namespace)
            renewed = dt.datetime.fromisoformat(after["spec"]["renewTime"]) - (
                dt.datetime.fromisoformat(before["spec"]["renewTime"])
            )
            assert renewed.total_seconds() >= 3.0, (before["spec"], after["spec"])
            assert busy.replicas == ("busy",)
            late = registry.get_sample_value(
                "cluster_inventory_lease_renewal_lateness_seconds_count", {"lease": "shard"}
            )
            assert late is not None and late >= 6
        finally:
            run.cancel()
            await asyncio.gather(run, return_exceptions=True)
            await busy.stop()


async def test_our_lease_is_renewed_while_the_other_runnables_still_prepare(fleet, test_namespace):
    """Renewals start when we join, not when the Manager runs us: the runnables after us
    list their caches first, which at 10,000 members took longer than the Lease, and every
    peer counted every replica gone at start-up."""
    async with await fleet.hub.client() as hub:
        observer = ShardMembership(
            hub, _config(test_namespace, "obs"), registry=CollectorRegistry()
        )
        slow = ShardMembership(hub, _config(test_namespace, "slow"), registry=CollectorRegistry())
        watching = asyncio.ensure_future(observer.run())
        try:
            await eventually(observer.ready)
            await slow.prepare()  # joined; the Manager would now prepare the others (> 2 s)
            await eventually(lambda: observer.replicas == ("obs", "slow"))
            seen: set[tuple[str, ...]] = set()
            deadline = time.monotonic() + 2 * slow.config.lease_duration
            while time.monotonic() < deadline:
                seen.add(observer.replicas)
                await asyncio.sleep(0.05)
            assert seen == {("obs", "slow")}  # never counted gone before run() was called
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)
            await slow.stop()
            await observer.stop()

"""The MultiKueue sync on the real hub with Kueue's own CRDs (sigs.k8s.io/kueue module)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.integrations.sync._ownership import LABEL_MANAGED_BY
from cluster_inventory.integrations.sync.multikueue import (
    FIELD_MANAGER,
    MULTIKUEUE_CLUSTERS,
    MULTIKUEUE_CONFIGS,
    MultiKueueSync,
    render_multikueue_cluster,
)
from cluster_inventory.testing import Fleet
from cluster_inventory_workshop.upstream_crds import kueue_crds
from tests.support.waiting import eventually


@pytest.fixture
async def hub(fleet: Fleet, test_namespace: str) -> AsyncIterator[kube.ApiClient]:
    crds = await asyncio.to_thread(kueue_crds)
    async with await fleet.hub.client() as client:
        await kube.ensure_crds(client, crds)
        yield client
        # cluster-scoped leftovers of this test (the namespace goes with the fixture)
        for resource in (MULTIKUEUE_CLUSTERS, MULTIKUEUE_CONFIGS):
            for item in (await kube.list_objects(client, resource))["items"]:
                if item["metadata"]["name"].startswith(test_namespace):
                    await kube.delete(client, resource, item["metadata"]["name"])


async def profile(hub: kube.ApiClient, namespace: str, name: str) -> None:
    await kube.apply(
        hub,
        kube.CLUSTER_PROFILES,
        {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterManager": {"name": "test"}},
        },
        field_manager="test",
    )


def make_sync(hub: kube.ApiClient, ns: str) -> MultiKueueSync:
    """A sync serving ``ns`` as Kueue's namespace, keeping the config ``<ns>-fleet``."""
    return MultiKueueSync(
        hub,
        kueue_namespace=ns,
        config_name=f"{ns}-fleet",
        registry=CollectorRegistry(),
        identity="test",
    )


async def ours(hub: kube.ApiClient, prefix: str) -> dict[str, dict[str, Any]]:
    listed = await kube.list_objects(hub, MULTIKUEUE_CLUSTERS)
    return {
        i["metadata"]["name"]: i
        for i in listed["items"]
        if i["metadata"]["name"].startswith(prefix)
        and (i["metadata"].get("labels") or {}).get(LABEL_MANAGED_BY) == FIELD_MANAGER
    }


async def test_clusters_and_config_follow_the_profiles_and_others_are_left_alone(
    hub: kube.ApiClient, test_namespace: str
) -> None:
    ns = test_namespace
    names = [f"{ns}-w{i}" for i in range(3)]
    for name in names:
        await profile(hub, ns, name)
    # A MultiKueueCluster made by hand (kubeconfig source) holding a profile's name.
    foreign = await kube.apply(
        hub,
        MULTIKUEUE_CLUSTERS,
        {
            "metadata": {"name": f"{ns}-byhand"},
            "spec": {"clusterSource": {"kubeConfig": {"location": "worker-secret"}}},
        },
        field_manager="someone",
    )
    await profile(hub, ns, f"{ns}-byhand")
    sync = make_sync(hub, ns)
    await sync.start()
    try:

        async def three() -> dict[str, dict[str, Any]] | None:
            found = await ours(hub, ns)
            return found if sorted(found) == names else None

        found = await eventually(three, timeout=30, what="three MultiKueueClusters")
        for name, mkc in found.items():
            assert mkc["spec"] == {"clusterSource": {"clusterProfileRef": {"name": name}}}
            assert "status" not in mkc or not mkc["status"]

        async def config() -> list[str] | None:
            try:
                cfg = await kube.get(hub, MULTIKUEUE_CONFIGS, f"{ns}-fleet")
            except kube.NotFoundError:
                return None
            return list(cfg["spec"]["clusters"])

        assert await eventually(config, what="the MultiKueueConfig") == names

        async def taken() -> list[dict[str, Any]]:
            listed = await kube.list_objects(hub, kube.EVENTS, ns)
            return [e for e in listed["items"] if e.get("reason") == "TargetNameTaken"]

        (event,) = await eventually(taken, what="TargetNameTaken on the by-hand profile")
        assert event["regarding"]["name"] == f"{ns}-byhand"
        again = await kube.get(hub, MULTIKUEUE_CLUSTERS, f"{ns}-byhand")
        assert again["metadata"]["resourceVersion"] == foreign["metadata"]["resourceVersion"]

        # Kueue owns status: what it writes survives, and a heartbeat rewrites nothing.
        await kube.apply(
            hub,
            MULTIKUEUE_CLUSTERS,
            {
                "metadata": {"name": names[0]},
                "status": {
                    "conditions": [
                        {
                            "type": "Active",
                            "status": "False",
                            "reason": "BadClusterProfile",
                            "message": "kueue says so",
                            "lastTransitionTime": "2026-11-24T00:00:00Z",
                        }
                    ]
                },
            },
            field_manager="kueue",
            subresource="status",
        )
        writes, reconciles = sync.writes, sync.reconciles
        await kube.apply(
            hub,
            kube.CLUSTER_PROFILES,
            {"metadata": {"name": names[0], "namespace": ns, "labels": {"x": "y"}}},
            field_manager="labeller",
        )
        await eventually(lambda: sync.reconciles > reconciles, what="a reconcile")
        assert sync.writes == writes
        kept = await kube.get(hub, MULTIKUEUE_CLUSTERS, names[0])
        assert kept["status"]["conditions"][0]["reason"] == "BadClusterProfile"

        # A profile goes: its cluster goes and the config follows.
        await kube.delete(hub, kube.CLUSTER_PROFILES, names[1], ns)
        await eventually(
            lambda: _is(config(), [names[0], names[2]]), what="config without the deleted one"
        )
        assert sorted(await ours(hub, ns)) == [names[0], names[2]]

        # More than 20 clusters (seen at once by a restarted sync): the config is not cut;
        # an Event gives the count.
        await sync.stop()
        for i in range(3, 22):
            await profile(hub, ns, f"{ns}-w{i}")
        sync = make_sync(hub, ns)
        await sync.start()

        async def too_many() -> list[dict[str, Any]]:
            listed = await kube.list_objects(hub, kube.EVENTS, ns)
            return [e for e in listed["items"] if e.get("reason") == "ConfigNotWritten"]

        (too,) = await eventually(too_many, timeout=30, what="ConfigNotWritten Event")
        assert "21 MultiKueueClusters" in too["note"] and "1 to 20" in too["note"]
        assert await config() == [names[0], names[2]]
        assert len(await ours(hub, ns)) == 21
    finally:
        await sync.stop()


async def _is(value: Any, expected: Any) -> bool:
    return (await value) == expected


async def test_a_create_that_finds_its_own_earlier_write_writes_nothing(
    hub: kube.ApiClient, test_namespace: str
) -> None:
    # A create whose answer was lost (a reset or a timeout) landed anyway, and the watch has
    # not brought the object yet: the retry finds it already there and must not write again
    # (an apply of the same content would still move the managed fields: a real write).
    ns = test_namespace
    name = f"{ns}-w0"
    await profile(hub, ns, name)
    stored_profile = await kube.get(hub, kube.CLUSTER_PROFILES, name, ns)
    sync = make_sync(hub, ns)  # never started: its cache holds nothing
    body = sync.stamped(render_multikueue_cluster(stored_profile))
    await sync._create(dict(body), stored_profile)
    first = await kube.get(hub, MULTIKUEUE_CLUSTERS, name)
    await sync._create(dict(body), stored_profile)
    again = await kube.get(hub, MULTIKUEUE_CLUSTERS, name)
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert sync.blocked == set()

    # A render that changed is applied over our own object all the same.
    changed = sync.stamped(render_multikueue_cluster(stored_profile))
    changed["metadata"]["annotations"]["example.com/note"] = "changed"
    changed = sync.stamped(changed)
    await sync._create(changed, stored_profile)
    after = await kube.get(hub, MULTIKUEUE_CLUSTERS, name)
    assert after["metadata"]["annotations"]["example.com/note"] == "changed"


async def test_a_namespace_without_profiles_is_said_once_not_served_silently(
    hub: kube.ApiClient, test_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Kueue reads profiles only in its own namespace: a sync pointed at one that is not an
    inventory (the default kueue-system on the demo's kept fleet) says so, once."""
    sync = make_sync(hub, test_namespace)
    caplog.set_level("WARNING", logger="cluster_inventory.integrations.sync.multikueue")
    await sync.start()
    try:
        await sync.wait_synced()
        await sync.wait_synced()  # readiness asks again: still one warning
        said = [r.getMessage() for r in caplog.records if "holds no ClusterProfile" in r.message]
        assert len(said) == 1, said
        assert test_namespace in said[0] and "multicluster.x-k8s.io/clusterset" in said[0]
        await profile(hub, test_namespace, f"{test_namespace}-c1")
        await eventually(
            lambda: ours(hub, test_namespace), what="the first profile's MultiKueueCluster"
        )
    finally:
        await sync.stop()
    assert sync.instance == f"{test_namespace}-fleet"  # the config's name, as the CLI's

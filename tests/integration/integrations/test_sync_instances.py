"""Each sync instance owns only its own objects, cluster-scoped ones too.

Following the ``ConfigNotWritten`` advice ("run one sync per config"), two ``multikueue sync``
processes with disjoint ``-l`` and different ``--config-name`` used to share one Lease (so
the second never ran) or, without election, delete each other's MultiKueueClusters in a
loop: both used the same ownership label on cluster-scoped objects. Now each instance labels
what it writes with its name, reads only its own objects and elects on its own Lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api.constants import LABEL_SYNC_INSTANCE
from cluster_inventory.credentials import load_provider_file
from cluster_inventory.integrations.sync._ownership import LABEL_MANAGED_BY
from cluster_inventory.integrations.sync.argocd import ArgoCDSync
from cluster_inventory.integrations.sync.multikueue import (
    FIELD_MANAGER,
    MULTIKUEUE_CLUSTERS,
    MULTIKUEUE_CONFIGS,
    MultiKueueSync,
)
from cluster_inventory.kube.informer import DELETED, Informer
from cluster_inventory.testing import Fleet
from cluster_inventory_workshop.upstream_crds import kueue_crds
from tests.support.hub.inventory import Inventory
from tests.support.waiting import eventually


@pytest.fixture
async def hub(fleet: Fleet, test_namespace: str) -> AsyncIterator[kube.ApiClient]:
    crds = await asyncio.to_thread(kueue_crds)
    async with await fleet.hub.client() as client:
        await kube.ensure_crds(client, crds)
        yield client
        for resource in (MULTIKUEUE_CLUSTERS, MULTIKUEUE_CONFIGS):
            for item in (await kube.list_objects(client, resource))["items"]:
                if item["metadata"]["name"].startswith(test_namespace):
                    await kube.delete(client, resource, item["metadata"]["name"])


async def _profile(hub: kube.ApiClient, ns: str, name: str, team: str) -> None:
    await kube.apply(
        hub,
        kube.CLUSTER_PROFILES,
        {
            "metadata": {"name": name, "namespace": ns, "labels": {"team": team}},
            "spec": {"clusterManager": {"name": "test"}},
        },
        field_manager="test",
    )


@contextlib.asynccontextmanager
async def deleted_clusters(hub: kube.ApiClient, prefix: str) -> AsyncIterator[list[str]]:
    """Names of MultiKueueClusters starting with ``prefix`` deleted while the block runs."""
    seen: list[str] = []
    informer = Informer(hub, MULTIKUEUE_CLUSTERS, name="test MultiKueueClusters")
    informer.add_handler(
        lambda event, obj, _old: (
            seen.append(obj["metadata"]["name"])
            if event == DELETED and obj["metadata"]["name"].startswith(prefix)
            else None
        )
    )
    informer.start()
    try:
        await informer.wait_synced()
        yield seen
    finally:
        await informer.stop()


async def _config(hub: kube.ApiClient, name: str) -> list[str] | None:
    try:
        found = await kube.get(hub, MULTIKUEUE_CONFIGS, name)
    except kube.NotFoundError:
        return None
    return list(found["spec"]["clusters"])


async def test_two_multikueue_sync_processes_with_different_configs_keep_their_own(
    hub: kube.ApiClient, fleet: Fleet, test_namespace: str
) -> None:
    ns = test_namespace
    team = {"a": [f"{ns}-a{i}" for i in range(3)], "b": [f"{ns}-b{i}" for i in range(3)]}
    for t, names in team.items():
        for name in names:
            await _profile(hub, ns, name, t)
    procs = []
    async with deleted_clusters(hub, ns) as deleted:
        try:
            for t in team:
                procs.append(
                    await asyncio.create_subprocess_exec(
                        sys.executable,
                        "-m",
                        "cluster_inventory.cli",
                        "multikueue",
                        "sync",
                        "--kueue-namespace",
                        ns,
                        "-l",
                        f"team={t}",
                        "--config-name",
                        f"{ns}-{t}",
                        "--kubeconfig",
                        str(fleet.hub.kubeconfig_path),
                        "--health-probe-bind-address=0",
                        "--metrics-bind-address=0",
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                    )
                )
            for t, names in team.items():
                await eventually(
                    lambda t=t, names=names: _is(_config(hub, f"{ns}-{t}"), sorted(names)),
                    timeout=60,
                    what=f"MultiKueueConfig {ns}-{t} listing team {t}'s clusters",
                )
            # One more profile for team a: only a's config grows, nothing is deleted.
            await _profile(hub, ns, f"{ns}-a3", "a")
            await eventually(
                lambda: _is(_config(hub, f"{ns}-a"), sorted([*team["a"], f"{ns}-a3"])),
                timeout=30,
                what="team a's config with the new cluster",
            )
            assert await _config(hub, f"{ns}-b") == sorted(team["b"])
            listed = await kube.list_objects(hub, MULTIKUEUE_CLUSTERS)
            labels = {
                i["metadata"]["name"]: i["metadata"].get("labels") or {}
                for i in listed["items"]
                if i["metadata"]["name"].startswith(ns)
            }
            assert sorted(labels) == sorted([*team["a"], f"{ns}-a3", *team["b"]])
            for name, have in labels.items():
                assert have[LABEL_MANAGED_BY] == FIELD_MANAGER
                assert have[LABEL_SYNC_INSTANCE] == f"{ns}-{name[len(ns) + 1]}"
            # Each elects on its own Lease.
            for t in team:
                lease = await kube.get(
                    hub, kube.LEASES, f"cluster-inventory-multikueue-{ns}-{t}", ns
                )
                assert lease["spec"]["holderIdentity"]
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            outputs = [await asyncio.wait_for(p.communicate(), 30) for p in procs]
        assert deleted == []
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode()[-2000:]


async def test_an_instance_leaves_another_instances_object_alone_and_says_so(
    hub: kube.ApiClient, test_namespace: str
) -> None:
    ns = test_namespace
    await _profile(hub, ns, f"{ns}-shared", "a")
    first = MultiKueueSync(
        hub, kueue_namespace=ns, registry=CollectorRegistry(), identity="t", instance="first"
    )
    await first.start()
    try:

        async def made() -> dict[str, Any] | None:
            try:
                return await kube.get(hub, MULTIKUEUE_CLUSTERS, f"{ns}-shared")
            except kube.NotFoundError:
                return None

        before = await eventually(made, what="first's MultiKueueCluster")
        assert before["metadata"]["labels"][LABEL_SYNC_INSTANCE] == "first"
    finally:
        await first.stop()
    second = MultiKueueSync(
        hub, kueue_namespace=ns, registry=CollectorRegistry(), identity="t", instance="second"
    )
    await second.start()
    try:

        async def taken() -> list[dict[str, Any]]:
            listed = await kube.list_objects(hub, kube.EVENTS, ns)
            return [e for e in listed["items"] if e.get("reason") == "TargetNameTaken"]

        (event,) = await eventually(taken, what="TargetNameTaken naming the other instance")
        assert "instance 'first'" in event["note"], event["note"]
        after = await kube.get(hub, MULTIKUEUE_CLUSTERS, f"{ns}-shared")
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
        assert second.writes == 1  # the refused create, nothing else
    finally:
        await second.stop()


async def test_two_argocd_syncs_on_different_argo_namespaces_keep_their_own(
    inventory: Inventory,
) -> None:
    await inventory.publish("c1", inventory.member(0))
    argo = [await inventory.namespace_for("argo1"), await inventory.namespace_for("argo2")]
    providers = load_provider_file(inventory.provider_file)
    syncs = [
        ArgoCDSync(
            inventory.hub,
            providers,
            namespaces=[inventory.namespace],
            argocd_namespace=a,
            registry=CollectorRegistry(),
            identity="t",
            instance=f"i{n}",
        )
        for n, a in enumerate(argo)
    ]
    name = f"cluster-{inventory.namespace}-c1"
    async with deleted_secrets(inventory.hub, argo) as deleted:
        for sync in syncs:
            await sync.start()
        try:
            for n, a in enumerate(argo):
                secret = await eventually(
                    lambda a=a: _get(inventory.hub, kube.SECRETS, name, a), what=f"Secret in {a}"
                )
                assert secret["metadata"]["labels"][LABEL_SYNC_INSTANCE] == f"i{n}"
            # The first stops serving the profile (its inventory loses it): only its Secret goes.
            await syncs[0].stop()
            syncs[0] = ArgoCDSync(
                inventory.hub,
                providers,
                namespaces=[await inventory.namespace_for("empty")],
                argocd_namespace=argo[0],
                registry=CollectorRegistry(),
                identity="t",
                instance="i0",
            )
            await syncs[0].start()
            await eventually(
                lambda: _absent(inventory.hub, kube.SECRETS, name, argo[0]), what="i0's Secret gone"
            )
            assert await _get(inventory.hub, kube.SECRETS, name, argo[1])
        finally:
            for sync in syncs:
                await sync.stop()
        assert deleted == [f"{argo[0]}/{name}"]


@contextlib.asynccontextmanager
async def deleted_secrets(hub: kube.ApiClient, namespaces: list[str]) -> AsyncIterator[list[str]]:
    seen: list[str] = []
    informers = [
        Informer(hub, kube.SECRETS, namespace=ns, name="test Secrets") for ns in namespaces
    ]
    for informer in informers:
        informer.add_handler(
            lambda event, obj, _old: (
                seen.append(f"{obj['metadata']['namespace']}/{obj['metadata']['name']}")
                if event == DELETED
                else None
            )
        )
        informer.start()
    try:
        for informer in informers:
            await informer.wait_synced()
        yield seen
    finally:
        for informer in informers:
            await informer.stop()


async def _get(hub: kube.ApiClient, resource: kube.Resource, name: str, ns: str) -> Any:
    try:
        return await kube.get(hub, resource, name, ns)
    except kube.NotFoundError:
        return None


async def _absent(hub: kube.ApiClient, resource: kube.Resource, name: str, ns: str) -> bool:
    return await _get(hub, resource, name, ns) is None


async def _is(value: Any, expected: Any) -> bool:
    return (await value) == expected

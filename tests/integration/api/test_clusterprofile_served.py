"""ClusterProfile on a real hub: create, read, status subresource, server-side validation."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_inventory import kube
from cluster_inventory.testing import ControlPlane

MANAGER = "cluster-inventory-test"


def profile(name: str, namespace: str, manager: str = MANAGER) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"x-k8s.io/cluster-manager": manager},
        },
        "spec": {"displayName": name, "clusterManager": {"name": manager}},
    }


async def test_create_get_and_update_status(hub: ControlPlane, test_namespace: str) -> None:
    async with await hub.client() as client:
        await kube.apply(
            client, kube.CLUSTER_PROFILES, profile("c1", test_namespace), field_manager=MANAGER
        )
        status = {
            "metadata": {"name": "c1", "namespace": test_namespace},
            "status": {
                "version": {"kubernetes": "v1.36.3"},
                "conditions": [
                    {
                        "type": "ControlPlaneHealthy",
                        "status": "True",
                        "reason": "Healthy",
                        "message": "readyz ok",
                        "lastTransitionTime": "2026-11-23T05:00:00Z",
                    }
                ],
                "properties": [{"name": "clusterset.k8s.io", "value": "prod"}],
                "accessProviders": [
                    {
                        "name": "secretreader",
                        "cluster": {
                            "server": "https://127.0.0.1:6443",
                            "extensions": [
                                {
                                    "name": "client.authentication.k8s.io/exec",
                                    "extension": {"clusterName": "c1"},
                                }
                            ],
                        },
                    }
                ],
            },
        }
        await kube.apply(
            client, kube.CLUSTER_PROFILES, status, field_manager=MANAGER, subresource="status"
        )
        stored = await kube.get(client, kube.CLUSTER_PROFILES, "c1", test_namespace)
    assert stored["spec"]["clusterManager"]["name"] == MANAGER
    assert stored["status"]["version"]["kubernetes"] == "v1.36.3"
    assert stored["status"]["conditions"][0]["status"] == "True"
    provider = stored["status"]["accessProviders"][0]
    assert provider["cluster"]["extensions"][0]["extension"] == {"clusterName": "c1"}


async def test_status_written_through_the_main_resource_is_ignored(
    hub: ControlPlane, test_namespace: str
) -> None:
    body = profile("c2", test_namespace)
    body["status"] = {"version": {"kubernetes": "v9.9.9"}}
    async with await hub.client() as client:
        stored = await kube.create(client, kube.CLUSTER_PROFILES, body)
    assert "status" not in stored or "version" not in stored["status"]


async def test_profile_without_cluster_manager_is_refused(
    hub: ControlPlane, test_namespace: str
) -> None:
    body = profile("no-manager", test_namespace)
    del body["spec"]["clusterManager"]
    async with await hub.client() as client:
        with pytest.raises(kube.InvalidError) as info:
            await kube.create(client, kube.CLUSTER_PROFILES, body)
    assert "spec.clusterManager" in info.value.message
    assert "no-manager" in str(info.value)
    assert any(c.field == "spec.clusterManager" for c in info.value.causes)


async def test_cluster_manager_is_immutable(hub: ControlPlane, test_namespace: str) -> None:
    async with await hub.client() as client:
        await kube.create(client, kube.CLUSTER_PROFILES, profile("pinned", test_namespace))
        with pytest.raises(kube.InvalidError) as info:
            await kube.apply(
                client,
                kube.CLUSTER_PROFILES,
                profile("pinned", test_namespace, manager="someone-else"),
                field_manager=MANAGER,
            )
        stored = await kube.get(client, kube.CLUSTER_PROFILES, "pinned", test_namespace)
    assert "ClusterManager is immutable" in info.value.message
    assert "spec.clusterManager" in info.value.message
    assert stored["spec"]["clusterManager"]["name"] == MANAGER


async def test_condition_status_outside_the_enum_is_refused(
    hub: ControlPlane, test_namespace: str
) -> None:
    async with await hub.client() as client:
        await kube.create(client, kube.CLUSTER_PROFILES, profile("bad-cond", test_namespace))
        with pytest.raises(kube.InvalidError) as info:
            await kube.apply(
                client,
                kube.CLUSTER_PROFILES,
                {
                    "metadata": {"name": "bad-cond", "namespace": test_namespace},
                    "status": {
                        "conditions": [
                            {
                                "type": "Joined",
                                "status": "Maybe",
                                "reason": "Guess",
                                "message": "",
                                "lastTransitionTime": "2026-11-23T05:00:00Z",
                            }
                        ]
                    },
                },
                field_manager=MANAGER,
                subresource="status",
            )
    assert "status.conditions[0].status" in info.value.message
    assert '"Maybe"' in info.value.message

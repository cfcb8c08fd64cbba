"""ClusterProfiles and Placements on the hub, written as a placement test needs them.

``profile`` writes a profile as a cluster manager would (spec, then status with a
``ControlPlaneHealthy`` condition, a version and properties); ``placement`` applies a
Placement as a user would; ``slices`` lists the PlacementDecisions a scheduler wrote;
``bounded`` awaits many such writes, a few at a time.
"""

from __future__ import annotations

import asyncio
from typing import Any

from cluster_inventory import kube
from cluster_inventory.integrations.placement import PLACEMENTS


def healthy(ok: bool) -> dict[str, str]:
    return {
        "type": "ControlPlaneHealthy",
        "status": "True" if ok else "False",
        "reason": "Healthy" if ok else "ReadyzCheckFailed",
        "message": "test",
        "lastTransitionTime": "2026-11-23T00:00:00Z",
    }


async def profile(
    hub: kube.ApiClient,
    namespace: str,
    name: str,
    *,
    labels: dict[str, str] | None = None,
    properties: dict[str, str] | None = None,
    ok: bool = True,
) -> None:
    body = {
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"clusterManager": {"name": "test"}},
    }
    await kube.apply(hub, kube.CLUSTER_PROFILES, body, field_manager="test")
    await set_status(hub, namespace, name, ok=ok, properties=properties)


async def set_status(
    hub: kube.ApiClient,
    namespace: str,
    name: str,
    *,
    ok: bool = True,
    properties: dict[str, str] | None = None,
    version: str = "v1.36.3",
) -> None:
    status: dict[str, Any] = {"conditions": [healthy(ok)], "version": {"kubernetes": version}}
    if properties is not None:
        status["properties"] = [{"name": k, "value": v} for k, v in properties.items()]
    await kube.request(
        hub,
        "PATCH",
        kube.CLUSTER_PROFILES.path(namespace, name) + "/status",
        body={"status": status},
        content_type="application/merge-patch+json",
    )


async def bounded(calls: list[Any], limit: int = 16) -> None:
    gate = asyncio.Semaphore(limit)

    async def one(call: Any) -> None:
        async with gate:
            await call

    await asyncio.gather(*(one(c) for c in calls))


async def placement(hub: kube.ApiClient, namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    return await kube.apply(
        hub,
        PLACEMENTS,
        {"metadata": {"name": name, "namespace": namespace}, "spec": spec},
        field_manager="test",
    )


async def slices(hub: kube.ApiClient, namespace: str) -> list[dict[str, Any]]:
    listed = await kube.list_objects(hub, kube.PLACEMENT_DECISIONS, namespace)
    return sorted(listed["items"], key=lambda s: s["metadata"]["name"])

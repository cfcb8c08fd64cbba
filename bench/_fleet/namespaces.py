"""A run's namespaces on the hub, the two floors measured there, and their removal.

The floors are what the cluster manager's cold start is held against: the hub's (N profiles
created and their status written directly) and the members' (the requests a push-mode
manager cannot do without, made by a plain client).
"""

from __future__ import annotations

import base64
import time

from _common import bounded, require

from cluster_inventory import kube
from cluster_inventory.api.constants import LABEL_CLUSTER_SET
from cluster_inventory_workshop.virtual_members import LABEL_VIRTUAL_MEMBER, VirtualMembers

#: The property every virtual member has (``VirtualMembers.set_shared_property``), and the
#: floor's profiles show.
SHARED_PROPERTY = "region.example.com"
#: A full status, as the floor writes it on each of its profiles.
SAMPLE_STATUS = {
    "version": {"kubernetes": "v1.36.3"},
    "conditions": [
        {
            "type": "ControlPlaneHealthy",
            "status": "True",
            "reason": "APIServerReady",
            "message": "ok",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ],
    "properties": [{"name": SHARED_PROPERTY, "value": "eu"}],
    "accessProviders": [
        {
            "name": "secretreader",
            "cluster": {
                "server": "https://127.0.0.1:1/members/0",
                "certificate-authority-data": base64.b64encode(b"x").decode(),
            },
        }
    ],
}


async def namespaces_and_floor(
    hub: kube.ApiClient, system: str, floor_ns: str, inventory: str, run: str, n: int
) -> float:
    """Make a run's namespaces (the manager's, the floor's, one inventory), then the floor, s.

    The inventory namespace is labelled with cluster set ``run``; the floor is measured after
    one warm-up profile (CRD validators are built on first use).
    """
    await bounded(
        [
            kube.apply(hub, kube.NAMESPACES, {"metadata": {"name": ns}}, field_manager="bench")
            for ns in (system, floor_ns, f"{floor_ns}-warm")
        ]
        + [
            kube.apply(
                hub,
                kube.NAMESPACES,
                {"metadata": {"name": inventory, "labels": {LABEL_CLUSTER_SET: run}}},
                field_manager="bench",
            )
        ]
    )
    await floor(hub, f"{floor_ns}-warm", 1)
    return await floor(hub, floor_ns, n)


async def floor(hub: kube.ApiClient, ns: str, n: int) -> float:
    """Seconds to create ``n`` profiles in ``ns`` and apply :data:`SAMPLE_STATUS` on each, 16
    in flight."""
    started = time.perf_counter()

    async def one(i: int) -> None:
        body = {
            "metadata": {"name": f"f{i}", "namespace": ns},
            "spec": {"clusterManager": {"name": "floor"}},
        }
        await kube.create(hub, kube.CLUSTER_PROFILES, body)
        await kube.apply(
            hub,
            kube.CLUSTER_PROFILES,
            {**body, "status": SAMPLE_STATUS},
            field_manager="floor",
            subresource="status",
        )

    await bounded([one(i) for i in range(n)])
    return time.perf_counter() - started


async def member_floor(vm: VirtualMembers, n: int, limit: int = 64) -> float:
    """Seconds for a plain client to make, for each of ``n`` members, the requests a push-mode
    manager cannot do without: a new client, a probe (GET ``/readyz``), a LIST of
    ClusterProperty and a WATCH of them from that list's resourceVersion, opened (its 200
    answered) and closed; ``limit`` members in flight."""
    started = time.perf_counter()
    path = kube.CLUSTER_PROPERTIES.path()

    async def one(i: int) -> None:
        async with await vm.client(i) as member:
            status, _ = await kube.get_text(member, "/readyz")
            require(status == 200, f"member {i} /readyz answered {status}")
            listed = await kube.list_objects(member, kube.CLUSTER_PROPERTIES)
            query = {
                "watch": "true",
                "resourceVersion": listed["metadata"]["resourceVersion"],
                "timeoutSeconds": 60,
            }
            response = await member.call_api(
                path,
                "GET",
                query_params=list(query.items()),
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=30,
            )
            async with response:
                require(response.status == 200, f"member {i} watch answered {response.status}")

    await bounded([one(i) for i in range(n)], limit)
    return time.perf_counter() - started


async def delete_collection(
    client: kube.ApiClient, resource: kube.Resource, ns: str | None, selector: str = ""
) -> None:
    """One DELETECOLLECTION (the hub runs no namespace controller to empty a namespace)."""
    await kube.request(
        client,
        "DELETE",
        resource.path(ns),
        query={"labelSelector": selector} if selector else None,
        target=resource.describe(ns, None),
        timeout=300,  # 10,000 objects are deleted one by one behind one request
    )


async def cleanup(
    vm: VirtualMembers, hub: kube.ApiClient, run: str, system: str, inventory: str
) -> None:
    """Remove the run's hub objects and the per-member properties it wrote."""
    await delete_collection(hub, kube.CLUSTER_PROFILES, inventory)
    await delete_collection(hub, kube.SECRETS, inventory)
    await delete_collection(hub, kube.SECRETS, system)
    for cp in vm.clusters:
        async with await cp.client() as admin:
            await delete_collection(
                admin, kube.CLUSTER_PROPERTIES, None, f"{LABEL_VIRTUAL_MEMBER}!=all"
            )

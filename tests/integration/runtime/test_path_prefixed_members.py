"""A consumer and the runtime reach a member whose server is a path-prefixed URL.

Rancher and OCM's cluster-proxy publish members as ``https://host/<prefix>``; the virtual
members of ``cluster_inventory.testing`` are such servers, with a real apiserver behind.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.credentials import (
    CredentialCache,
    CredentialMetrics,
    connect,
    httpx_client,
    load_provider_file,
    resolve_access,
)
from cluster_inventory.runtime import EngagedCluster, Request
from cluster_inventory_workshop import VirtualMembers
from tests.support.hub.inventory import Inventory
from tests.support.waiting import eventually


@dataclass
class VirtualMember:
    """What ``Inventory.publish`` reads of a member: name, server, CA and an admin client."""

    vm: VirtualMembers
    n: int

    @property
    def name(self) -> str:
        return self.vm.name(self.n)

    @property
    def server(self) -> str:
        return self.vm.server(self.n)

    @property
    def ca_pem(self) -> bytes:
        return self.vm.ca_pem

    async def client(self) -> kube.ApiClient:
        return await self.vm.client(self.n)


async def test_consumer_credentials_resolve_and_reach_a_prefixed_member(
    inventory: Inventory, virtual_members: VirtualMembers
) -> None:
    member = VirtualMember(virtual_members, 4)
    async with await member.client() as admin:
        await kube.create(
            admin,
            kube.CONFIG_MAPS,
            {"metadata": {"name": "hello", "namespace": inventory.namespace}},
        )
    profile = await inventory.publish("vm4", member)  # type: ignore[arg-type]
    access = resolve_access(profile, load_provider_file(inventory.provider_file))
    assert access.server == virtual_members.server(4)
    cache = CredentialCache(metrics=CredentialMetrics.create(CollectorRegistry()))
    async with await connect(profile, inventory.provider_file, cache=cache) as client:
        listed = await kube.list_objects(client, kube.CONFIG_MAPS, namespace=inventory.namespace)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["hello"]
    async with httpx_client(profile, inventory.provider_file, cache=cache) as http:
        answer = await http.get(f"/api/v1/namespaces/{inventory.namespace}/configmaps/hello")
    assert answer.status_code == 200, answer.text
    assert answer.json()["metadata"]["name"] == "hello"


async def test_runtime_engages_a_prefixed_member_and_watches_through_it(
    inventory: Inventory, fleet_manager, virtual_members: VirtualMembers
) -> None:
    member = VirtualMember(virtual_members, 5)
    fm = fleet_manager()
    seen: list[Request] = []

    @fm.reconciler("v1/ConfigMap", namespace=inventory.namespace)
    async def reconcile(request: Request, cluster: EngagedCluster) -> None:
        seen.append(request)

    await fm.start()
    await inventory.publish("vm5", member)  # type: ignore[arg-type]
    key = f"{inventory.namespace}/vm5"
    await eventually(lambda: key in fm.clusters, what="engaged")
    assert fm.cluster(key).access.server == virtual_members.server(5)
    async with await member.client() as admin:
        await kube.create(
            admin,
            kube.CONFIG_MAPS,
            {"metadata": {"name": "after-engage", "namespace": inventory.namespace}},
        )
    await eventually(
        lambda: Request(key, inventory.namespace, "after-engage") in seen,
        what="the watch through the prefix to deliver the ConfigMap",
    )

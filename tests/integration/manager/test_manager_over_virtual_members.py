"""The manager over virtual members: path-prefixed servers, one real apiserver, two members."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import yaml

from cluster_inventory import kube
from cluster_inventory.api.constants import LABEL_INVENTORY_MEMBER_ID
from cluster_inventory_workshop import VirtualMembers
from tests.support.hub.manager import Harness
from tests.support.waiting import eventually


@pytest.fixture
async def member_properties(virtual_members: VirtualMembers) -> AsyncIterator[list[str]]:
    written: list[str] = []
    yield written
    for cp in virtual_members.clusters:
        async with await cp.client() as admin:
            for name in written:
                await kube.delete(admin, kube.CLUSTER_PROPERTIES, name)


async def test_two_virtual_members_over_one_real_member_get_two_full_profiles(
    harness: Harness, virtual_members: VirtualMembers, member_properties: list[str]
) -> None:
    h, vm = harness, virtual_members
    first, second = 0, len(h.fleet.members)  # both answered by real member 0
    assert vm.real(first) is vm.real(second)
    ns = await h.inventory("prod", "prod")
    seen = {}
    for n in (first, second):
        seen[n] = await vm.set_property(n, f"zone.{h.namespace}", f"zone-{n}")
        member_properties.append(seen[n])
        await h.register(
            vm.name(n), vm.real(n), ["prod"], kubeconfig=yaml.safe_dump(vm.kubeconfig(n))
        )

    async def full(name: str, n: int) -> dict | None:
        profile = await h.profile(ns, name)
        status = profile.get("status") or {}
        conditions = {c["type"]: c["status"] for c in status.get("conditions") or ()}
        properties = {p["name"]: p["value"] for p in status.get("properties") or ()}
        if (
            conditions.get("Joined") == "True"
            and conditions.get("ControlPlaneHealthy") == "True"
            and properties.get(seen[n]) == f"zone-{n}"
            and status.get("accessProviders")
            and profile["metadata"]["labels"].get(LABEL_INVENTORY_MEMBER_ID) == vm.member_id(n)
        ):
            return profile
        return None

    profiles = {n: await eventually(lambda n=n: full(vm.name(n), n), what=f"vm {n}") for n in seen}
    for n, profile in profiles.items():
        status = profile["status"]
        assert status["version"]["kubernetes"].startswith("v1.")
        # Each sees its own property, not the other's, over the same real member.
        names = {p["name"] for p in status["properties"]}
        assert seen[n] in names and not (set(seen.values()) - {seen[n]}) & names
        (provider,) = status["accessProviders"]
        assert provider["cluster"]["server"] == vm.server(n)
    ids = {p["metadata"]["labels"][LABEL_INVENTORY_MEMBER_ID] for p in profiles.values()}
    assert ids == {vm.member_id(first), vm.member_id(second)}

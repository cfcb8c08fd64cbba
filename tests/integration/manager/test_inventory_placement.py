"""Registrations become ClusterProfiles in the inventory namespaces of their cluster sets."""

from __future__ import annotations

import base64

from cluster_inventory import kube
from cluster_inventory.api.constants import (
    EXTENSION_EXEC,
    LABEL_CLUSTER_MANAGER,
    LABEL_INVENTORY_MEMBER_ID,
)
from cluster_inventory.kube.informer import Informer
from tests.support.hub.manager import Harness
from tests.support.waiting import eventually


async def _healthy(h: Harness, ns: str, name: str) -> bool:
    cond = await h.condition(ns, name, "ControlPlaneHealthy")
    return cond is not None and cond["status"] == "True"


async def test_inventory_namespace_gets_one_profile_per_member_of_its_set(harness: Harness) -> None:
    h = harness
    await h.register("alpha", h.member(0), ["prod"])
    await h.register("beta", h.member(1), ["prod"])
    await h.register("gamma", h.member(1), ["staging"])
    ns = await h.inventory("prod", "prod")

    await eventually(lambda: h.profile_names(ns), what="profiles")
    await eventually(lambda: _names_are(h, ns, {"alpha", "beta"}), what="alpha and beta")
    await eventually(lambda: _healthy(h, ns, "alpha"), what="alpha healthy")
    profile = await h.profile(ns, "alpha")

    async with await h.member(0).client() as member:
        kube_system = await kube.get(member, kube.NAMESPACES, "kube-system")
    labels = profile["metadata"]["labels"]
    assert labels[LABEL_CLUSTER_MANAGER] == h.manager.config.name
    assert profile["spec"]["clusterManager"]["name"] == h.manager.config.name
    assert profile["spec"]["displayName"] == "alpha"
    await eventually(
        lambda: _label_is(h, ns, "alpha", kube_system["metadata"]["uid"]), what="member id"
    )
    status = (await h.profile(ns, "alpha"))["status"]
    assert status["version"]["kubernetes"].startswith("v1.")
    joined = next(c for c in status["conditions"] if c["type"] == "Joined")
    assert joined["status"] == "True"
    (provider,) = status["accessProviders"]
    assert provider["name"] == "secretreader"
    assert provider["cluster"]["server"] == h.member(0).server
    assert base64.b64decode(provider["cluster"]["certificate-authority-data"]) == h.member(0).ca_pem
    assert provider["cluster"]["extensions"] == [
        {"name": EXTENSION_EXEC, "extension": {"clusterName": "alpha"}}
    ]
    assert "token" not in str(profile).lower().replace("tokenrequest", "")


async def _names_are(h: Harness, ns: str, names: set[str]) -> bool:
    return await h.profile_names(ns) == names


async def _label_is(h: Harness, ns: str, name: str, value: str) -> bool:
    labels = (await h.profile(ns, name))["metadata"]["labels"]
    return labels.get(LABEL_INVENTORY_MEMBER_ID) == value


async def test_two_namespaces_bound_to_one_set(harness: Harness) -> None:
    h = harness
    await h.register("alpha", h.member(0), ["prod"])
    first = await h.inventory("team-a", "prod")
    second = await h.inventory("team-b", "prod")
    await eventually(lambda: _names_are(h, first, {"alpha"}), what="team-a profile")
    await eventually(lambda: _names_are(h, second, {"alpha"}), what="team-b profile")
    async with await h.member(0).client() as member:
        uid = (await kube.get(member, kube.NAMESPACES, "kube-system"))["metadata"]["uid"]
    await eventually(lambda: _label_is(h, first, "alpha", uid), what="member id in team-a")
    await eventually(lambda: _label_is(h, second, "alpha", uid), what="member id in team-b")


async def test_member_moved_to_another_set(harness: Harness) -> None:
    h = harness
    prod = await h.inventory("prod", "prod")
    staging = await h.inventory("staging", "staging")
    await h.register("alpha", h.member(0), ["prod"])
    await eventually(lambda: _names_are(h, prod, {"alpha"}), what="in prod")
    await h.register("alpha", h.member(0), ["staging"])
    await eventually(lambda: _names_are(h, staging, {"alpha"}), what="in staging")
    await eventually(lambda: _names_are(h, prod, set()), what="gone from prod")


async def test_deregistration_removes_profiles_and_token_secrets(harness: Harness) -> None:
    h = harness
    ns = await h.inventory("prod", "prod")
    await h.register("alpha", h.member(0), ["prod"])
    await eventually(lambda: _secret_exists(h, ns, "alpha"), what="token Secret")
    await h.deregister("alpha")
    await eventually(lambda: _names_are(h, ns, set()), what="profile deleted")
    await eventually(lambda: _not(_secret_exists(h, ns, "alpha")), what="token Secret deleted")


async def _secret_exists(h: Harness, ns: str, name: str) -> bool:
    try:
        await kube.get(h.hub_client, kube.SECRETS, name, namespace=ns)
    except kube.NotFoundError:
        return False
    return True


async def _not(awaitable) -> bool:
    return not await awaitable


async def test_foreign_managers_profile_is_never_touched(harness: Harness) -> None:
    h = harness
    ns = await h.inventory("prod", "prod")
    foreign = {
        "metadata": {
            "name": "alpha",
            "namespace": ns,
            "labels": {LABEL_CLUSTER_MANAGER: "someone-else"},
        },
        "spec": {"clusterManager": {"name": "someone-else"}, "displayName": "theirs"},
    }
    other = {**foreign, "metadata": {**foreign["metadata"], "name": "zeta"}}
    await kube.create(h.hub_client, kube.CLUSTER_PROFILES, foreign)
    await kube.create(h.hub_client, kube.CLUSTER_PROFILES, other)
    before = await h.profile(ns, "alpha")
    await h.register("alpha", h.member(0), ["prod"])
    await h.register("beta", h.member(1), ["prod"])
    await eventually(lambda: _names_are(h, ns, {"alpha", "beta", "zeta"}), what="beta created")
    await eventually(lambda: _healthy(h, ns, "beta"), what="beta healthy")
    after = await h.profile(ns, "alpha")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert "status" not in after
    await h.deregister("beta")
    await eventually(lambda: _names_are(h, ns, {"alpha", "zeta"}), what="beta deleted only")


async def test_fixed_inventory_namespace_from_config(fleet, test_namespace) -> None:
    import asyncio
    import contextlib

    import yaml
    from prometheus_client import CollectorRegistry

    from cluster_inventory.manager import ClusterManagerRunnable, ManagerConfig, registration_secret

    async with await fleet.hub.client() as hub:
        config = ManagerConfig(
            name="fixed-" + test_namespace[-8:],
            namespace=test_namespace,
            member_namespace=test_namespace,
            inventory_namespaces={test_namespace: ("edge",)},
            probe_interval=0.5,
        )
        member = next(iter(fleet.members.values()))
        secret = registration_secret(
            "edge1", test_namespace, yaml.safe_dump(member.kubeconfig()), ["edge"]
        )
        await kube.apply(hub, kube.SECRETS, secret, field_manager="test")
        manager = ClusterManagerRunnable(hub, config, registry=CollectorRegistry())
        task = asyncio.get_running_loop().create_task(manager.run())
        try:

            async def present() -> bool:
                listed = await kube.list_objects(
                    hub, kube.CLUSTER_PROFILES, namespace=test_namespace
                )
                return [i["metadata"]["name"] for i in listed["items"]] == ["edge1"]

            await eventually(present, what="profile in the fixed inventory")
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_registrations_of_one_member_never_get_two_profiles(harness: Harness) -> None:
    """KEP-4322: one profile per member in an inventory, from the first placement on (no
    profile is created for a duplicate and deleted again once the member id is known)."""
    h = harness
    ns = f"{h.namespace}-prod"
    seen: set[str] = set()
    async with Informer(h.hub_client, kube.CLUSTER_PROFILES, namespace=ns) as profiles:
        profiles.add_handler(lambda kind, obj, old: seen.add(obj["metadata"]["name"]))
        await profiles.wait_synced()
        await h.register("one", h.member(0), ["prod"])
        await h.register("two", h.member(0), ["prod"])
        await eventually(lambda: "two" in h.manager.source.snapshot()[0], what="both read")
        await h.inventory("prod", "prod")
        await eventually(lambda: _healthy(h, ns, "one"), what="one healthy")
        assert seen == {"one"}

"""The Argo CD sync on the real hub fleet: Secrets made, kept, swept, never someone else's."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api.constants import LABEL_INVENTORY_MEMBER_ID, LABEL_SYNC_INSTANCE
from cluster_inventory.credentials import (
    ClusterAccess,
    CredentialCache,
    ExecConfig,
    ExecEnvVar,
    connect_access,
    load_provider_file,
)
from cluster_inventory.integrations.sync._ownership import ANNOTATION_FINGERPRINT, LABEL_MANAGED_BY
from cluster_inventory.integrations.sync.argocd import FIELD_MANAGER, ArgoCDSync
from tests.support.data.provider_files import PLUGIN
from tests.support.hub.inventory import Inventory
from tests.support.waiting import eventually


def decoded(secret: dict[str, Any]) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}


async def secrets(hub: kube.ApiClient, namespace: str) -> dict[str, dict[str, Any]]:
    listed = await kube.list_objects(hub, kube.SECRETS, namespace)
    return {s["metadata"]["name"]: s for s in listed["items"]}


async def events(hub: kube.ApiClient, namespace: str, reason: str) -> list[dict[str, Any]]:
    listed = await kube.list_objects(hub, kube.EVENTS, namespace)
    return [e for e in listed["items"] if e.get("reason") == reason]


@pytest.fixture
async def argo_sync(inventory: Inventory) -> AsyncIterator[Callable[..., ArgoCDSync]]:
    made: list[ArgoCDSync] = []

    def make(namespaces: list[str], argocd_namespace: str) -> ArgoCDSync:
        sync = ArgoCDSync(
            inventory.hub,
            load_provider_file(inventory.provider_file),
            namespaces=namespaces,
            argocd_namespace=argocd_namespace,
            registry=CollectorRegistry(),
            identity="test",
        )
        made.append(sync)
        return sync

    try:
        yield make
    finally:
        for sync in made:
            await sync.stop()


async def test_secrets_carry_the_exact_data_are_written_once_and_follow_their_profiles(
    inventory: Inventory, argo_sync: Callable[..., ArgoCDSync]
) -> None:
    ns, hub = inventory.namespace, inventory.hub
    argo = await inventory.namespace_for("argocd")
    member0, member1 = inventory.member(0), inventory.member(1)
    await inventory.publish("c1", member0, member_id="m-1")
    await kube.apply(
        hub,
        kube.CLUSTER_PROFILES,
        {"metadata": {"name": "c1", "namespace": ns, "labels": {"env": "prod"}}},
        field_manager="labeller",
    )
    await inventory.publish("c2", member1, member_id="m-2")
    # Secrets that are not ours: an unrelated Argo CD cluster Secret, and one holding the name
    # the sync would give c3's Secret.
    foreign = {
        "metadata": {
            "name": "cluster-by-hand",
            "namespace": argo,
            "labels": {"argocd.argoproj.io/secret-type": "cluster"},
        },
        "stringData": {"name": "by-hand", "server": "https://example.invalid"},
    }
    squatter = {
        "metadata": {"name": f"cluster-{ns}-c3", "namespace": argo},
        "stringData": {"note": "made by hand"},
    }
    kept = {
        s["metadata"]["name"]: s["metadata"]["resourceVersion"]
        for s in [
            await kube.create(hub, kube.SECRETS, foreign),
            await kube.create(hub, kube.SECRETS, squatter),
        ]
    }
    await inventory.publish("c3", member1, member_id="m-3")

    sync = argo_sync([ns], argo)
    await sync.start()

    async def both() -> dict[str, dict[str, Any]] | None:
        found = await secrets(hub, argo)
        return found if {f"cluster-{ns}-c1", f"cluster-{ns}-c2"} <= found.keys() else None

    found = await eventually(both, timeout=30, what="Secrets for c1 and c2")
    c1 = found[f"cluster-{ns}-c1"]
    assert c1["metadata"]["labels"] == {
        "env": "prod",
        LABEL_INVENTORY_MEMBER_ID: "m-1",
        "argocd.argoproj.io/secret-type": "cluster",
        "cluster-inventory.dev/profile-namespace": ns,
        LABEL_MANAGED_BY: FIELD_MANAGER,
        LABEL_SYNC_INSTANCE: "default",
    }
    annotations = c1["metadata"]["annotations"]
    assert annotations["cluster-inventory.dev/cluster-profile"] == f"{ns}/c1"
    assert annotations["cluster-inventory.dev/access-provider"] == "secretreader"
    assert len(annotations[ANNOTATION_FINGERPRINT]) == 32
    data = decoded(c1)
    assert data["name"] == "c1" and data["server"] == member0.server
    config = json.loads(data["config"])
    assert config == {
        "execProviderConfig": {
            "command": str(PLUGIN),
            "args": ["--namespace", ns],
            "env": {"KUBECONFIG": str(inventory.fleet.hub.kubeconfig_path)},
            "apiVersion": "client.authentication.k8s.io/v1",
            "provideClusterInfo": True,
            "config": {"clusterName": "c1"},
        },
        "tlsClientConfig": {
            "insecure": False,
            "caData": base64.b64encode(member0.ca_pem).decode(),
        },
    }

    # Argo CD's view of the Secret reaches the member through the plugin, with no token in it.
    provider = config["execProviderConfig"]
    access = ClusterAccess(
        profile="argocd",
        provider="secretreader",
        server=data["server"],
        ca_data=base64.b64decode(config["tlsClientConfig"]["caData"]),
        cluster_config=provider["config"],
        exec_config=ExecConfig(
            command=provider["command"],
            args=tuple(provider["args"]),
            env=tuple(ExecEnvVar(name=k, value=v) for k, v in provider["env"].items()),
            api_version=provider["apiVersion"],
            provide_cluster_info=provider["provideClusterInfo"],
        ),
    )
    async with await connect_access(access, cache=CredentialCache()) as member_client:
        listed = await kube.list_objects(member_client, kube.CONFIG_MAPS, ns)
    assert isinstance(listed["items"], list)
    assert await inventory.token(member0) not in json.dumps(c1)

    # c3's name is taken by a Secret that is not ours: reported on c3, left alone.
    taken = await eventually(
        lambda: events(hub, ns, "TargetNameTaken"), what="TargetNameTaken Event"
    )
    assert taken[0]["regarding"]["name"] == "c3"
    assert f"cluster-{ns}-c3" in taken[0]["note"]

    # Nothing changed: a status heartbeat re-renders and writes nothing.
    writes, reconciles = sync.writes, sync.reconciles
    versions = {n: s["metadata"]["resourceVersion"] for n, s in (await secrets(hub, argo)).items()}
    await inventory.patch_status("c1", {"version": {"kubernetes": "v1.36.4"}})
    await eventually(lambda: sync.reconciles > reconciles, what="a reconcile after the heartbeat")
    assert sync.writes == writes
    now = {n: s["metadata"]["resourceVersion"] for n, s in (await secrets(hub, argo)).items()}
    assert now == versions

    # An edit by hand is put back.
    await kube.request(
        hub,
        "PATCH",
        kube.SECRETS.path(argo, f"cluster-{ns}-c2"),
        body={"data": {"server": base64.b64encode(b"https://tampered").decode()}},
        content_type="application/merge-patch+json",
    )

    async def restored() -> bool:
        s = await kube.get(hub, kube.SECRETS, f"cluster-{ns}-c2", argo)
        return decoded(s)["server"] == member1.server

    await eventually(restored, what="the edited Secret restored")

    # A profile that cannot be rendered keeps its last good Secret and gets a Warning Event.
    good = await kube.get(hub, kube.SECRETS, f"cluster-{ns}-c1", argo)
    await inventory.patch_status(
        "c1",
        {
            "accessProviders": [
                {
                    "name": "secretreader",
                    "cluster": {
                        "server": member0.server,
                        "certificate-authority-data": base64.b64encode(b"not a cert").decode(),
                    },
                }
            ]
        },
    )
    failed = await eventually(lambda: events(hub, ns, "RenderFailed"), what="RenderFailed Event")
    assert failed[0]["type"] == "Warning" and failed[0]["regarding"]["name"] == "c1"
    assert "certificate-authority-data" in failed[0]["note"]
    after = await kube.get(hub, kube.SECRETS, f"cluster-{ns}-c1", argo)
    assert after["metadata"]["resourceVersion"] == good["metadata"]["resourceVersion"]
    # ... and is counted for the "sync cannot render" alert until it renders again.
    failing = {"controller": "argocd-sync"}
    assert sync.registry.get_sample_value("cluster_inventory_sync_render_failing", failing) == 1

    # The profile goes: its Secret is swept; Secrets that are not ours stay untouched.
    await inventory.delete("c2")

    async def swept() -> bool:
        return f"cluster-{ns}-c2" not in await secrets(hub, argo)

    await eventually(swept, what="c2's Secret swept")
    final = await secrets(hub, argo)
    assert {n: final[n]["metadata"]["resourceVersion"] for n in kept} == kept
    assert decoded(final[f"cluster-{ns}-c3"]) == {"note": "made by hand"}
    assert f"cluster-{ns}-c1" in final


async def test_one_member_in_two_inventories_yields_one_secret_and_name_clashes_get_the_namespace(
    inventory: Inventory, argo_sync: Callable[..., ArgoCDSync]
) -> None:
    ns, hub = inventory.namespace, inventory.hub
    other = await inventory.namespace_for("b")
    argo = await inventory.namespace_for("argocd")
    member0, member1 = inventory.member(0), inventory.member(1)
    await inventory.publish("shared", member0, member_id="m-shared")
    await inventory.publish("shared", member0, member_id="m-shared", namespace=other)
    await inventory.publish("web", member1, member_id="m-web-a")
    await inventory.publish("web", member1, member_id="m-web-b", namespace=other)
    sync = argo_sync([ns, other], argo)
    await sync.start()

    expected = {
        f"cluster-{ns}-shared": "shared",
        f"cluster-{ns}-web": f"{ns}-web",
        f"cluster-{other}-web": f"{other}-web",
    }

    async def names() -> dict[str, str] | None:
        found = {n: decoded(s)["name"] for n, s in (await secrets(hub, argo)).items()}
        return found if found == expected else None

    await eventually(names, timeout=30, what=f"exactly {sorted(expected)}")

    # The first inventory's profile goes: the second inventory's copy of the member takes over.
    await inventory.delete("shared")

    async def moved() -> bool:
        found = await secrets(hub, argo)
        return f"cluster-{ns}-shared" not in found and f"cluster-{other}-shared" in found

    await eventually(moved, what="the shared member's Secret moved to the second inventory")

"""The Argo CD sync and a profile's access: a member that has not joined yet, a proxy-url.

A profile is created before its cluster manager reaches the member, so for a while it has no
``status.accessProviders``: that is pending, told by a Normal Event, never a Warning. An
access provider with ``proxy-url`` gives the Secret's ``config`` a ``proxyUrl`` (Argo CD's
``ClusterConfig.ProxyUrl``), so Argo CD dials the member through the same proxy.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api.constants import EXTENSION_EXEC
from cluster_inventory.credentials import load_provider_file
from cluster_inventory.integrations.sync.argocd import ArgoCDSync
from tests.support.hub.inventory import Inventory
from tests.support.waiting import eventually


async def events(hub: kube.ApiClient, namespace: str) -> list[dict[str, Any]]:
    listed = await kube.list_objects(hub, kube.EVENTS, namespace)
    return listed["items"]


async def secret_config(hub: kube.ApiClient, name: str, namespace: str) -> dict[str, Any] | None:
    try:
        secret = await kube.get(hub, kube.SECRETS, name, namespace)
    except kube.NotFoundError:
        return None
    config: dict[str, Any] = json.loads(base64.b64decode(secret["data"]["config"]))
    return config


@pytest.fixture
async def sync(inventory: Inventory) -> AsyncIterator[ArgoCDSync]:
    argo = await inventory.namespace_for("argocd")
    made = ArgoCDSync(
        inventory.hub,
        load_provider_file(inventory.provider_file),
        namespaces=[inventory.namespace],
        argocd_namespace=argo,
        registry=CollectorRegistry(),
        identity="test",
    )
    await made.start()
    try:
        yield made
    finally:
        await made.stop()


async def test_a_profile_not_joined_yet_is_pending_not_a_warning(
    inventory: Inventory, sync: ArgoCDSync
) -> None:
    ns, hub, argo = inventory.namespace, inventory.hub, sync.target_namespace
    assert argo is not None
    await kube.apply(
        hub,
        kube.CLUSTER_PROFILES,
        {
            "apiVersion": "multicluster.x-k8s.io/v1alpha1",
            "kind": "ClusterProfile",
            "metadata": {"name": "c1", "namespace": ns},
            "spec": {"clusterManager": {"name": "test"}},
        },
        field_manager="test",
    )

    async def pending() -> list[dict[str, Any]]:
        return [e for e in await events(hub, ns) if e.get("reason") == "Pending"]

    (event,) = await eventually(pending, what="a Pending Event")
    assert event["type"] == "Normal"
    assert event["regarding"]["name"] == "c1"
    assert "status.accessProviders" in event["note"]
    assert not [e for e in await events(hub, ns) if e.get("type") == "Warning"]

    # It joins: the manager publishes its access provider, and the Secret follows.
    await inventory.publish("c1", inventory.member(0))
    await eventually(lambda: secret_config(hub, f"cluster-{ns}-c1", argo), what="the Secret")
    assert not [e for e in await events(hub, ns) if e.get("type") == "Warning"]


async def test_the_proxy_url_reaches_the_secret_config(
    inventory: Inventory, sync: ArgoCDSync
) -> None:
    ns, hub, argo = inventory.namespace, inventory.hub, sync.target_namespace
    assert argo is not None
    member = inventory.member(0)
    await inventory.publish("c1", member)
    first = await eventually(
        lambda: secret_config(hub, f"cluster-{ns}-c1", argo), what="the Secret"
    )
    assert "proxyUrl" not in first
    for proxy in ("socks5://proxy.internal:1080", "http://proxy.internal:3128"):
        await inventory.patch_status(
            "c1",
            {
                "accessProviders": [
                    {
                        "name": "secretreader",
                        "cluster": {
                            "server": member.server,
                            "certificate-authority-data": base64.b64encode(member.ca_pem).decode(),
                            "proxy-url": proxy,
                            "extensions": [
                                {"name": EXTENSION_EXEC, "extension": {"clusterName": "c1"}}
                            ],
                        },
                    }
                ]
            },
        )

        async def proxied(proxy: str = proxy) -> bool:
            config = await secret_config(hub, f"cluster-{ns}-c1", argo)
            return config is not None and config.get("proxyUrl") == proxy

        await eventually(proxied, what=f"proxyUrl {proxy} in the Secret's config")

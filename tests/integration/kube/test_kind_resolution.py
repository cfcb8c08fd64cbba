"""From ``group/version/Kind`` to a REST resource on a real API server."""

from __future__ import annotations

import pytest

from cluster_inventory import kube


async def test_known_and_discovered_kinds_resolve(hub) -> None:
    async with await hub.client() as client:
        assert await kube.resolve_kind(client, "v1/ConfigMap") is kube.CONFIG_MAPS
        deployments = await kube.resolve_kind(client, "apps/v1/Deployment")
        assert (deployments.plural, deployments.namespaced) == ("deployments", True)
        nodes = await kube.resolve_kind(client, "v1/Node")
        assert (nodes.plural, nodes.namespaced) == ("nodes", False)
        # The discovered resource serves a LIST (a subresource such as deployments/scale
        # must not be picked).
        listed = await kube.list_objects(client, deployments, namespace="default")
        assert listed["items"] == []


async def test_unknown_kinds_and_groups_name_what_is_missing(hub) -> None:
    async with await hub.client() as client:
        with pytest.raises(kube.KindNotFoundError, match="no resource of kind 'Gadget'"):
            await kube.resolve_kind(client, "apps/v1/Gadget")
        with pytest.raises(kube.KindNotFoundError, match=r"does not serve /apis/example\.com/v1"):
            await kube.resolve_kind(client, "example.com/v1/Widget")

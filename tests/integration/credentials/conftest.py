"""The ``published`` fixture: a profile a consumer reaches its member through (``tests/support/hub/published.py``)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from cluster_inventory import kube
from cluster_inventory.api.constants import (
    EXTENSION_EXEC,
)
from cluster_inventory.testing import Fleet
from tests.support.data.provider_files import PLUGIN, provider_file
from tests.support.hub.published import PROFILE, Published


@pytest.fixture
async def published(fleet: Fleet, test_namespace: str, tmp_path: Path) -> Published:
    member = next(iter(fleet.members.values()))
    profile = {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {"name": PROFILE, "namespace": test_namespace},
        "spec": {"clusterManager": {"name": "test"}},
    }
    status = {
        "accessProviders": [
            {
                "name": "secretreader",
                "cluster": {
                    "server": member.server,
                    "certificate-authority-data": base64.b64encode(member.ca_pem).decode(),
                    "extensions": [{"name": EXTENSION_EXEC, "extension": {"clusterName": PROFILE}}],
                },
            }
        ]
    }
    async with await fleet.hub.client() as hub:
        await kube.apply(hub, kube.CLUSTER_PROFILES, profile, field_manager="test")
        stored = await kube.apply(
            hub,
            kube.CLUSTER_PROFILES,
            {**profile, "status": status},
            field_manager="test",
            subresource="status",
        )
    pf = provider_file(
        tmp_path / "providers.json",
        str(PLUGIN),
        ["--namespace", test_namespace],
        {"KUBECONFIG": str(fleet.hub.kubeconfig_path)},
    )
    result = Published(test_namespace, member, fleet.hub, stored, pf)
    await result.mint()
    return result

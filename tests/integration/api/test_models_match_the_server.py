"""Documents the models accept, the real API server accepts and returns unchanged."""

from __future__ import annotations

import asyncio
import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_inventory import api, kube
from cluster_inventory.testing import ControlPlane
from tests.support.data.strategies import cluster_profiles

FIELD_MANAGER = "round-trip-test"


async def store_and_read(hub: ControlPlane, doc: dict) -> dict:
    meta = doc["metadata"]
    async with await hub.client() as client:
        await kube.delete(client, kube.CLUSTER_PROFILES, meta["name"], meta["namespace"])
        await kube.create(
            client, kube.CLUSTER_PROFILES, {k: v for k, v in doc.items() if k != "status"}
        )
        if "status" in doc:
            await kube.apply(
                client,
                kube.CLUSTER_PROFILES,
                {
                    "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
                    "status": doc["status"],
                },
                field_manager=FIELD_MANAGER,
                subresource="status",
            )
        stored = await kube.get(client, kube.CLUSTER_PROFILES, meta["name"], meta["namespace"])
        await kube.delete(client, kube.CLUSTER_PROFILES, meta["name"], meta["namespace"])
    return stored


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_generated_profiles_survive_the_api_server(
    hub: ControlPlane, test_namespace: str, data: st.DataObject
) -> None:
    doc = data.draw(cluster_profiles(namespace=test_namespace))
    assert api.ClusterProfile.from_dict(copy.deepcopy(doc)).to_dict() == doc
    stored = asyncio.run(store_and_read(hub, doc))
    parsed = api.ClusterProfile.from_dict(stored)
    assert parsed.to_dict()["spec"] == doc["spec"]
    assert parsed.to_dict().get("status") == doc.get("status")
    assert parsed.metadata.labels == doc["metadata"]["labels"]

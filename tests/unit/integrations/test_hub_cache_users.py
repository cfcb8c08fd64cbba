"""A sync and a runtime's placement read the hub through the process's informer cache.

Built on one hub client, a sync's ClusterProfile and target informers, and the PlacementDecision
informer of a runtime given a placement, are the cache's own (controller-runtime's
``mgr.GetCache()``): a second user of the same request in the process gets the same informer,
so one watch serves both. No request is sent: informers connect only when started.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api.constants import LABEL_DECISION_KEY
from cluster_inventory.credentials import ProviderConfig
from cluster_inventory.integrations.sync.argocd import ArgoCDSync
from cluster_inventory.kube.informer import strip_managed_fields
from cluster_inventory.runtime import ClusterProfileProvider

NO_PROVIDERS = ProviderConfig.from_dict({"providers": []})


@pytest.fixture
async def client() -> AsyncIterator[kube.ApiClient]:
    """A hub client to an address nothing listens on (no informer here is started)."""
    async with await kube.new_client(kube.ClusterConnection(server="https://127.0.0.1:1")) as c:
        yield c


async def test_a_syncs_profile_and_target_informers_are_the_processs_shared_ones(
    client: kube.ApiClient,
) -> None:
    sync = ArgoCDSync(
        client,
        NO_PROVIDERS,
        namespaces=["fleet"],
        argocd_namespace="argocd",
        registry=CollectorRegistry(),
    )
    cache = kube.InformerCache.for_client(client)
    targets = cache.informer(
        kube.SECRETS,
        namespaces=["argocd"],
        label_selector=sync.ownership_selector(),
        transform=strip_managed_fields,
    )
    profiles = cache.informer(
        kube.CLUSTER_PROFILES, namespaces=["fleet"], transform=strip_managed_fields
    )
    assert sync.informers() == [targets, profiles]
    assert not any(i.running for cached in sync.informers() for i in cached.informers)


async def test_a_runtimes_placement_decisions_informer_is_the_processs_shared_one(
    client: kube.ApiClient,
) -> None:
    provider = ClusterProfileProvider(
        client,
        NO_PROVIDERS,
        placement=("fleet", "web"),
        registry=CollectorRegistry(),
    )
    decisions = kube.InformerCache.for_client(client).informer(
        kube.PLACEMENT_DECISIONS,
        namespaces=["fleet"],
        label_selector=f"{LABEL_DECISION_KEY}=web",
    )
    assert provider._hub_informers() == [decisions]  # the profiles' one comes at start

"""How a FleetManager is given its cluster provider (no server: nothing is started)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory.credentials import ProviderConfig
from cluster_inventory.runtime import (
    ClusterAware,
    ClusterProfileProvider,
    FleetError,
    FleetManager,
)

HUB: Any = object()  # never used: nothing here talks to a hub


class NoClusters:
    async def start(self, fleet: ClusterAware) -> None: ...

    async def wait_synced(self) -> None: ...

    async def stop(self) -> None: ...


def test_a_provider_file_builds_the_clusterprofile_provider_with_the_options() -> None:
    fm = FleetManager(
        HUB, ProviderConfig(providers=()), namespaces=["a", "b"], registry=CollectorRegistry()
    )
    assert isinstance(fm.profiles, ClusterProfileProvider)
    assert fm.provider is fm.profiles
    assert fm.profiles.namespaces == ["a", "b"]
    assert fm.profiles.informers == []  # from the hub client's cache at start
    assert fm.queue is fm.profiles.queue
    assert fm.providers == ProviderConfig(providers=())
    assert fm.placed is None


def test_another_provider_is_given_as_provider_and_takes_no_profile_options() -> None:
    fm = FleetManager(HUB, provider=NoClusters(), registry=CollectorRegistry())
    assert fm.profiles is None
    with pytest.raises(FleetError, match="not the ClusterProfile one"):
        _ = fm.queue
    with pytest.raises(TypeError, match="namespaces"):
        FleetManager(HUB, provider=NoClusters(), namespaces=["a"])  # type: ignore[call-arg]


def test_exactly_one_of_a_provider_file_and_a_provider() -> None:
    with pytest.raises(TypeError, match="provider"):
        FleetManager(HUB)
    with pytest.raises(TypeError, match="provider"):
        FleetManager(HUB, ProviderConfig(providers=()), provider=NoClusters())


def test_engage_workers_below_one_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="engage_workers"):
        FleetManager(HUB, ProviderConfig(providers=()), engage_workers=0)


async def test_a_manager_gives_the_fleet_its_graceful_shutdown() -> None:
    from cluster_inventory.controller import DEFAULT_GRACEFUL_SHUTDOWN, Manager

    fm = FleetManager(HUB, provider=NoClusters(), registry=CollectorRegistry())
    assert fm.graceful_shutdown == DEFAULT_GRACEFUL_SHUTDOWN
    manager = Manager(HUB, graceful_shutdown=7.0, registry=CollectorRegistry()).add(fm)
    task = asyncio.get_running_loop().create_task(manager.run())
    while not manager.ready():
        await asyncio.sleep(0.01)
    assert fm.graceful_shutdown == 7.0  # reconciles get the Manager's grace, not their own
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)

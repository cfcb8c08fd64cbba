"""Every test under ``tests/integration`` carries the ``integration`` marker; shared fixtures.

The marker comes from the directory, not from a line in each file, so a new test file cannot
forget it: ``pytest -m integration`` runs exactly the tests that start real control planes or
processes, and ``pytest -m "not integration"`` exactly ``tests/unit``
(``tests/unit/test_markers.py`` checks both).

``inventory`` publishes ClusterProfiles on the real hub as a cluster manager would
(:class:`tests.support.hub.inventory.Inventory`); ``fleet_manager`` builds FleetManagers over it and
stops them after the test. The runtime and integrations tests use both. ``virtual_members``
serves six virtual members over the session fleet's real members (session-wide).
``wheel_dist`` and ``wheel_venv`` are this checkout's wheel, built once per session, and a
fresh venv outside the checkout with only that wheel (``tests/support/processes/wheel.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.runtime import EngagementPolicy, FleetManager
from cluster_inventory.testing import Fleet
from cluster_inventory_workshop import VirtualMembers
from tests.support.data.provider_files import PLUGIN, provider_file
from tests.support.hub.inventory import Inventory
from tests.support.processes.wheel import build_dist, make_venv

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the items collected from this directory (pytest passes every item of the run)."""
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def wheel_dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory holding this checkout's wheel and sdist (``uv build``), once a session."""
    return build_dist(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="session")
def wheel_venv(wheel_dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv (no project, no dev tools) with only the wheel and its dependencies."""
    (wheel,) = wheel_dist.glob("*.whl")
    return make_venv(tmp_path_factory.mktemp("venv"), wheel)


@pytest.fixture(scope="session")
async def virtual_members(fleet: Fleet) -> AsyncIterator[VirtualMembers]:
    """Six virtual members over the session fleet's members (n over real member n mod M)."""
    async with VirtualMembers(fleet, 6) as vm:
        yield vm


@pytest.fixture
async def inventory(fleet: Fleet, test_namespace: str, tmp_path: Path) -> AsyncIterator[Inventory]:
    pf = provider_file(
        tmp_path / "providers.json",
        str(PLUGIN),
        ["--namespace", test_namespace],
        {"KUBECONFIG": str(fleet.hub.kubeconfig_path)},
    )
    async with await fleet.hub.client() as hub:
        inv = Inventory(fleet, hub, test_namespace, pf)
        try:
            yield inv
        finally:
            for ns in inv.extra_namespaces:
                await kube.delete(hub, kube.NAMESPACES, ns)


@pytest.fixture
async def fleet_manager(
    inventory: Inventory,
) -> AsyncIterator[Callable[..., FleetManager]]:
    """``make(**options)`` builds a FleetManager over the test namespace; all are stopped."""
    made: list[FleetManager] = []

    def make(**options: Any) -> FleetManager:
        options.setdefault("namespaces", [inventory.namespace])
        options.setdefault("registry", CollectorRegistry())
        options.setdefault("policy", EngagementPolicy(readiness_recheck=0.5))
        options.setdefault("provider_file_poll", 0.2)
        options.setdefault("graceful_shutdown", 5.0)
        fm = FleetManager(inventory.hub, inventory.provider_file, **options)
        made.append(fm)
        return fm

    try:
        yield make
    finally:
        for fm in made:
            await fm.stop()

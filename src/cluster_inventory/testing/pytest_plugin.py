"""pytest plugin: a session-wide local fleet and a fresh namespace per test.

Opt-in: a project enables it with ``-p cluster_inventory.testing.pytest_plugin`` (on the
command line or in ``addopts``) or ``pytest_plugins = ["cluster_inventory.testing.pytest_plugin"]``
in its top-level ``conftest.py``. Installing ``cluster-inventory`` loads nothing into pytest.
Enabled, it registers these fixtures and imports the control planes' machinery (aiohttp, the
Kubernetes client) only when a test asks for one:

- ``fleet`` (session): a started :class:`~cluster_inventory.testing.Fleet`, stopped at the
  end of the session. Size it with the ini options ``cluster_inventory_members`` (default 2)
  and ``cluster_inventory_controllers`` (``true`` runs kube-controller-manager with
  :data:`~cluster_inventory.testing.DEFAULT_CONTROLLERS` on every cluster; default true).
- ``hub``: the fleet's hub :class:`~cluster_inventory.testing.ControlPlane`.
- ``test_namespace``: a namespace created on the hub and on every member for this test only,
  deleted afterwards; its name is derived from the test name.

A second opt-in plugin, :mod:`cluster_inventory.testing.pytest_hang_report`, makes
pytest-timeout print the await chain of every asyncio task when a test times out.

The fixtures are synchronous, so they work with or without pytest-asyncio. A missing binary
fails the first test that asks for a fleet with a message saying how to build the assets.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from cluster_inventory.testing.controlplane import ControlPlane
    from cluster_inventory.testing.fleet import Fleet

__all__ = ["fleet", "hub", "test_namespace"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ini options that size the session fleet."""
    parser.addini(
        "cluster_inventory_members", "number of member clusters in the session fleet", default="2"
    )
    parser.addini(
        "cluster_inventory_controllers",
        "run kube-controller-manager on every cluster of the session fleet (true/false)",
        default="true",
    )


@pytest.fixture(scope="session")
def fleet(pytestconfig: pytest.Config) -> Iterator[Fleet]:
    """A hub and N members (real etcd + kube-apiserver), shared by the whole session."""
    from cluster_inventory.testing.controlplane import DEFAULT_CONTROLLERS
    from cluster_inventory.testing.fleet import Fleet

    members = int(str(pytestconfig.getini("cluster_inventory_members")))
    controllers = str(pytestconfig.getini("cluster_inventory_controllers")).lower() == "true"
    chosen = DEFAULT_CONTROLLERS if controllers else None
    with Fleet(members, hub_controllers=chosen, member_controllers=chosen) as started:
        yield started


@pytest.fixture(scope="session")
def hub(fleet: Fleet) -> ControlPlane:
    """The session fleet's hub."""
    return fleet.hub


def _namespace_name(nodeid: str) -> str:
    base = re.sub(r"[^a-z0-9-]+", "-", nodeid.split("::")[-1].lower()).strip("-")[:40].strip("-")
    digest = hashlib.sha256(nodeid.encode()).hexdigest()[:8]
    return f"t-{base}-{digest}" if base else f"t-{digest}"


async def _for_each_cluster(fleet: Fleet, name: str, create: bool) -> None:
    from cluster_inventory import kube

    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    for cp in fleet.clusters:
        async with await cp.client() as client:
            if create:
                try:
                    await kube.create(client, kube.NAMESPACES, body)
                except kube.AlreadyExistsError:
                    pass
            else:
                await kube.delete(client, kube.NAMESPACES, name)


@pytest.fixture
def test_namespace(fleet: Fleet, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace that exists on the hub and every member for the duration of one test."""
    name = _namespace_name(request.node.nodeid)
    asyncio.run(_for_each_cluster(fleet, name, create=True))
    yield name
    asyncio.run(_for_each_cluster(fleet, name, create=False))

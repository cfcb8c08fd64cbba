"""pytest plugin: a session-wide local fleet and a fresh namespace per test.

Installed with the distribution (entry point ``pytest11``), so any project that depends on
``cluster-inventory`` gets these fixtures without importing anything:

- ``fleet`` (session): a started :class:`~cluster_inventory.testing.Fleet`, stopped at the
  end of the session. Size it with the ini options ``cluster_inventory_members`` (default 2)
  and ``cluster_inventory_controllers`` (``true`` runs kube-controller-manager with
  :data:`~cluster_inventory.testing.DEFAULT_CONTROLLERS` on every cluster; default true).
- ``hub``: the fleet's hub :class:`~cluster_inventory.testing.ControlPlane`.
- ``test_namespace``: a namespace created on the hub and on every member for this test only,
  deleted afterwards; its name is derived from the test name.

With pytest-timeout (its default ``signal`` method), a test that times out also prints the
await chain of every asyncio task on the test's event loop, so a hung async test names the
``await`` it is stuck in, not only the (idle) threads.

The fixtures are synchronous, so they work with or without pytest-asyncio. A missing binary
fails the first test that asks for a fleet with a message saying how to build the assets.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import signal
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from cluster_inventory import kube
from cluster_inventory.testing._hangs import format_asyncio_tasks
from cluster_inventory.testing.controlplane import DEFAULT_CONTROLLERS, ControlPlane
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


@pytest.hookimpl(hookwrapper=True, optionalhook=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> Generator[None, None, None]:
    """pytest-timeout hook: on a timeout, print the asyncio tasks before its thread stacks.

    pytest-timeout's ``signal`` method installs a SIGALRM handler; this wraps it. The
    ``thread`` method ends the process from another thread, where the test's event loop
    cannot be inspected safely, so it is left as it is.
    """
    yield
    if getattr(settings, "method", None) != "signal":
        return
    original = signal.getsignal(signal.SIGALRM)
    if not callable(original):
        return

    def on_timeout(signum: int, frame: Any) -> None:
        __tracebackhide__ = True
        writer = item.config.get_terminal_writer()
        writer.sep("+", title="asyncio tasks at the timeout")
        writer.write(format_asyncio_tasks() + "\n")
        original(signum, frame)

    signal.signal(signal.SIGALRM, on_timeout)


@pytest.fixture(scope="session")
def fleet(pytestconfig: pytest.Config) -> Iterator[Fleet]:
    """A hub and N members (real etcd + kube-apiserver), shared by the whole session."""
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

"""Fixtures of the agent tests: an accepted member and its agent identity, a join hub.

``accepted`` leaves the session fleet's first member accepted in the test's hub namespace
(:func:`tests.support.hub.agents.accept`); ``accepted.hub`` is a hub client with the agent's identity
only. ``toxiproxy`` is a Toxiproxy server for the hub-outage test.

The join tests need a hub that signs CSRs (the session fleet's runs no signer): ``join_hub``
runs kube-controller-manager's ``csrsigning`` with the client CA the apiserver trusts (what
``fleet up`` runs; each acceptance's RBAC is ``manager accept``'s);
``join_manager`` is the cluster manager on it (its CSR approver among its controllers, its
registrations in :data:`tests.support.hub.agents.JOIN_NS`); ``join_admin`` is the join hub's admin.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory import api, kube
from cluster_inventory.manager import ClusterManagerRunnable, ManagerConfig
from cluster_inventory.testing import SIGNER_CONTROLLER, ControlPlane, Fleet
from tests.support.hub.agents import JOIN_NS, Accepted, accept, agent_groups
from tests.support.network.toxiproxy import Toxiproxy, running_toxiproxy
from tests.support.waiting import eventually


@pytest.fixture
async def accepted(fleet: Fleet, test_namespace: str) -> AsyncIterator[Accepted]:
    name, member = next(iter(fleet.members.items()))
    async with await fleet.hub.client() as admin:
        acceptance = await accept(admin, name, test_namespace)
        hub = await fleet.hub.client(
            f"cluster-inventory:agent:{name}", agent_groups(name, acceptance)
        )
        try:
            # RBAC reaches the authorizer through its informers: wait until it applies.
            await eventually(
                lambda: kube.get(hub, kube.MEMBER_REPORTS, name, test_namespace),
                what="the agent identity may read its MemberReport",
            )
            yield Accepted(name, test_namespace, member, hub, admin, acceptance)
        finally:
            await hub.close()


@pytest.fixture(scope="session")
async def toxiproxy() -> AsyncIterator[Toxiproxy]:
    """The Toxiproxy server (fails saying how to build it when it is not built)."""
    async with running_toxiproxy() as started:
        yield started


@pytest.fixture(scope="package")
async def join_hub() -> AsyncIterator[ControlPlane]:
    async with ControlPlane("join-hub", controllers=[SIGNER_CONTROLLER]) as cp:
        async with await cp.client() as admin:
            await kube.ensure_crds(admin, api.load_crds())
            await kube.create(admin, kube.NAMESPACES, {"metadata": {"name": JOIN_NS}})
        yield cp


@pytest.fixture(scope="package")
async def join_manager(join_hub: ControlPlane) -> AsyncIterator[ClusterManagerRunnable]:
    """The cluster manager on the join hub (registrations in JOIN_NS, its approver running)."""
    async with await join_hub.client() as admin:
        runnable = ClusterManagerRunnable(
            admin,
            ManagerConfig(name="join-test", namespace=JOIN_NS, probe_interval=0.5),
            registry=CollectorRegistry(),
            identity="test",
        )
        task = asyncio.get_running_loop().create_task(runnable.run())
        try:
            await asyncio.wait_for(runnable.synced.wait(), 30)
            yield runnable
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


@pytest.fixture
async def join_admin(join_hub: ControlPlane) -> AsyncIterator[kube.ApiClient]:
    async with await join_hub.client() as client:
        yield client

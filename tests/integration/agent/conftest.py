"""Fixtures of the agent tests: an accepted member and its agent identity, a Toxiproxy.

``accepted`` leaves the session fleet's first member accepted in the test's hub namespace
(:func:`tests.agents.accept`); ``accepted.hub`` is a hub client with the agent's identity
only. ``toxiproxy`` is a Toxiproxy server for the hub-outage test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from cluster_inventory import kube
from cluster_inventory.api.constants import AGENT_GROUP, AGENT_USER_PREFIX
from cluster_inventory.testing import Fleet
from tests.agents import Accepted, accept
from tests.toxiproxy import Toxiproxy, running_toxiproxy
from tests.waiting import eventually


@pytest.fixture
async def accepted(fleet: Fleet, test_namespace: str) -> AsyncIterator[Accepted]:
    name, member = next(iter(fleet.members.items()))
    async with await fleet.hub.client() as admin:
        await accept(admin, name, test_namespace)
        hub = await fleet.hub.client(AGENT_USER_PREFIX + name, [AGENT_GROUP])
        try:
            # RBAC reaches the authorizer through its informers: wait until it applies.
            await eventually(
                lambda: kube.get(hub, kube.MEMBER_REPORTS, name, test_namespace),
                what="the agent identity may read its MemberReport",
            )
            yield Accepted(name, test_namespace, member, hub, admin)
        finally:
            await hub.close()


@pytest.fixture(scope="session")
async def toxiproxy() -> AsyncIterator[Toxiproxy]:
    """The Toxiproxy server (fails saying how to build it when it is not built)."""
    async with running_toxiproxy() as started:
        yield started

"""The ``harness`` fixture: a cluster manager on the session fleet (``tests/support/hub/manager.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from cluster_inventory.testing import Fleet
from tests.support.hub.manager import Harness, running_manager


@pytest.fixture
async def harness(fleet: Fleet, test_namespace: str) -> AsyncIterator[Harness]:
    async with running_manager(fleet, test_namespace) as h:
        yield h

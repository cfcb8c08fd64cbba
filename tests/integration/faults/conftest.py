"""A Toxiproxy for the fault tests (tests/support/network/toxiproxy.py), shared by the session."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.support.network.toxiproxy import Toxiproxy, running_toxiproxy


@pytest.fixture(scope="session")
async def toxiproxy() -> AsyncIterator[Toxiproxy]:
    """The Toxiproxy server (fails saying how to build it when it is not built)."""
    async with running_toxiproxy() as started:
        yield started

"""A dashboard over the session fleet's hub, and Debian's headless Chromium to look at it.

``serve(namespaces, client=...)`` starts a :class:`~cluster_inventory.dashboard.Dashboard` in
the test's event loop on a free loopback port and yields its URL; ``browser`` is one
Chromium for the module, driven over the DevTools protocol
(:mod:`cluster_inventory_workshop.browser`), each test opening its own tab.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from cluster_inventory import kube
from cluster_inventory.dashboard import Dashboard, HubState
from cluster_inventory.testing import Fleet
from cluster_inventory_workshop.browser import Browser

__all__ = ["browser", "serve"]


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with Browser.start() as started:
        yield started


@pytest.fixture
def serve(fleet: Fleet) -> Callable[..., contextlib.AbstractAsyncContextManager[str]]:
    """``async with serve(namespaces, client=None, **options) as url``."""

    @contextlib.asynccontextmanager
    async def run(
        namespaces: list[str], *, client: kube.ApiClient | None = None, **options: Any
    ) -> AsyncIterator[str]:
        async with contextlib.AsyncExitStack() as stack:
            if client is None:
                client = await stack.enter_async_context(await fleet.hub.client())
            state = HubState(client, namespaces, **options)
            url = await stack.enter_async_context(
                Dashboard(state, address=("127.0.0.1", 0)).serve()
            )
            yield url

    return run

"""Settings for the whole suite.

Hypothesis' per-example deadline (200 ms) is a wall-clock assertion: on a shared 2-core
machine that is compiling, one example can take 800 ms without anything being wrong. Tests
here never assert time, so the deadline is off for every property test.

The suite runs on asyncio's own event loop; ``CLUSTER_INVENTORY_EVENT_LOOP=uvloop`` runs it
on uvloop instead, the loop ``kube.run`` gives long-running processes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from hypothesis import settings

from cluster_inventory import kube

settings.register_profile("cluster-inventory", deadline=None)
settings.load_profile("cluster-inventory")


if os.environ.get(kube.EVENT_LOOP_ENV) == "uvloop":
    # Defined only then: pytest-asyncio requires the hook to always return a factory.

    def pytest_asyncio_loop_factories(config: Any, item: Any) -> Mapping[str, Any]:
        """pytest-asyncio hook: every async test and fixture runs on uvloop."""
        return {"uvloop": kube.event_loop_factory("uvloop")}

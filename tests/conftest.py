"""Settings for the whole suite.

Hypothesis' per-example deadline (200 ms) is a wall-clock assertion: on a shared 2-core
machine that is compiling, one example can take 800 ms without anything being wrong. Tests
here never assert time, so the deadline is off for every property test.

The suite runs on asyncio's own event loop; ``CLUSTER_INVENTORY_EVENT_LOOP=uvloop`` runs it
on uvloop instead, the loop ``kube.run`` gives long-running processes.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import settings

from cluster_inventory import kube

settings.register_profile("cluster-inventory", deadline=None)
settings.load_profile("cluster-inventory")


@pytest.fixture(autouse=True, scope="module")
def _collect_garbage_at_module_end() -> Iterator[None]:
    """A full garbage collection as each test module ends.

    Something a module leaves unclosed (an aiohttp ``ClientSession`` or connector, whose
    ``__del__`` warns) is then reported at the teardown of that module's last test, not at
    whichever later test the collector happens to run in (docs/testing.md, "An unclosed
    session").
    """
    yield
    gc.collect()


def pytest_addoption(parser: Any) -> None:
    """``--campaign-report`` and ``--fault-report``: print a campaign's tally at the end."""
    parser.addoption(
        "--campaign-report",
        action="store_true",
        help="print what the bad-input campaign tried and what came of it (tests/support/data/bad_input.py)",
    )
    parser.addoption(
        "--fault-report",
        action="store_true",
        help="print the network fault matrix of the cells run (tests/support/network/faults.py)",
    )


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    """Print the campaigns' tables when ``--campaign-report``/``--fault-report`` is given."""
    if config.getoption("--fault-report"):
        from tests.support.network.faults import TALLY

        terminalreporter.section("fault matrix")
        terminalreporter.write_line(TALLY.table())
    if not config.getoption("--campaign-report"):
        return
    from tests.support.data.bad_input import CAMPAIGN

    terminalreporter.section("bad-input campaign")
    terminalreporter.write_line(CAMPAIGN.table())


if os.environ.get(kube.EVENT_LOOP_ENV) == "uvloop":
    # Defined only then: pytest-asyncio requires the hook to always return a factory.

    def pytest_asyncio_loop_factories(config: Any, item: Any) -> Mapping[str, Any]:
        """pytest-asyncio hook: every async test and fixture runs on uvloop."""
        return {"uvloop": kube.event_loop_factory("uvloop")}

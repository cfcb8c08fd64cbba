"""The Lease loop's thread gets the GIL soon while the main thread is CPU-bound."""

from __future__ import annotations

import sys

from cluster_inventory import kube
from cluster_inventory.kube.background import SWITCH_INTERVAL


def test_a_background_loop_lowers_the_switch_interval_and_runs_coroutines() -> None:
    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        background = kube.BackgroundLoop("test-background")

        async def answer() -> int:
            return 42

        assert background.submit(answer()).result(timeout=5) == 42
        assert sys.getswitchinterval() <= SWITCH_INTERVAL
        background.loop.call_soon_threadsafe(background.loop.stop)
    finally:
        sys.setswitchinterval(before)

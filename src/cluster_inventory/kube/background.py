"""An event loop on a thread of its own, for work that must keep its schedule.

A replica serving thousands of members runs its probes, watches and reconciles on one
event loop; when that loop is behind, everything on it waits, Lease renewals too. A Lease
renewed late reads, to the other replicas, as a dead replica: they take its members, whose
connections restart elsewhere, which is more work again (the metastable overload of
``docs/scale.md``). client-go renews its leader Lease on a goroutine of its own whatever the
work queue holds; here the Leases (shard membership, leader election) are renewed and
watched on a :class:`BackgroundLoop`, with their own hub connection, so a busy main loop
delays them only by the interpreter's thread switch interval (5 ms), not by its backlog.

The trade-off: a second thread and one more connection to the hub per process, and the
code running there must hand what it finds to the main loop with
``loop.call_soon_threadsafe`` instead of touching the main loop's objects.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from cluster_inventory.kube._loop import event_loop_factory

__all__ = ["BackgroundLoop", "lease_loop"]

T = TypeVar("T")


#: The process's GIL switch interval (seconds) once a background loop runs; Python's default
#: is 5 ms.
SWITCH_INTERVAL = 0.001


class BackgroundLoop:
    """An event loop running on a daemon thread.

    Starting one lowers the process's GIL switch interval to :data:`SWITCH_INTERVAL`: while
    the main loop is CPU-bound (a replica starting thousands of members), a thread waiting
    for the GIL gets it only at the next switch, and a Lease renewal waits once at every I/O
    step (a "convoy"). At 5 ms, 100 loopback round trips took 0.5 s beside a busy main thread
    instead of 0.01 s; at 1 ms, 0.07 s.

    Args:
        name: The thread's name (shown by py-spy and in thread dumps).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop (started on first use)."""
        with self._lock:
            if self._loop is None or self._thread is None or not self._thread.is_alive():
                loop = event_loop_factory()()
                ready = threading.Event()

                def main() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL))
                self._thread = threading.Thread(target=main, name=self.name, daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the background loop; returns a thread-safe future of its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the background loop and await its result from the calling loop.

        Cancelling the caller cancels ``coro`` on the background loop too.

        Raises:
            Exception: Whatever ``coro`` raised.
        """
        return await asyncio.wrap_future(self.submit(coro))


_LEASES = BackgroundLoop("cluster-inventory-leases")


def lease_loop() -> BackgroundLoop:
    """The process's loop for Lease renewals and Lease watches (shard group, leader)."""
    return _LEASES

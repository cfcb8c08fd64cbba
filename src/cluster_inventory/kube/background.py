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

The loop is stopped and closed on its own thread before the interpreter finalizes (an
``atexit`` hook, :meth:`BackgroundLoop.stop`): a uvloop loop still running on a daemon
thread then can crash the process with SIGSEGV, a libuv callback taking the GIL of an
interpreter already torn down (seen once as a sharded replica's exit code -11 after
SIGTERM; uvloop's loops on daemon threads are known for it).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
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
#: Seconds what still runs on a stopping loop gets to end once cancelled.
STOP_GRACE = 2.0


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
        self._stop_at_exit = False

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop (started on first use, and again on use after :meth:`stop`)."""
        with self._lock:
            if self._loop is None or self._thread is None or not self._thread.is_alive():
                loop = event_loop_factory()()
                ready = threading.Event()

                def main() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    try:
                        loop.run_forever()
                    finally:
                        _close(loop)

                sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL))
                self._thread = threading.Thread(target=main, name=self.name, daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
                if not self._stop_at_exit:
                    atexit.register(self.stop)
                    self._stop_at_exit = True
            return self._loop

    def stop(self, timeout: float = STOP_GRACE + 3.0) -> None:
        """Stop the loop, cancel what still runs there and close it, on its thread.

        Idempotent, and run at interpreter exit (``atexit``) for a loop that was started.
        What still runs is cancelled and given :data:`STOP_GRACE` seconds to end.

        Args:
            timeout: Seconds to wait for the thread to end (it is a daemon: a loop that
                will not end is left to the interpreter's exit).
        """
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None or not thread.is_alive():
            return
        with contextlib.suppress(RuntimeError):  # closed meanwhile
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)

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


def _close(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what still runs on ``loop`` (stopped), let it end, then close the loop."""
    try:
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        if tasks:
            loop.run_until_complete(asyncio.wait(tasks, timeout=STOP_GRACE))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


_LEASES = BackgroundLoop("cluster-inventory-leases")


def lease_loop() -> BackgroundLoop:
    """The process's loop for Lease renewals and Lease watches (shard group, leader)."""
    return _LEASES

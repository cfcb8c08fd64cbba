"""The one reconcile worker pool of every controller: outcomes, backoff and metrics.

controller-runtime's semantics (``pkg/reconcile``, ``pkg/internal/controller``) over a client-go
:class:`~cluster_inventory.kube.workqueue.WorkQueue`. :class:`Workers` is the only place in the
product that starts reconcile workers (the cluster manager, the runtime's engage queue and
per-cluster controllers, the hub controllers):

- ``None`` or ``Result()``: done; the key's backoff is reset.
- ``Result(requeue_after=s)``: reconcile again after ``s`` seconds.
- ``Result(requeue=True)``: reconcile again after the key's backoff.
- an exception: counted, logged and retried after the key's backoff (a 409 conflict too).
- :class:`TerminalError`: counted and logged, not retried.
- :class:`RequestDropped`: forgotten, not counted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory.kube import ReconcileMetrics, TaskSet
from cluster_inventory.kube.errors import KubeError
from cluster_inventory.kube.workqueue import QueueShutDown, WorkQueue

__all__ = [
    "DEFAULT_GRACEFUL_SHUTDOWN",
    "RequestDropped",
    "Result",
    "TerminalError",
    "Workers",
    "reconcile_loop",
]

K = TypeVar("K", bound=Hashable)
_log = logging.getLogger("cluster_inventory.controller")

#: Seconds running reconciles get to finish when a controller stops, before they are
#: cancelled: the one shutdown grace (controller-runtime's ``GracefulShutdownTimeout``).
#: ``Manager(graceful_shutdown=...)`` hands its value to every runnable it runs (a
#: ``Controller``, the runtime's ``FleetManager`` and its controllers) and waits that long
#: plus :data:`STOP_ALLOWANCE` for their clean-up. 3 s + 1 s stays well inside the 30 s
#: Kubernetes gives a pod between SIGTERM and SIGKILL, so the Lease is released in time.
DEFAULT_GRACEFUL_SHUTDOWN = 3.0
#: Seconds a stop may take beyond the grace: cancelled reconciles unwinding, caches and
#: clients closing, the Lease released.
STOP_ALLOWANCE = 1.0


class TerminalError(Exception):
    """Raise from a reconciler to stop retries of a request.

    controller-runtime's ``reconcile.TerminalError``: the error is logged and counted in
    ``controller_runtime_terminal_reconcile_errors_total``, and the request is not requeued.
    """


@dataclass(frozen=True, kw_only=True)
class Result:
    """How a reconcile ended (controller-runtime's ``reconcile.Result``).

    Attributes:
        requeue: Reconcile again after the key's rate-limited backoff.
        requeue_after: Reconcile again after this many seconds (wins over ``requeue``).

    Raises:
        ValueError: ``requeue_after`` is negative.
    """

    requeue: bool = False
    requeue_after: float | None = None

    def __post_init__(self) -> None:
        if self.requeue_after is not None and self.requeue_after < 0:
            raise ValueError(f"requeue_after must be >= 0 seconds, not {self.requeue_after}")


class RequestDropped(Exception):
    """Raise from a reconcile function to forget its key without counting a reconcile.

    The runtime raises it for a request whose cluster was disengaged meanwhile.
    """


async def reconcile_loop(
    queue: WorkQueue[K],
    reconcile: Callable[[K], Awaitable[Result | None]],
    *,
    controller: str,
    metrics: ReconcileMetrics,
    describe: Callable[[K], dict[str, str]],
    log: logging.Logger = _log,
) -> None:
    """Take keys from ``queue`` and reconcile them until the queue is shut down (one worker).

    Args:
        queue: Where keys come from.
        reconcile: ``async (key) -> Result | None``; may raise (see the module docstring).
        controller: The ``controller`` label of the metrics.
        metrics: controller-runtime's reconcile collectors.
        describe: Log fields of a key (``cluster``, ``object``, ...).
        log: Where failures are logged.
    """
    while True:
        try:
            key = await queue.get()
        except QueueShutDown:
            return
        if queue.shutting_down:  # stopping: drop what is still queued
            queue.done(key)
            continue
        active = metrics.active_workers.labels(controller)
        active.inc()
        started = time.perf_counter()
        outcome = "success"
        try:
            result = await reconcile(key)
        except RequestDropped:
            queue.forget(key)
            outcome = ""
        except TerminalError as exc:
            outcome = "error"
            metrics.terminal_errors.labels(controller).inc()
            log.error("reconcile failed for good: %s", exc, extra=describe(key))
            queue.forget(key)
        except Exception as exc:  # one failing key must never stop the others
            outcome = "error"
            expected = isinstance(exc, KubeError | TimeoutError)
            log.log(
                logging.WARNING if expected else logging.ERROR,
                "reconcile failed, retrying with backoff: %s",
                exc or type(exc).__name__,
                extra=describe(key),
                exc_info=not expected,
            )
            queue.add_rate_limited(key)
        else:
            if result is not None and result.requeue_after is not None:
                outcome = "requeue_after"
                queue.forget(key)
                queue.add_after(key, result.requeue_after)
            elif result is not None and result.requeue:
                outcome = "requeue"
                queue.add_rate_limited(key)
            else:
                queue.forget(key)
        finally:
            active.dec()
            queue.done(key)
        if outcome:
            metrics.total.labels(controller, outcome).inc()
            if outcome == "error":
                metrics.errors.labels(controller).inc()
            metrics.time.labels(controller).observe(time.perf_counter() - started)
        # A reconcile that never waited (a not-ready profile, a cache hit) returns without
        # giving the loop back, and get() hands out the next key at once: a worker draining
        # a thousand keys listed together would hold the loop for all of them, ahead of
        # whoever waits on that list (wait_synced) and of every socket. One turn per key.
        await asyncio.sleep(0)


class Workers(Generic[K]):
    """``count`` reconcile workers draining one queue.

    controller-runtime starts ``MaxConcurrentReconciles`` goroutines per controller; these are
    their counterpart.

    Each worker first awaits ``before`` (typically "every cache has listed once": a decision
    over half-listed caches would write, and later undo, a wrong answer), then runs
    :func:`reconcile_loop` until the queue is shut down.

    Args:
        queue: Where keys come from.
        reconcile: ``async (key) -> Result | None``.
        controller: The ``controller`` label of the metrics and the tasks' names.
        count: How many workers (>= 1).
        registry: Prometheus registry of the reconcile metrics.
        describe: Log fields of a key (default ``{"key": str(key)}``).
        log: Where failures are logged.
        before: Awaited by each worker before its first key (None: start at once).

    Raises:
        ValueError: ``count`` is less than 1.
    """

    def __init__(
        self,
        queue: WorkQueue[K],
        reconcile: Callable[[K], Awaitable[Result | None]],
        *,
        controller: str,
        count: int = 1,
        registry: CollectorRegistry = REGISTRY,
        describe: Callable[[K], dict[str, str]] | None = None,
        log: logging.Logger = _log,
        before: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        if count < 1:
            raise ValueError(f"{controller}: workers must be >= 1, not {count}")
        self.queue = queue
        self.count = count
        self.controller = controller
        self._reconcile = reconcile
        self._metrics = ReconcileMetrics.for_registry(registry)
        self._describe = describe or (lambda key: {"key": str(key)})
        self._log = log
        self._before = before
        self._tasks = TaskSet(controller, logger=log)
        self._workers: list[asyncio.Task[None]] = []  # wait() raises the first one's failure

    @property
    def running(self) -> bool:
        """True between :meth:`start` and :meth:`stop`."""
        return bool(self._workers)

    def start(self) -> None:
        """Start the workers (idempotent); sets ``controller_runtime_max_concurrent_reconciles``."""
        if self._workers:
            return
        self._metrics.start(self.controller, self.count)
        self._workers = [
            self._tasks.spawn(self._work(), name=f"worker {i}", awaited=True)
            for i in range(self.count)
        ]

    async def _work(self) -> None:
        if self._before is not None:
            await self._before()
        await reconcile_loop(
            self.queue,
            self._reconcile,
            controller=self.controller,
            metrics=self._metrics,
            describe=self._describe,
            log=self._log,
        )

    async def wait(self) -> None:
        """Wait until every worker has ended; the first worker's failure is raised."""
        if self._workers:
            await asyncio.gather(*self._workers)

    async def stop(self, grace: float = 0.0) -> None:
        """Shut the queue down, give running reconciles ``grace`` seconds, cancel the rest.

        A worker's failure is :meth:`wait`'s to raise, not this method's.
        """
        self._workers = []
        self.queue.shut_down()
        await self._tasks.stop(grace)

"""One reconcile worker for every controller: outcomes, backoff and metrics.

controller-runtime's semantics over a client-go :class:`~cluster_inventory.kube.workqueue.WorkQueue`
(shared by the cluster manager and the multicluster runtime):

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
from typing import TypeVar

from cluster_inventory.kube._metrics import ReconcileMetrics
from cluster_inventory.kube.errors import KubeError
from cluster_inventory.kube.workqueue import QueueShutDown, WorkQueue

__all__ = [
    "RequestDropped",
    "Result",
    "TerminalError",
    "reconcile_loop",
    "stop_workers",
]

K = TypeVar("K", bound=Hashable)
_log = logging.getLogger("cluster_inventory.kube.reconcile")


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


async def stop_workers(workers: list[asyncio.Task[None]], grace: float) -> None:
    """Wait up to ``grace`` seconds for ``workers`` to finish, then cancel the rest."""
    if not workers:
        return
    _, pending = await asyncio.wait(workers, timeout=grace)
    for task in pending:
        task.cancel()
    await asyncio.gather(*workers, return_exceptions=True)

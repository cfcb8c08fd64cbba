"""One typed controller: watches with map functions, one work queue, N workers.

controller-runtime's ``pkg/controller`` in this project's terms. A :class:`Controller` holds
its caches (informers), maps each watched event to the keys it concerns, queues them on a
client-go work queue and reconciles them with
:class:`~cluster_inventory.controller.reconcile.Workers` (level-based: the reconcile reads
the caches, never the event). Workers wait for every cache before the first reconcile: a
decision over half-listed caches would write, and later undo, a wrong answer. A controller
is a :class:`~cluster_inventory.controller.manager.Runnable`, so a
:class:`~cluster_inventory.controller.manager.Manager` runs it (leader election, probes,
metrics, signals).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable, Iterable
from typing import Any, Generic, Self, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory.controller.reconcile import DEFAULT_GRACEFUL_SHUTDOWN, Result, Workers
from cluster_inventory.kube import collectors_for
from cluster_inventory.kube.cache import NamespacedInformer
from cluster_inventory.kube.errors import KubeAPIError, SourceUnavailableError
from cluster_inventory.kube.informer import Informer
from cluster_inventory.kube.workqueue import WorkQueue, WorkQueueMetrics

__all__ = ["Controller", "MapFunc"]

K = TypeVar("K", bound=Hashable)

#: A watch's map function: ``(event, object, old object or None) -> keys to reconcile``
#: (controller-runtime's ``handler.MapFunc``); None or an empty iterable queues nothing.
MapFunc = Callable[[str, dict[str, Any], dict[str, Any] | None], Iterable[K] | None]


class Controller(Generic[K]):
    """Caches feeding one work queue of keys ``K``, drained by ``workers`` reconcilers.

    Args:
        name: The controller's name: the ``controller`` label of controller-runtime's
            reconcile metrics and the work queue's name.
        reconcile: ``async (key) -> Result | None``, level-based (see
            :mod:`cluster_inventory.controller.reconcile` for what outcomes mean).
        workers: Keys reconciled at once (controller-runtime's ``MaxConcurrentReconciles``).
        registry: Prometheus registry of the work-queue and reconcile metrics.
        describe: Log fields naming a key (default ``{"key": str(key)}``).
        log: Where reconcile failures are logged.
        graceful_shutdown: Seconds running reconciles get to finish on :meth:`stop`
            (:data:`~cluster_inventory.controller.reconcile.DEFAULT_GRACEFUL_SHUTDOWN`); a
            :class:`~cluster_inventory.controller.manager.Manager` sets it to its own.

    Raises:
        ValueError: ``workers`` is less than 1, or ``graceful_shutdown`` is negative.

    Attributes:
        queue: The work queue (``add`` a key to have it reconciled).
        graceful_shutdown: As given, or the Manager's.
        elector: Set by a :class:`~cluster_inventory.controller.manager.Manager` running
            this controller under leader election (``ready`` reports a standby as ready).
    """

    def __init__(
        self,
        name: str,
        reconcile: Callable[[K], Awaitable[Result | None]],
        *,
        workers: int = 1,
        registry: CollectorRegistry = REGISTRY,
        describe: Callable[[K], dict[str, str]] | None = None,
        log: logging.Logger | None = None,
        graceful_shutdown: float = DEFAULT_GRACEFUL_SHUTDOWN,
    ) -> None:
        if workers < 1:
            raise ValueError(f"{name}: workers must be >= 1, not {workers}")
        if graceful_shutdown < 0:
            raise ValueError(f"{name}: graceful_shutdown must be >= 0 s, not {graceful_shutdown}")
        self.graceful_shutdown = graceful_shutdown
        self.controller = name
        self.registry = registry
        self.queue: WorkQueue[K] = WorkQueue(
            name, metrics=collectors_for(WorkQueueMetrics, registry)
        )
        self.elector: Any = None
        self._caches: list[Informer | NamespacedInformer] = []
        self._caches_started = False
        self._workers = Workers(
            self.queue,
            reconcile,
            controller=name,
            count=workers,
            registry=registry,
            describe=describe,
            log=log or logging.getLogger(f"cluster_inventory.controller.{name}"),
            before=self.wait_synced,
        )

    @property
    def workers(self) -> int:
        """How many keys are reconciled at once."""
        return self._workers.count

    def watch(
        self, informer: Informer | NamespacedInformer, map_keys: MapFunc[K] | None = None
    ) -> Self:
        """Add a cache, and with ``map_keys`` queue the keys each of its events concerns.

        Args:
            informer: The cache (started, waited for and stopped with the controller, in the
                order added).
            map_keys: Maps an event to keys (None: a cache read by the reconcile only).

        Returns:
            This controller, for chaining.
        """
        self._caches.append(informer)
        if map_keys is not None:

            def enqueue(event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
                for key in map_keys(event, obj, old) or ():
                    self.queue.add(key)

            informer.add_handler(enqueue)
        return self

    def informers(self) -> list[Informer | NamespacedInformer]:
        """Every cache, in the order to start and to wait for."""
        return list(self._caches)

    async def prepare(self) -> None:
        """Start the caches and wait for their first LIST (before leader election).

        controller-runtime starts caches on every replica, standbys included; a cache that
        cannot be read stops the process before the Lease is taken or anything is written.

        Raises:
            SourceUnavailableError: A first LIST was refused (404: a CRD is missing; 403:
                RBAC); nothing was written.
        """
        self._start_caches()
        for informer in self._caches:
            try:
                await informer.wait_synced()
            except KubeAPIError as exc:
                raise SourceUnavailableError(informer.name, str(exc)) from None

    async def start(self) -> None:
        """Start the caches and the workers (idempotent); workers wait for the caches."""
        self._start_caches()
        self._workers.start()

    def _start_caches(self) -> None:
        # Once per start: a shared cache counts its users' starts and stops.
        if not self._caches_started:
            self._caches_started = True
            for informer in self._caches:
                informer.start()

    async def wait_synced(self) -> None:
        """Wait until every cache has listed once.

        Raises:
            KubeAPIError: A first LIST was refused.
        """
        for informer in self._caches:
            await informer.wait_synced()

    def ready(self) -> bool:
        """``/readyz``: a standby waiting on the Lease, or started with every cache synced."""
        if self.elector is not None and not self.elector.is_leader:
            return True
        return self._workers.running and all(i.has_synced for i in self._caches)

    async def stop(self, grace: float | None = None) -> None:
        """Stop the workers and the caches.

        Args:
            grace: Seconds running reconciles get to finish before they are cancelled
                (default: :attr:`graceful_shutdown`).
        """
        await self._workers.stop(self.graceful_shutdown if grace is None else grace)
        if self._caches_started:
            self._caches_started = False
            for informer in reversed(self._caches):
                await informer.stop()

    async def run(self) -> None:
        """Run until cancelled (the :class:`~cluster_inventory.controller.manager.Runnable` part).

        Raises:
            KubeAPIError: A first LIST was refused.
        """
        try:
            await self.start()
            await self.wait_synced()
            await asyncio.Event().wait()
        finally:
            await self.stop()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

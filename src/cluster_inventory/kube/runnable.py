"""A controller that runs until cancelled, optionally only while it holds a Lease.

controller-runtime's ``manager.Runnable`` with ``NeedLeaderElection``: the cluster
manager's neighbours on the hub (the placement scheduler, the multicluster runtime, the
Argo CD and MultiKueue syncs) all start, wait for their caches, run until cancelled and,
with leader election, run only while they lead and report a lost Lease so the process can
exit. The lifecycle around ``start``/``wait_synced``/``stop`` is written here once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Self

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory.kube._k8s import ApiClient
from cluster_inventory.kube._metrics import ReconcileMetrics
from cluster_inventory.kube.errors import KubeAPIError, SourceUnavailableError
from cluster_inventory.kube.informer import Informer
from cluster_inventory.kube.leaderelection import LeaderElectionConfig, LeaderElector
from cluster_inventory.kube.reconcile import Result, reconcile_loop, stop_workers
from cluster_inventory.kube.workqueue import WorkQueue

__all__ = ["LeaderElectedRunnable", "QueueController"]


class LeaderElectedRunnable:
    """Mixin: ``async with``, :meth:`run` and :meth:`ready` over ``start``/``stop``.

    Subclasses provide ``hub`` (the API client holding the Lease), ``registry`` (for the
    leader-election metrics), ``start()``, ``stop()`` and ``wait_synced()``.

    Attributes:
        elector: The leader elector while :meth:`run` runs with leader election.
    """

    hub: ApiClient
    registry: CollectorRegistry = REGISTRY
    elector: LeaderElector | None = None

    async def start(self) -> None:
        """Start informers and workers (idempotent)."""
        raise NotImplementedError

    async def stop(self) -> None:
        """Stop workers and informers (idempotent)."""
        raise NotImplementedError

    async def wait_synced(self) -> None:
        """Wait until the caches have listed once; raise the first LIST's refusal."""
        raise NotImplementedError

    async def prepare(self) -> None:
        """Before leader election: start what only reads and wait until it has read once.

        controller-runtime starts its caches on every replica, standbys included; here that
        also means a source that cannot be read (a missing CRD, a forbidden LIST) stops the
        process before the Lease is taken or anything is written. Default: nothing.

        Raises:
            SourceUnavailableError: A source cannot be read.
        """

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def run(self, *, leader_election: LeaderElectionConfig | None = None) -> bool:
        """Run until cancelled; with ``leader_election``, only while holding the Lease.

        Args:
            leader_election: Lease settings on the hub (client-go timings by default), or
                None to run without election.

        Returns:
            True if leadership was lost (exit and let the supervisor restart the process, as
            controller-runtime does); never returns otherwise until cancelled.

        Raises:
            KubeAPIError: A first LIST was refused (a missing CRD, missing RBAC).
        """

        async def work() -> None:
            async with self:
                await self.wait_synced()
                await asyncio.Event().wait()

        try:
            await self.prepare()
            if leader_election is None:
                await work()
                return False
            self.elector = LeaderElector(self.hub, leader_election, registry=self.registry)
            return await self.elector.run(work)
        finally:
            await self.stop()


class QueueController(LeaderElectedRunnable):
    """Informers feeding one work queue, drained by workers once every cache has synced.

    client-go's controller shape, shared by the hub controllers (the placement scheduler, the
    Argo CD and MultiKueue syncs). Subclasses set ``queue``, ``controller`` (the metrics'
    ``controller`` label), ``log`` and ``workers`` in ``__init__``, list their informers in
    :meth:`informers` (start and sync order) and implement :meth:`reconcile`.

    Workers wait for every cache before the first reconcile: a decision over half-listed
    caches would write (and later undo) a wrong answer.
    """

    queue: WorkQueue[str]
    controller: str
    workers: int = 1
    log: logging.Logger = logging.getLogger("cluster_inventory.kube.reconcile")
    _tasks: tuple[asyncio.Task[None], ...] = ()

    def informers(self) -> list[Informer]:
        """Every informer, in the order to start and to wait for."""
        raise NotImplementedError

    async def reconcile(self, key: str) -> Result | None:
        """Reconcile one queue key (level-based)."""
        raise NotImplementedError

    def describe(self, key: str) -> dict[str, str]:
        """Log fields naming ``key`` (default ``{"key": key}``)."""
        return {"key": key}

    async def prepare(self) -> None:
        """Start the informers and wait for their first LIST (before leader election).

        Raises:
            SourceUnavailableError: A first LIST was refused (e.g. 404: a CRD is missing;
                403: RBAC); nothing was written.
        """
        for informer in self.informers():
            informer.start()
        for informer in self.informers():
            try:
                await informer.wait_synced()
            except KubeAPIError as exc:
                raise SourceUnavailableError(informer.name, str(exc)) from None

    async def start(self) -> None:
        """Start the informers and the workers (idempotent)."""
        if self._tasks:
            return
        for informer in self.informers():
            informer.start()
        metrics = ReconcileMetrics.for_registry(self.registry)
        metrics.start(self.controller, self.workers)
        loop = asyncio.get_running_loop()
        self._tasks = tuple(
            loop.create_task(self._worker(metrics), name=f"{self.controller} worker {i}")
            for i in range(self.workers)
        )

    async def _worker(self, metrics: ReconcileMetrics) -> None:
        await self.wait_synced()
        await reconcile_loop(
            self.queue,
            self.reconcile,
            controller=self.controller,
            metrics=metrics,
            describe=self.describe,
            log=self.log,
        )

    async def wait_synced(self) -> None:
        """Wait until every informer has listed once.

        Raises:
            KubeAPIError: A first LIST was refused (e.g. 404: a CRD is missing; 403: RBAC).
        """
        for informer in self.informers():
            await informer.wait_synced()

    def ready(self) -> bool:
        """``/readyz``: a standby waiting on the Lease, or a started leader with synced caches."""
        if self.elector is not None and not self.elector.is_leader:
            return True
        return bool(self._tasks) and all(i.has_synced for i in self.informers())

    async def stop(self, grace: float = 10.0) -> None:
        """Stop the workers (running reconciles get ``grace`` seconds) and the informers."""
        tasks = list(self._tasks)
        self._tasks = ()
        if tasks:
            self.queue.shut_down()
            await stop_workers(tasks, grace)
        for informer in reversed(self.informers()):
            await informer.stop()

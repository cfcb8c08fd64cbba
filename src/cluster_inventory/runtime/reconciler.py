"""Reconcilers across the fleet: requests, results and the per-kind controller.

A reconciler is ``async def reconcile(request, cluster) -> Result | None``. It is level-based,
as in controller-runtime: it reads what is there (the cluster's cache, the hub) and converges,
whatever event woke it. Its controller feeds it from one work queue shared by every engaged
cluster (client-go semantics: no duplicate keys, one worker per key at a time, per-key
backoff 5 ms to 1000 s with an overall 10/s bucket). Outcomes, backoff and metrics are those
of :class:`cluster_inventory.controller.Workers` (controller-runtime's): a result
asks for a requeue, an exception is retried with backoff, a ``TerminalError`` is not.

A reconcile runs as a task of its cluster, so disengaging the cluster cancels it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.controller.reconcile import RequestDropped, Result, Workers
from cluster_inventory.kube.workqueue import WorkQueue, WorkQueueMetrics
from cluster_inventory.runtime.cluster import EngagedCluster, WatchSpec

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["FleetController", "Reconciler", "Request", "Result"]

_log = logging.getLogger("cluster_inventory.runtime")


@dataclass(frozen=True, order=True)
class Request:
    """What to reconcile: an object on one engaged cluster.

    Attributes:
        cluster: The cluster's name in the fleet (its ClusterProfile's ``namespace/name``).
        namespace: The object's namespace on that cluster (``""`` if cluster-scoped).
        name: The object's name.
    """

    cluster: str
    namespace: str
    name: str

    @property
    def key(self) -> str:
        """``namespace/name``, or ``name`` for a cluster-scoped object."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


#: ``async (request, cluster) -> Result | None``.
Reconciler = Callable[[Request, EngagedCluster], Coroutine[Any, Any, Result | None]]


class FleetController:
    """One reconciler for one kind, run on every engaged cluster.

    Made by :meth:`FleetManager.add_reconciler`; users call :meth:`enqueue` and
    :meth:`enqueue_all` to trigger reconciles from outside the watched kind (a hub object,
    an engage hook).

    Attributes:
        name: Controller name (metrics label ``controller``, logs).
        watch: The kind and scope cached on every cluster; every change enqueues a request.
        queue: The work queue of requests.
    """

    def __init__(
        self,
        name: str,
        watch: WatchSpec,
        reconcile: Reconciler,
        clusters: Mapping[str, EngagedCluster],
        *,
        max_concurrent_reconciles: int = 1,
        reconcile_timeout: float | None = None,
        registry: CollectorRegistry,
    ) -> None:
        if max_concurrent_reconciles < 1:
            raise ValueError(f"controller {name}: max_concurrent_reconciles must be >= 1")
        if reconcile_timeout is not None and reconcile_timeout <= 0:
            raise ValueError(f"controller {name}: reconcile_timeout must be > 0 seconds")
        self.name = name
        self.watch = watch
        self.reconcile = reconcile
        self.max_concurrent_reconciles = max_concurrent_reconciles
        self.reconcile_timeout = reconcile_timeout
        self._clusters = clusters
        self._metrics = kube.ReconcileMetrics.for_registry(registry)
        self.queue: WorkQueue[Request] = WorkQueue(
            name, metrics=kube.collectors_for(WorkQueueMetrics, registry)
        )
        self._workers = Workers(
            self.queue,
            self._reconcile,
            controller=name,
            count=max_concurrent_reconciles,
            registry=registry,
            describe=self._describe,
            log=_log,
        )

    def enqueue(self, request: Request) -> None:
        """Queue one request (coalesced with a waiting equal one)."""
        self.queue.add(request)

    def enqueue_all(self, namespace: str, name: str) -> None:
        """Queue ``namespace/name`` on every engaged cluster (e.g. after a hub change)."""
        for cluster in list(self._clusters):
            self.queue.add(Request(cluster, namespace, name))

    def engage(self, cluster: EngagedCluster) -> None:
        """Feed the cluster's cache events of the watched kind into the queue.

        The informer replays what it holds as ADDED, so every existing object is reconciled
        once on engagement.
        """
        name = cluster.name

        def on_event(_: str, obj: dict[str, Any], __: dict[str, Any] | None) -> None:
            meta = objects.meta(obj)
            self.queue.add(Request(name, meta.get("namespace") or "", meta.get("name", "")))

        cluster.add_event_handler(self.watch, on_event)

    async def _reconcile(self, request: Request) -> Result | None:
        cluster = self._clusters.get(request.cluster)
        if cluster is None or cluster.closing:
            raise RequestDropped
        task: asyncio.Task[Result | None] = cluster.run(self.reconcile(request, cluster))
        try:
            if self.reconcile_timeout is None:
                return await task
            async with asyncio.timeout(self.reconcile_timeout) as deadline:
                return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.cancelled() and (current is None or not current.cancelling()):
                raise RequestDropped from None  # the cluster was disengaged under the reconcile
            raise
        except TimeoutError:
            if self.reconcile_timeout is not None and deadline.expired():
                self._metrics.timeouts.labels(self.name).inc()
                raise TimeoutError(
                    f"reconcile of {request.key} on {request.cluster} took longer than "
                    f"{self.reconcile_timeout} s"
                ) from None
            raise

    def start(self) -> None:
        """Start the workers."""
        self._workers.start()

    def _describe(self, request: Request) -> dict[str, str]:
        return {"controller": self.name, "cluster": request.cluster, "object": request.key}

    async def stop(self, grace: float) -> None:
        """Stop taking requests; let running reconciles finish for ``grace`` seconds."""
        await self._workers.stop(grace)

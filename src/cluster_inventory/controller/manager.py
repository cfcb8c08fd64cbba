"""One process Manager: the hub client, leader election, probes, metrics and signals.

controller-runtime's ``pkg/manager`` in this project's terms. Every long-running command
(``manager run``, ``argocd sync``, ``multikueue sync``, ``placement run``, ``apply --watch``,
the runtime) is a :class:`Manager` with runnables added; the command only parses flags::

    manager = Manager(connection, lease=lease, health=("", 8081), metrics=("", 8080))
    manager.add(lambda hub: PlacementScheduler(hub, namespaces=["team-a"]))
    lost = await manager.run(handle_signals=True)

The order is controller-runtime's: the endpoints come up, every runnable prepares (caches list
once, on every replica: a source that cannot be read ends the process before the Lease is taken
or anything is written), the replica waits for the Lease, then the runnables that need
leadership run. A lost Lease ends :meth:`Manager.run` with True (exit and let the supervisor
restart, as controller-runtime does). SIGTERM and SIGINT stop every runnable and release the
Lease. ``graceful_shutdown`` is the one shutdown grace: the Manager hands it to every runnable
with a ``graceful_shutdown`` attribute (running reconciles get that long to finish, then are
cancelled) and bounds each stop by it plus ``STOP_ALLOWANCE`` (3 s + 1 s by default; Kubernetes
gives a pod 30 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Protocol, Self, runtime_checkable

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory import credentials, kube
from cluster_inventory.controller import gc_pauses
from cluster_inventory.controller.gc_pauses import GcPauses
from cluster_inventory.controller.reconcile import DEFAULT_GRACEFUL_SHUTDOWN, STOP_ALLOWANCE
from cluster_inventory.controller.sharding import ShardConfig, ShardMembership
from cluster_inventory.kube.leaderelection import LeaderElectionConfig, LeaderElector

__all__ = ["LeaderElectedRunnable", "Manager", "Runnable"]

_log = logging.getLogger("cluster_inventory.controller.manager")


@runtime_checkable
class Runnable(Protocol):
    """What a :class:`Manager` runs (controller-runtime's ``manager.Runnable``).

    A runnable that should run on every replica, not only the leader, has an attribute
    ``needs_leader_election = False`` (controller-runtime's ``LeaderElectionRunnable``).
    """

    async def prepare(self) -> None:
        """Before leader election: start what only reads and wait until it has read once.

        Raises:
            SourceUnavailableError: A source cannot be read; nothing was written.
        """

    async def run(self) -> object:
        """Work until cancelled, then clean up (stop caches, workers, connections).

        What it returns is ignored; a runnable that returns or raises ends the Manager.
        """

    def ready(self) -> bool:
        """Readiness (``/readyz``); must not block."""

    async def stop(self) -> None:
        """Stop whatever :meth:`prepare` or :meth:`run` started; idempotent.

        The Manager calls it on every way out, so caches started by a ``prepare`` are
        stopped even when another runnable's ``prepare`` failed.
        """


#: A runnable, or a function making one from the hub client the Manager opened.
RunnableFactory = Callable[[kube.ApiClient], Runnable]


@dataclass(eq=False)
class Manager:
    """Runs runnables in one process: hub client, Lease, ``/healthz`` ``/readyz`` ``/metrics``.

    Args:
        hub: The hub: a connection (kubectl's rules found it; the Manager opens and closes
            the client) or an open client (the caller closes it).
        lease: Leader-election settings (client-go timings by default), or None to run every
            runnable at once without election.
        shard: Share members among replicas (``docs/scale.md``): the Manager joins the shard
            group first (:class:`ShardMembership`, a Lease per replica), hands the membership
            to every runnable with a ``shard`` attribute and runs those on every replica,
            without leader election. Runnables without one still need the Lease.
        health: (host, port) of ``/healthz`` and ``/readyz``, or None.
        metrics: (host, port) of ``/metrics``, or None.
        registry: Prometheus registry the endpoints expose (and the Lease gauge uses).
        graceful_shutdown: Seconds running reconciles get to finish on a stop (SIGTERM, a lost
            Lease, a runnable ending): set on every runnable that has a ``graceful_shutdown``
            attribute before it prepares. A runnable still stopping ``STOP_ALLOWANCE`` (1 s)
            after that is left behind, so the process ends and the Lease is released.

    Attributes:
        elector: The leader elector while :meth:`run` runs with election.
        membership: This replica's shard membership while :meth:`run` runs with ``shard``.
        runnables: What runs, once the hub client is open (factories are called then).
    """

    hub: kube.ClusterConnection | kube.ApiClient
    _: KW_ONLY
    lease: LeaderElectionConfig | None = None
    shard: ShardConfig | None = None
    health: tuple[str, int] | None = None
    metrics: tuple[str, int] | None = None
    registry: CollectorRegistry = REGISTRY
    graceful_shutdown: float = DEFAULT_GRACEFUL_SHUTDOWN
    elector: LeaderElector | None = field(default=None, init=False)
    membership: ShardMembership | None = field(default=None, init=False)
    runnables: list[Runnable] = field(default_factory=list, init=False)
    _pending: list[Runnable | RunnableFactory] = field(default_factory=list, init=False)
    _started: bool = field(default=False, init=False)

    def add(self, runnable: Runnable | RunnableFactory) -> Self:
        """Add a runnable, or a factory called with the hub client when :meth:`run` opens it.

        Returns:
            This manager, for chaining.
        """
        self._pending.append(runnable)
        return self

    def ready(self) -> bool:
        """``/readyz``: a standby waiting on the Lease, or every runnable ready."""
        if not self._started:
            return False
        if self.elector is not None and not self.elector.is_leader:
            return True
        return all(r.ready() for r in self.runnables)

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[kube.ApiClient]:
        if isinstance(self.hub, kube.ClusterConnection):
            async with await credentials.hub_client(self.hub) as client:
                yield client
        else:
            yield self.hub

    async def run(
        self,
        *,
        handle_signals: bool = False,
        started: Callable[[], Awaitable[None] | None] | None = None,
    ) -> bool:
        """Run every runnable until cancelled, a runnable ends, or the Lease is lost.

        Args:
            handle_signals: Stop on SIGTERM and SIGINT, time garbage collections and settle
                the collector once every runnable prepared (:mod:`.gc_pauses`): a process's
                main Manager.
            started: Called once the endpoints are up.

        Returns:
            True if leadership was lost; False otherwise (stopped, or a runnable ended).

        Raises:
            SourceUnavailableError: A runnable's source cannot be read at start (before
                the Lease is taken).
            KubeConfigError: The hub's TLS material does not load.
            OSError: An endpoint address cannot be bound.
        """
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        pauses = GcPauses(self.registry) if handle_signals else None
        if handle_signals and task is not None:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, task.cancel)
        if pauses is not None:
            pauses.start()
            gc_pauses.enable()
        # aiohttp's server, imported when a Manager runs: a process that only uses the
        # runtime or a controller inside its own loop never loads it (issue 48).
        from cluster_inventory.kube.endpoints import serve_endpoints

        try:
            async with self._client() as hub:
                self.runnables = [r if isinstance(r, Runnable) else r(hub) for r in self._pending]
                for runnable in self.runnables:
                    if hasattr(runnable, "graceful_shutdown"):
                        runnable.graceful_shutdown = self.graceful_shutdown
                if self.shard is not None:
                    self.membership = ShardMembership(hub, self.shard, registry=self.registry)
                    for runnable in self.runnables:
                        if hasattr(runnable, "shard"):
                            runnable.shard = self.membership
                    # Prepared first (members are owned before anyone places them), stopped
                    # last (our Lease goes once nothing of ours writes any more).
                    self.runnables.insert(0, self.membership)
                async with serve_endpoints(
                    self.ready, health=self.health, metrics=self.metrics, registry=self.registry
                ):
                    self._started = True
                    if started is not None:
                        result = started()
                        if result is not None:
                            await result
                    return await self._run(hub)
        finally:
            self._started = False
            if pauses is not None:
                pauses.stop()
                gc_pauses.enable(False)
            if handle_signals:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(sig)

    async def _run(self, hub: kube.ApiClient) -> bool:
        try:
            return await self._prepare_and_run(hub)
        finally:
            stops = [asyncio.ensure_future(r.stop()) for r in reversed(self.runnables)]
            await self._stop(stops, cancel=False)

    async def _prepare_and_run(self, hub: kube.ApiClient) -> bool:
        for runnable in self.runnables:
            await runnable.prepare()
        gc_pauses.settle()  # the caches listed once: most of what lives long
        everywhere = [
            r
            for r in self.runnables
            if not getattr(r, "needs_leader_election", True)
            or (self.membership is not None and hasattr(r, "shard"))
        ]
        leading = [r for r in self.runnables if r not in everywhere]
        if self.lease is None or not leading:
            await self._supervise(self.runnables)
            return False
        self.elector = LeaderElector(
            hub, self.lease, registry=self.registry, background=kube.lease_loop()
        )
        for runnable in leading:
            if hasattr(runnable, "elector"):
                runnable.elector = self.elector
        others = asyncio.ensure_future(self._supervise(everywhere)) if everywhere else None
        try:
            lost = await self.elector.run(lambda: self._supervise(leading))
        finally:
            if others is not None:
                await self._stop([others])
        if lost:
            _log.error("leadership lost; stopping", extra={"object": self.lease.identity})
        return lost

    async def _supervise(self, runnables: list[Runnable]) -> None:
        """Run ``runnables`` until cancelled; the first that ends or fails ends them all."""
        if not runnables:
            await asyncio.Event().wait()
        tasks = [asyncio.ensure_future(r.run()) for r in runnables]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await self._stop(tasks)
        for t in done:
            failure = None if t.cancelled() else t.exception()
            if failure is not None:
                raise failure

    async def _stop(self, tasks: Sequence[asyncio.Future[Any]], *, cancel: bool = True) -> None:
        """Cancel ``tasks``; wait up to ``graceful_shutdown`` + ``STOP_ALLOWANCE`` for clean-up."""
        if cancel:
            for t in tasks:
                t.cancel()
        if not tasks:
            return
        limit = self.graceful_shutdown + STOP_ALLOWANCE
        done, pending = await asyncio.wait(tasks, timeout=limit)
        for t in done:
            failure = None if t.cancelled() else t.exception()
            if failure is not None and not cancel:
                _log.error("stopping a runnable failed: %s", failure or type(failure).__name__)
        if pending:
            _log.warning(
                "%d runnable(s) still stopping after %.0f s; leaving them",
                len(pending),
                limit,
            )


class LeaderElectedRunnable:
    """Mixin making an object with ``start``/``stop``/``wait_synced`` a :class:`Runnable`.

    For components that are also used on their own (the runtime's ``FleetManager``):
    ``async with`` starts and stops them, :meth:`run` runs them until cancelled and, given a
    Lease, runs them under a :class:`Manager` with leader election. Subclasses provide
    ``hub`` (the API client holding the Lease), ``registry``, and the coroutines ``start()``,
    ``stop()`` and ``wait_synced()``.

    Attributes:
        elector: The leader elector while :meth:`run` runs with leader election.
        graceful_shutdown: Seconds running reconciles get to finish on ``stop()``; a
            :class:`Manager` running this object sets it to its own.
    """

    hub: kube.ApiClient
    registry: CollectorRegistry = REGISTRY
    graceful_shutdown: float = DEFAULT_GRACEFUL_SHUTDOWN
    elector: LeaderElector | None = None
    _synced_once: bool = False

    async def start(self) -> None:  # pragma: no cover - provided by the subclass
        """Start caches and workers (idempotent)."""

    async def stop(self) -> None:  # pragma: no cover - provided by the subclass
        """Stop workers and caches (idempotent)."""

    async def wait_synced(self) -> None:  # pragma: no cover - provided by the subclass
        """Wait until the caches have listed once."""

    async def prepare(self) -> None:
        """Before leader election: nothing by default (see :meth:`Runnable.prepare`)."""

    def ready(self) -> bool:
        """``/readyz``: a standby waiting on the Lease, or started with synced caches."""
        if self.elector is not None and not self.elector.is_leader:
            return True
        return self._synced_once

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def run(
        self,
        *,
        leader_election: LeaderElectionConfig | None = None,
        shard: ShardConfig | None = None,
    ) -> bool:
        """Run until cancelled; with ``leader_election``, only while holding the Lease.

        Args:
            leader_election: Lease settings on the hub, or None to run without election.
            shard: Share the members with the other replicas of this shard group (the
                object needs a ``shard`` attribute; see :class:`Manager`), or None.

        Returns:
            True if leadership was lost (exit and let the supervisor restart the process, as
            controller-runtime does); never returns otherwise until cancelled.

        Raises:
            KubeAPIError: A first LIST was refused (a missing CRD, missing RBAC).
        """
        if leader_election is not None or shard is not None:
            manager = Manager(
                self.hub,
                lease=leader_election,
                shard=shard,
                registry=self.registry,
                graceful_shutdown=self.graceful_shutdown,
            )
            return await manager.add(self).run()
        try:
            await self.prepare()
            async with self:
                await self.wait_synced()
                self._synced_once = True
                await asyncio.Event().wait()
        finally:
            self._synced_once = False
            await self.stop()
        return False  # pragma: no cover - the wait above ends only by cancellation

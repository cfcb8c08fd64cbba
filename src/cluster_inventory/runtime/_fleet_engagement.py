"""Engaging and disengaging a cluster: the side of the fleet manager that a provider drives.

Engaging takes a connection from the shared pool, starts one informer per watched kind and
waits for their sync (bounded by the policy's ``cache_sync_timeout``), then hands the cluster
to the reconcilers and runs the engage hooks; whatever fails, nothing stays engaged.
Disengaging runs the disengage hooks, cancels running reconciles and lets go of the
connection.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from cluster_inventory.credentials import ClusterAccess
from cluster_inventory.runtime._metrics import FleetMetrics
from cluster_inventory.runtime.cluster import ConnectionPool, EngagedCluster
from cluster_inventory.runtime.engagement import EngagementPolicy
from cluster_inventory.runtime.errors import FleetError
from cluster_inventory.runtime.reconciler import FleetController

__all__ = ["ClusterHook", "FleetEngagement"]

#: ``async (cluster) -> None``, run after a cluster is engaged or before it is disengaged.
ClusterHook = Callable[[EngagedCluster], Awaitable[None]]

_log = logging.getLogger("cluster_inventory.runtime")


class FleetEngagement:
    """Engage and disengage clusters (:class:`~cluster_inventory.runtime.provider.ClusterAware`).

    A base of :class:`~cluster_inventory.runtime.FleetManager`, which sets every attribute
    named here.
    """

    name: str
    policy: EngagementPolicy
    _pool: ConnectionPool
    _metrics: FleetMetrics
    _clusters: dict[str, EngagedCluster]
    _controllers: list[FleetController]
    _on_engage: list[ClusterHook]
    _on_disengage: list[ClusterHook]

    async def engage(
        self,
        name: str,
        access: ClusterAccess,
        *,
        profile: dict[str, Any],
        member_id: str | None = None,
    ) -> EngagedCluster:
        """Engage cluster ``name``: connection, caches, reconcilers' handlers, engage hooks.

        Called by the provider (:class:`~cluster_inventory.runtime.provider.ClusterAware`).

        Args:
            name: The cluster's name in the fleet; not engaged now.
            access: How to reach the member.
            profile: Its ClusterProfile (decoded dict; ``{}`` if it has none).
            member_id: The member's ``inventory-member-id``, if known.

        Returns:
            The engaged cluster.

        Raises:
            FleetError: ``name`` is engaged already.
            TimeoutError: The caches did not fill within ``policy.cache_sync_timeout``.
            Exception: What the connection or an engage hook raised (nothing stays engaged).
        """
        if name in self._clusters:
            raise FleetError(f"fleet {self.name}: cluster {name} is engaged already")
        started = time.perf_counter()
        try:
            connection = await self._pool.acquire(access)
        except Exception:
            self._metrics.engagements.labels(self.name, "error").inc()
            raise
        cluster = EngagedCluster(
            name=name,
            profile=profile,
            member_id=member_id,
            access=access,
            connection=connection,
            pool=self._pool,
        )
        timeout = self.policy.cache_sync_timeout
        try:
            await cluster.start_caches([c.watch for c in self._controllers], timeout)
            self._clusters[name] = cluster
            for controller in self._controllers:
                controller.engage(cluster)
            for hook in self._on_engage:
                await hook(cluster)
        except BaseException as exc:
            self._clusters.pop(name, None)
            await cluster.close()
            if not isinstance(exc, asyncio.CancelledError):
                self._metrics.engagements.labels(self.name, "error").inc()
            if isinstance(exc, TimeoutError):
                raise TimeoutError(
                    f"cluster {name}: caches did not sync within {timeout} s"
                ) from None
            raise
        self._metrics.engagements.labels(self.name, "success").inc()
        self._metrics.engaged.labels(self.name).set(len(self._clusters))
        self._metrics.engage_seconds.labels(self.name).observe(time.perf_counter() - started)
        _log.info("engaged", extra={"cluster": name, "server": access.server})
        return cluster

    async def disengage(self, name: str, reason: str) -> None:
        """Disengage cluster ``name``: hooks, cancel its reconciles, close it (no-op if unknown).

        Args:
            name: An engaged cluster.
            reason: Metric label and log word (``deleted``, ``unhealthy``, ``stopped``, ...).
        """
        cluster = self._clusters.pop(name, None)
        if cluster is None:
            return
        try:
            for hook in self._on_disengage:
                try:
                    await hook(cluster)
                except Exception as exc:  # the cluster goes regardless
                    _log.error("disengage hook failed: %s", exc, extra={"cluster": name})
        finally:  # even when a stop cancels the hook: no client may be left open
            await cluster.close()
        self._metrics.disengagements.labels(self.name, reason).inc()
        self._metrics.engaged.labels(self.name).set(len(self._clusters))
        _log.info("disengaged (%s)", reason, extra={"cluster": name})

"""A controller that runs until cancelled, optionally only while it holds a Lease.

controller-runtime's ``manager.Runnable`` with ``NeedLeaderElection``: the cluster
manager's neighbours on the hub (the placement scheduler, the multicluster runtime, the
Argo CD and MultiKueue syncs) all start, wait for their caches, run until cancelled and,
with leader election, run only while they lead and report a lost Lease so the process can
exit. The lifecycle around ``start``/``wait_synced``/``stop`` is written here once.
"""

from __future__ import annotations

import asyncio
from typing import Self

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory.kube._k8s import ApiClient
from cluster_inventory.kube.leaderelection import LeaderElectionConfig, LeaderElector

__all__ = ["LeaderElectedRunnable"]


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

        if leader_election is None:
            await work()
            return False
        self.elector = LeaderElector(self.hub, leader_election, registry=self.registry)
        return await self.elector.run(work)

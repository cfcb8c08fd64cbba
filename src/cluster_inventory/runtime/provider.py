"""The contract between a cluster provider (how clusters are found) and the fleet manager.

multicluster-runtime keeps the two apart: a provider (``providers/`` there) watches some
source of clusters and tells an ``Aware`` component (its ``pkg/multicluster``) to engage or
disengage each one; the manager runs the per-cluster controllers and never asks where a
cluster came from. Here the same seam is two Protocols: :class:`ClusterProvider`, which
:class:`~cluster_inventory.runtime.FleetManager` starts and stops, and :class:`ClusterAware`,
which the fleet manager offers the provider while it runs.

The shipped provider is :class:`~cluster_inventory.runtime.providers.ClusterProfileProvider`
(ClusterProfiles on the hub, KEP-4322, reached through the consumer's provider file,
KEP-5339). Another source (a static file, a cloud fleet) only has to satisfy
:class:`ClusterProvider` to feed the same fleet manager.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from cluster_inventory.credentials import ClusterAccess
    from cluster_inventory.runtime.cluster import EngagedCluster

__all__ = ["ClusterAware", "ClusterProvider"]


class ClusterAware(Protocol):
    """What a provider drives: engage and disengage clusters by name (the fleet manager).

    multicluster-runtime's ``multicluster.Aware``. Names are the provider's own and unique
    within one fleet (the ClusterProfile provider uses ``namespace/name``). A provider calls
    these from its own tasks, never concurrently for the same name.
    """

    async def engage(
        self,
        name: str,
        access: ClusterAccess,
        *,
        profile: dict[str, Any],
        member_id: str | None = None,
    ) -> EngagedCluster:
        """Build a cluster for ``access``, fill its caches, start its reconcilers and hooks.

        Args:
            name: The cluster's name in the fleet (not engaged yet).
            access: How to reach the member (no credential; the exec plugin supplies it).
            profile: The ClusterProfile it comes from, as a decoded dict (``{}`` if none).
            member_id: The member's ``inventory-member-id``, if known.

        Returns:
            The engaged cluster; the provider may keep ``cluster.profile`` current.

        Raises:
            TimeoutError: Its caches did not fill within the cache sync timeout.
            Exception: Anything the connection or an engage hook raised; nothing stays
                engaged and the provider retries as it sees fit.
        """
        ...

    async def disengage(self, name: str, reason: str) -> None:
        """Run the disengage hooks, cancel its reconciles and close it (no-op if unknown).

        Args:
            name: A cluster this provider engaged.
            reason: The metric label and log word (``deleted``, ``unhealthy``, ...).
        """
        ...


class ClusterProvider(Protocol):
    """How clusters are found: a source the fleet manager starts, waits for and stops.

    After :meth:`start` the provider engages and disengages clusters on ``fleet`` as its
    source changes. :meth:`stop` must return promptly (an engagement under way is
    cancelled, not waited for); the fleet manager disengages whatever is still engaged
    afterwards, so a provider need not.
    """

    async def start(self, fleet: ClusterAware) -> None:
        """Start watching the source and engaging clusters on ``fleet`` (idempotent).

        Raises:
            FleetError: The provider was stopped before (providers run once).
        """
        ...

    async def wait_synced(self) -> None:
        """Wait until the source has been read once.

        Raises:
            KubeAPIError: The source refused the first read (401, 403, 404).
        """
        ...

    async def stop(self) -> None:
        """Stop watching and cancel engagements under way (idempotent)."""
        ...

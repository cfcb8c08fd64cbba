"""Cluster providers: how the fleet manager finds the member clusters it engages.

multicluster-runtime keeps its providers (``providers/``) apart from its manager; here a
provider satisfies :class:`~cluster_inventory.runtime.provider.ClusterProvider` and drives a
:class:`~cluster_inventory.runtime.FleetManager` through
:class:`~cluster_inventory.runtime.provider.ClusterAware`. One provider ships:

- :class:`ClusterProfileProvider` (``clusterprofile``): ClusterProfiles on the hub
  (KEP-4322), ready ones engaged, reached through the consumer's provider file (KEP-5339,
  :class:`ProviderFile`, re-read while it runs), optionally narrowed to what a
  PlacementDecision names (KEP-5313).
"""

from __future__ import annotations

from cluster_inventory.runtime.providers.clusterprofile import (
    ClusterProfileOptions,
    ClusterProfileProvider,
    Readiness,
)
from cluster_inventory.runtime.providers.provider_file import ProviderFile

__all__ = ["ClusterProfileOptions", "ClusterProfileProvider", "ProviderFile", "Readiness"]

"""runtime: a multicluster controller runtime for Python controller authors.

A :class:`FleetManager` runs reconcilers registered per kind on every member cluster its
cluster provider engages. The default provider, :class:`ClusterProfileProvider`
(:mod:`~cluster_inventory.runtime.providers`), watches ClusterProfiles on the hub, engages
each member cluster when its profile is ready (pluggable readiness, default
``ControlPlaneHealthy=True``) and reaches it through the consumer's provider file and exec
plugin (:mod:`cluster_inventory.credentials`)::

    fleet = FleetManager(hub, "provider.json", namespaces=["team-a"])

    @fleet.reconciler("v1/ConfigMap", namespace="default")
    async def reconcile(request: Request, cluster: EngagedCluster) -> Result | None:
        cm = cluster.get("v1/ConfigMap", request.name, request.namespace)
        ...

    await fleet.run()

Another source of clusters only has to satisfy the :class:`ClusterProvider` Protocol
(engaging through :class:`ClusterAware`): ``FleetManager(hub, provider=...)``.
``FleetManager(..., placement=(namespace, decision_key))`` engages only the clusters a
PlacementDecision names (:func:`read_decisions` reads one the same way).

See ``docs/runtime.md`` for the engagement rules, the metrics and a worked example.
"""

from __future__ import annotations

import warnings
from typing import Any

from cluster_inventory.controller import TerminalError
from cluster_inventory.runtime.cluster import EngagedCluster, SharedConnection, WatchSpec
from cluster_inventory.runtime.decisions import DecisionSet, group_decisions, read_decisions
from cluster_inventory.runtime.engagement import (
    Action,
    EngagementPlan,
    EngagementPolicy,
    control_plane_healthy,
    group_holder,
    member_id,
    plan_engagement,
)
from cluster_inventory.runtime.errors import CacheNotWatched, ClusterNotEngaged, FleetError
from cluster_inventory.runtime.fleet import ClusterHook, FleetManager, Readiness
from cluster_inventory.runtime.provider import ClusterAware, ClusterProvider
from cluster_inventory.runtime.providers import ClusterProfileProvider
from cluster_inventory.runtime.reconciler import FleetController, Reconciler, Request, Result

__all__ = [
    "Action",
    "CacheNotWatched",
    "ClusterAware",
    "ClusterHook",
    "ClusterNotEngaged",
    "ClusterProfileProvider",
    "ClusterProvider",
    "DecisionSet",
    "EngagedCluster",
    "EngagementPlan",
    "EngagementPolicy",
    "FleetController",
    "FleetError",
    "FleetManager",
    "Readiness",
    "Reconciler",
    "Request",
    "Result",
    "SharedConnection",
    "TerminalError",
    "WatchSpec",
    "control_plane_healthy",
    "group_decisions",
    "group_holder",
    "member_id",
    "plan_engagement",
    "read_decisions",
]


def __getattr__(name: str) -> Any:
    # ``Cluster`` was this class's name until the API's own ``Cluster`` (a kubeconfig-style
    # cluster entry in a ClusterProfile's access provider) made two public classes of one name;
    # README and docs/runtime.md showed ``from cluster_inventory.runtime import Cluster``.
    if name == "Cluster":
        warnings.warn(
            "cluster_inventory.runtime.Cluster is deprecated; use EngagedCluster",
            DeprecationWarning,
            stacklevel=2,
        )
        return EngagedCluster
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

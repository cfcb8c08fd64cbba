"""Typed models, constants and CRD manifests of the Cluster Inventory API. No I/O.

``ClusterProfile`` and ``PlacementDecision`` here are ``multicluster.x-k8s.io/v1alpha1``, the
served storage version of the pinned upstream release; ``cluster_inventory.api.v1alpha2`` has
the next shape. ``ClusterProperty`` is ``about.k8s.io`` (v1alpha1 and v1beta1).

Every model parses with :meth:`~KubeModel.from_dict` and writes back with
:meth:`~KubeModel.to_dict`: JSON names, unknown fields kept, nothing invented.
"""

from __future__ import annotations

from cluster_inventory.api import constants, v1alpha1, v1alpha2
from cluster_inventory.api._base import (
    Condition,
    ConditionStatus,
    KubeModel,
    ListMeta,
    ObjectMeta,
    OwnerReference,
    Time,
    format_micro_time,
    format_time,
)
from cluster_inventory.api._crds import crd_yaml, load_crds
from cluster_inventory.api.about import ClusterProperty, ClusterPropertyList, ClusterPropertySpec
from cluster_inventory.api.constants import *  # noqa: F403
from cluster_inventory.api.constants import __all__ as _constants
from cluster_inventory.api.v1alpha1 import (
    AccessProvider,
    Cluster,
    ClusterDecision,
    ClusterManager,
    ClusterProfile,
    ClusterProfileList,
    ClusterProfileReference,
    ClusterProfileSpec,
    ClusterProfileStatus,
    NamedExtension,
    PlacementDecision,
    PlacementDecisionList,
    Property,
    Version,
)

__all__ = [
    "AccessProvider",
    "Cluster",
    "ClusterDecision",
    "ClusterManager",
    "ClusterProfile",
    "ClusterProfileList",
    "ClusterProfileReference",
    "ClusterProfileSpec",
    "ClusterProfileStatus",
    "ClusterProperty",
    "ClusterPropertyList",
    "ClusterPropertySpec",
    "Condition",
    "ConditionStatus",
    "KubeModel",
    "ListMeta",
    "NamedExtension",
    "ObjectMeta",
    "OwnerReference",
    "PlacementDecision",
    "PlacementDecisionList",
    "Property",
    "Time",
    "Version",
    "crd_yaml",
    "format_micro_time",
    "format_time",
    "load_crds",
    "constants",
    "v1alpha1",
    "v1alpha2",
    *_constants,
]

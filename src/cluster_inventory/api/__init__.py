"""Typed models, constants and CRD manifests of the Cluster Inventory API. No I/O.

``ClusterProfile`` and ``PlacementDecision`` here are ``multicluster.x-k8s.io/v1alpha1``, the
served storage version of the pinned upstream release; ``cluster_inventory.api.v1alpha2`` has
the next shape. ``ClusterProperty`` is ``about.k8s.io`` (v1alpha1 and v1beta1).

Every model parses with :meth:`~KubeModel.from_dict` and writes back with
:meth:`~KubeModel.to_dict`: JSON names, unknown fields kept, nothing invented.

The pydantic models are imported on first use (PEP 562), so that importing the constants or
this package costs no model building: the CLI and the exec plugins read constants only.
"""

from __future__ import annotations

from cluster_inventory._lazy import lazy_exports
from cluster_inventory.api import constants
from cluster_inventory.api.constants import *  # noqa: F403
from cluster_inventory.api.constants import __all__ as _constants

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cluster_inventory.api import v1alpha1, v1alpha2
    from cluster_inventory.api._base import (
        Condition,
        ConditionStatus,
        KubeModel,
        ListMeta,
        ObjectMeta,
        OwnerReference,
        Time,
        field_error,
        label_value_problem,
    )
    from cluster_inventory.api._crds import load_crds
    from cluster_inventory.api._storable import StorableError, check_storable
    from cluster_inventory.api.about import (
        ClusterProperty,
        ClusterPropertyList,
        ClusterPropertySpec,
    )
    from cluster_inventory.api.member_report import (
        APIServerHealth,
        MemberReport,
        MemberReportList,
        MemberReportStatus,
        ReportedProperty,
    )
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
    from cluster_inventory.api.views import format_micro_time, format_time

_WHERE = {
    "APIServerHealth": "member_report",
    "AccessProvider": "v1alpha1",
    "Cluster": "v1alpha1",
    "ClusterDecision": "v1alpha1",
    "ClusterManager": "v1alpha1",
    "ClusterProfile": "v1alpha1",
    "ClusterProfileList": "v1alpha1",
    "ClusterProfileReference": "v1alpha1",
    "ClusterProfileSpec": "v1alpha1",
    "ClusterProfileStatus": "v1alpha1",
    "ClusterProperty": "about",
    "ClusterPropertyList": "about",
    "ClusterPropertySpec": "about",
    "Condition": "_base",
    "ConditionStatus": "_base",
    "KubeModel": "_base",
    "ListMeta": "_base",
    "MemberReport": "member_report",
    "MemberReportList": "member_report",
    "MemberReportStatus": "member_report",
    "NamedExtension": "v1alpha1",
    "ObjectMeta": "_base",
    "OwnerReference": "_base",
    "PlacementDecision": "v1alpha1",
    "PlacementDecisionList": "v1alpha1",
    "Property": "v1alpha1",
    "ReportedProperty": "member_report",
    "Time": "_base",
    "Version": "v1alpha1",
    "StorableError": "_storable",
    "check_storable": "_storable",
    "field_error": "_base",
    "format_micro_time": "views",
    "format_time": "views",
    "label_value_problem": "_base",
    "load_crds": "_crds",
}
_MODULES = ("v1alpha1", "v1alpha2")

__all__ = [
    "APIServerHealth",
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
    "MemberReport",
    "MemberReportList",
    "MemberReportStatus",
    "NamedExtension",
    "ObjectMeta",
    "OwnerReference",
    "PlacementDecision",
    "PlacementDecisionList",
    "Property",
    "ReportedProperty",
    "Time",
    "Version",
    "StorableError",
    "check_storable",
    "field_error",
    "format_micro_time",
    "format_time",
    "label_value_problem",
    "load_crds",
    "constants",
    "v1alpha1",
    "v1alpha2",
    *_constants,
]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, _MODULES)

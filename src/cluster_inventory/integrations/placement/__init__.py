"""Placement: choose member clusters of an inventory and publish the choice (KEP-5313).

A ``Placement`` (``cluster-inventory.dev/v1alpha1``, namespaced, in the inventory namespace)
asks for clusters by label selector and by property (``region in (eu-west-1,
eu-central-1)``), healthy ones only unless told otherwise, optionally ``numberOfClusters``
spread over a property's values. The :class:`PlacementScheduler` on the hub publishes the
choice as ``multicluster.x-k8s.io`` PlacementDecision slices and keeps them in step with the
profiles; consumers read a decision back with
:func:`~cluster_inventory.runtime.decisions.read_decisions` (re-exported here).

Modules: :mod:`.selectors` (selector syntax, pure), :mod:`.choice` (which clusters, pure),
:mod:`.decisions` (slices and write plans, pure), :mod:`.scheduler` (the controller).
"""

from __future__ import annotations

from cluster_inventory.integrations.placement import decisions
from cluster_inventory.integrations.placement.choice import (
    EXCLUSION_REASONS,
    Candidate,
    Choice,
    ClusterRef,
    PlacementSpec,
    choose,
    spec_from_object,
)
from cluster_inventory.integrations.placement.decisions import *  # noqa: F403 - listed once
from cluster_inventory.integrations.placement.scheduler import (
    FIELD_MANAGER,
    PLACEMENTS,
    PlacementScheduler,
    placement_status,
)
from cluster_inventory.integrations.placement.selectors import (
    Requirement,
    SelectorError,
    format_selector,
    from_label_selector,
    parse_selector,
    to_label_selector,
)
from cluster_inventory.runtime.decisions import DecisionSet, group_decisions, read_decisions

__all__ = [
    "EXCLUSION_REASONS",
    "FIELD_MANAGER",
    "PLACEMENTS",
    "Candidate",
    "Choice",
    "ClusterRef",
    "DecisionSet",
    "PlacementScheduler",
    "PlacementSpec",
    "Requirement",
    "SelectorError",
    "choose",
    "format_selector",
    "from_label_selector",
    "group_decisions",
    "parse_selector",
    "placement_status",
    "read_decisions",
    "spec_from_object",
    "to_label_selector",
    *decisions.__all__,
]

"""The rows of the dashboard: one per inventory, member cluster and Placement, and the whole.

Frozen value objects that :func:`~cluster_inventory.dashboard.overview.build` fills and the
page renders; nothing here reads the hub.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cluster_inventory.api.constants import LABEL_CLUSTER_MANAGER, LABEL_INVENTORY_MEMBER_ID
from cluster_inventory.api.views import ConditionView, ProfileView
from cluster_inventory.integrations import conformance

__all__ = [
    "HEALTH_ORDER",
    "Delivery",
    "InventorySummary",
    "MemberRow",
    "Overview",
    "PlacementRow",
]

# Labels the table shows in their own columns.
_SHOWN = frozenset({LABEL_CLUSTER_MANAGER, LABEL_INVENTORY_MEMBER_ID})
#: Health values of a row, worst first (the sort order of the Health column).
HEALTH_ORDER = ("False", "Unknown", "True")


@dataclass(frozen=True, kw_only=True)
class Delivery:
    """Where our syncs deliver one profile.

    Attributes:
        argocd: Names of the Argo CD cluster Secrets rendered from it (metadata only).
        multikueue: ``(name, Active condition status)`` of its MultiKueueClusters; the
            status is "" until Kueue reports it.
    """

    argocd: tuple[str, ...] = ()
    multikueue: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, kw_only=True)
class MemberRow:
    """One member cluster, however many inventories list it.

    The page shows it by :attr:`name` and links its page by :attr:`ref`; its member id (the
    ``kube-system`` UID) groups its profiles and is never shown.

    Attributes:
        key: The member id, or ``namespace/name`` of its only profile when it has none.
        member_id: The ``inventory-member-id`` label, None if unset.
        profiles: Its profiles, sorted by key (one per inventory namespace).
        health: ``False`` if any profile's ``ControlPlaneHealthy`` is False, else ``Unknown``
            if any does not report it, else ``True``.
        joined: ``Joined`` of the first profile ("" when not reported).
        version: Kubernetes version (the first profile that reports one).
        managers: ``spec.clusterManager.name`` of its profiles, sorted, each once.
        labels: Labels of its profiles (the first profile wins a key).
        properties: Properties of its profiles (the first profile wins a name).
        conditions: The conditions of its worst profile (reason and message included).
        delivery: What our syncs made of its profiles.
    """

    key: str
    member_id: str | None
    profiles: tuple[ProfileView, ...]
    health: str
    joined: str
    version: str
    managers: tuple[str, ...]
    labels: Mapping[str, str]
    properties: Mapping[str, str]
    conditions: tuple[ConditionView, ...]
    delivery: Delivery = field(default_factory=Delivery)

    @property
    def name(self) -> str:
        """What the page calls it: its first profile's display name, else that profile's name.

        ``spec.displayName``, else the name its cluster manager registered it by; never the
        member id.
        """
        first = self.profiles[0]
        return first.display_name or first.name

    @property
    def ref(self) -> str:
        """``namespace/name`` of its first profile: the address of its page."""
        return self.profiles[0].key

    @property
    def shown_labels(self) -> tuple[str, ...]:
        """``key=value`` of its labels but those other columns show (manager, member id)."""
        return tuple(f"{k}={v}" for k, v in sorted(self.labels.items()) if k not in _SHOWN)

    @property
    def inventories(self) -> tuple[str, ...]:
        """The namespaces of its profiles."""
        return tuple(dict.fromkeys(p.namespace for p in self.profiles))


@dataclass(frozen=True, kw_only=True)
class InventorySummary:
    """One inventory namespace at a glance.

    Attributes:
        namespace: The inventory namespace.
        profiles: Number of ClusterProfiles.
        healthy: Profiles whose ``ControlPlaneHealthy`` is True.
        unhealthy: ... is False.
        joined: Profiles whose ``Joined`` is True.
        versions: ``(Kubernetes version, count)``, most frequent first ("" for unreported).
        conformance: The conformance report document (upstream shape).
    """

    namespace: str
    profiles: int
    healthy: int
    unhealthy: int
    joined: int
    versions: tuple[tuple[str, int], ...]
    conformance: Mapping[str, Any]

    @property
    def required_failed(self) -> bool:
        """A Required conformance check fails."""
        return conformance.required_failed(self.conformance)


@dataclass(frozen=True, kw_only=True)
class PlacementRow:
    """One Placement: what it asks, what was chosen and why the rest was not.

    Attributes:
        namespace: The inventory namespace.
        name: The Placement's name.
        request: The request in words (selectors, count, spread).
        chosen: ``namespace/name`` of the clusters its published decision holds.
        left_out: ``(namespace/name, reason)`` for every other profile of the inventory.
        decided: Decision slices exist and are complete.
        error: Why the spec cannot be read (then ``left_out`` is empty).
    """

    namespace: str
    name: str
    request: str
    chosen: tuple[str, ...]
    left_out: tuple[tuple[str, str], ...]
    decided: bool
    error: str = ""


@dataclass(frozen=True, kw_only=True)
class Overview:
    """Everything the page shows, at one point in time.

    Attributes:
        inventories: One summary per inventory namespace, sorted.
        members: One row per member cluster, sorted by name (then by :attr:`MemberRow.ref`).
        placements: One row per Placement, sorted.
        property_names: Every property name of the rows, sorted (the table's columns).
        label_keys: Every label key of the rows, sorted (sort and filter keys).
        built: When it was built (UTC).
    """

    inventories: tuple[InventorySummary, ...]
    members: tuple[MemberRow, ...]
    placements: tuple[PlacementRow, ...]
    property_names: tuple[str, ...]
    label_keys: tuple[str, ...]
    built: dt.datetime

    @property
    def profile_count(self) -> int:
        """Profiles over all inventories."""
        return sum(i.profiles for i in self.inventories)

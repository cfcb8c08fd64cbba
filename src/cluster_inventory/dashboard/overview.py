"""What the dashboard shows, as pure functions of the hub's objects.

:func:`build` turns the cached objects (profiles as :class:`~cluster_inventory.api.views.
ProfileView`, Placements, PlacementDecision slices, the metadata of Argo CD cluster Secrets,
MultiKueueClusters) into an :class:`Overview`: one :class:`InventorySummary` per inventory
namespace (counts, health, versions, conformance), one :class:`MemberRow` per member cluster
(profiles sharing an ``inventory-member-id`` across inventories are one member), one
:class:`PlacementRow` per Placement. :func:`select` filters and sorts the member rows for a
:class:`Query` read from the page's controls. Nothing here reads a Secret's data: the Secrets
come in as ``PartialObjectMetadata``.

The placement columns reuse the scheduler's own rules: the chosen clusters are the published
decision (KEP-5313 slices grouped by :func:`~cluster_inventory.runtime.decisions.
group_decisions`), and every other profile of the inventory is given the reason
:func:`~cluster_inventory.integrations.placement.choose` would leave it out for. Conformance is
:func:`~cluster_inventory.integrations.conformance.evaluate` over the cached profiles.

The row types live in :mod:`~cluster_inventory.dashboard.rows`, :class:`Query` and
:func:`select` in :mod:`~cluster_inventory.dashboard.selection`; this module re-exports them.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cluster_inventory._clock import utcnow
from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    ANNOTATION_PROFILE,
    CONDITION_CONTROL_PLANE_HEALTHY,
    CONDITION_JOINED,
)
from cluster_inventory.api.views import ProfileView
from cluster_inventory.dashboard.rows import (
    HEALTH_ORDER,
    Delivery,
    InventorySummary,
    MemberRow,
    Overview,
    PlacementRow,
)
from cluster_inventory.dashboard.selection import SORT_KEYS, Query, Selection, select
from cluster_inventory.integrations import conformance
from cluster_inventory.integrations.placement import (
    Candidate,
    ClusterRef,
    SelectorError,
    choose,
    decision_key,
    format_selector,
    group_decisions,
    spec_from_object,
)

__all__ = [
    "HEALTH_ORDER",
    "SORT_KEYS",
    "Delivery",
    "InventorySummary",
    "MemberRow",
    "Overview",
    "PlacementRow",
    "Query",
    "Selection",
    "build",
    "select",
]


def _health(view: ProfileView) -> str:
    status = view.condition_status(CONDITION_CONTROL_PLANE_HEALTHY)
    return status if status in ("True", "False") else "Unknown"


def _delivery_by_profile(
    argocd_secrets: Iterable[Mapping[str, Any]], multikueue_clusters: Iterable[Mapping[str, Any]]
) -> dict[str, Delivery]:
    secrets: dict[str, list[str]] = {}
    for secret in argocd_secrets:
        profile = objects.annotations_of(secret).get(ANNOTATION_PROFILE)
        if isinstance(profile, str):
            secrets.setdefault(profile, []).append(str(objects.meta(secret).get("name")))
    clusters: dict[str, list[tuple[str, str]]] = {}
    for cluster in multikueue_clusters:
        profile = objects.annotations_of(cluster).get(ANNOTATION_PROFILE)
        if not isinstance(profile, str):
            continue
        active = next(
            (
                str(c.get("status") or "")
                for c in objects.status(cluster).get("conditions") or ()
                if isinstance(c, Mapping) and c.get("type") == "Active"
            ),
            "",
        )
        clusters.setdefault(profile, []).append((str(objects.meta(cluster).get("name")), active))
    return {
        key: Delivery(
            argocd=tuple(sorted(secrets.get(key, ()))),
            multikueue=tuple(sorted(clusters.get(key, ()))),
        )
        for key in secrets.keys() | clusters.keys()
    }


def _member_row(profiles: list[ProfileView], delivery: Mapping[str, Delivery]) -> MemberRow:
    profiles.sort(key=lambda p: (p.namespace, p.name))
    healths = {_health(p) for p in profiles}
    health = next(h for h in HEALTH_ORDER if h in healths)
    worst = next(p for p in profiles if _health(p) == health)
    labels: dict[str, str] = {}
    properties: dict[str, str] = {}
    for p in profiles:
        for k, v in p.labels.items():
            labels.setdefault(k, v)
        for k, v in p.properties.items():
            properties.setdefault(k, v)
    delivered = [delivery[p.key] for p in profiles if p.key in delivery]
    first = profiles[0]
    return MemberRow(
        key=first.member_id or first.key,
        member_id=first.member_id,
        profiles=tuple(profiles),
        health=health,
        joined=first.condition_status(CONDITION_JOINED),
        version=next((p.version for p in profiles if p.version), ""),
        managers=tuple(sorted({p.cluster_manager for p in profiles if p.cluster_manager})),
        labels=labels,
        properties=properties,
        conditions=tuple(worst.conditions.values()),
        delivery=Delivery(
            argocd=tuple(s for d in delivered for s in d.argocd),
            multikueue=tuple(c for d in delivered for c in d.multikueue),
        ),
    )


def _summary(namespace: str, views: Sequence[ProfileView], served: bool) -> InventorySummary:
    versions = Counter(v.version for v in views)
    groups = conformance.evaluate(
        conformance.Served(served=served, namespaced=True, listable=True, error="not served"),
        views,
    )
    return InventorySummary(
        namespace=namespace,
        profiles=len(views),
        healthy=sum(1 for v in views if _health(v) == "True"),
        unhealthy=sum(1 for v in views if _health(v) == "False"),
        joined=sum(1 for v in views if v.joined),
        versions=tuple(sorted(versions.items(), key=lambda kv: (-kv[1], kv[0]))),
        conformance=conformance.report(groups, namespace=namespace, cluster_manager=None),
    )


def _request(placement: Mapping[str, Any]) -> str:
    spec = spec_from_object(placement)
    parts = []
    if spec.cluster_selector:
        parts.append(f"labels {format_selector(spec.cluster_selector)}")
    if spec.property_selector:
        parts.append(f"properties {format_selector(spec.property_selector)}")
    count = spec.number_of_clusters
    parts.append("every cluster" if count is None else f"{count} cluster(s)")
    if spec.spread_by_property:
        parts.append(f"spread by {spec.spread_by_property}")
    if spec.include_unhealthy:
        parts.append("unhealthy too")
    return ", ".join(parts)


def _placement_row(
    placement: Mapping[str, Any],
    views: Sequence[ProfileView],
    slices: Sequence[Mapping[str, Any]],
) -> PlacementRow:
    meta = objects.meta(placement)
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    decision = group_decisions(slices, decision_key(name), namespace=namespace)
    chosen = decision.clusters
    try:
        request = _request(placement)
        choice = choose(
            spec_from_object(placement),
            [
                Candidate(
                    ref=ClusterRef(v.namespace, v.name),
                    labels=v.labels,
                    properties=v.properties,
                    healthy=v.healthy,
                    leaving=v.deleting,
                )
                for v in views
            ],
            previous=[ClusterRef(*c.split("/", 1)) for c in chosen if "/" in c],
            placement=name,
        )
    except SelectorError as exc:
        return PlacementRow(
            namespace=namespace,
            name=name,
            request="",
            chosen=chosen,
            left_out=(),
            decided=decision.complete,
            error=str(exc),
        )
    reasons = {str(ref): reason for reason, refs in choice.excluded.items() for ref in refs}
    left_out = tuple(
        (v.key, reasons.get(v.key, "NotYetDecided"))
        for v in sorted(views, key=lambda v: v.key)
        if v.key not in chosen
    )
    return PlacementRow(
        namespace=namespace,
        name=name,
        request=request,
        chosen=chosen,
        left_out=left_out,
        decided=decision.complete,
    )


def build(
    profiles: Iterable[ProfileView],
    *,
    placements: Iterable[Mapping[str, Any]] = (),
    decisions: Iterable[Mapping[str, Any]] = (),
    argocd_secrets: Iterable[Mapping[str, Any]] = (),
    multikueue_clusters: Iterable[Mapping[str, Any]] = (),
    namespaces: Iterable[str] = (),
    v1alpha2_served: bool = True,
    now: dt.datetime | None = None,
) -> Overview:
    """Build the page's content from the hub's objects. Pure.

    Args:
        profiles: Every ClusterProfile of the watched inventories, decoded once.
        placements: Placements (``cluster-inventory.dev/v1alpha1``) of those namespaces.
        decisions: PlacementDecision slices of those namespaces.
        argocd_secrets: Argo CD cluster Secrets written by our sync (metadata only).
        multikueue_clusters: MultiKueueClusters written by our sync.
        namespaces: Inventories to list even when they hold no profile (``--namespace``).
        v1alpha2_served: The hub serves ClusterProfile v1alpha2 (a Required check).
        now: The build time (default: the wall clock).

    Returns:
        The overview.
    """
    views = list(profiles)
    delivery = _delivery_by_profile(argocd_secrets, multikueue_clusters)
    by_namespace: dict[str, list[ProfileView]] = {ns: [] for ns in namespaces}
    by_member: dict[str, list[ProfileView]] = {}
    for view in views:
        by_namespace.setdefault(view.namespace, []).append(view)
        by_member.setdefault(view.member_id or f"\x00{view.key}", []).append(view)
    members = sorted(
        (_member_row(group, delivery) for group in by_member.values()),
        key=lambda r: (r.name, r.ref),
    )
    slices_by_ns: dict[str, list[Mapping[str, Any]]] = {}
    for s in decisions:
        slices_by_ns.setdefault(str(objects.meta(s).get("namespace") or ""), []).append(s)
    rows = [
        _placement_row(
            p,
            by_namespace.get(str(objects.meta(p).get("namespace") or ""), []),
            slices_by_ns.get(str(objects.meta(p).get("namespace") or ""), []),
        )
        for p in placements
    ]
    return Overview(
        inventories=tuple(
            _summary(ns, group, v1alpha2_served) for ns, group in sorted(by_namespace.items())
        ),
        members=tuple(members),
        placements=tuple(sorted(rows, key=lambda r: (r.namespace, r.name))),
        property_names=tuple(sorted({k for r in members for k in r.properties})),
        label_keys=tuple(sorted({k for r in members for k in r.labels})),
        built=now or utcnow(),
    )

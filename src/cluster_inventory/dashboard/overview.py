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
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    ANNOTATION_PROFILE,
    CONDITION_CONTROL_PLANE_HEALTHY,
    CONDITION_JOINED,
    LABEL_CLUSTER_MANAGER,
    LABEL_INVENTORY_MEMBER_ID,
)
from cluster_inventory.api.views import ConditionView, ProfileView
from cluster_inventory.integrations import conformance
from cluster_inventory.integrations.placement import (
    Candidate,
    ClusterRef,
    SelectorError,
    choose,
    decision_key,
    format_selector,
    group_decisions,
    parse_selector,
    spec_from_object,
)
from cluster_inventory.integrations.placement.selectors import matches

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

# Labels the table shows in their own columns.
_SHOWN = frozenset({LABEL_CLUSTER_MANAGER, LABEL_INVENTORY_MEMBER_ID})
#: Health values of a row, worst first (the sort order of the Health column).
HEALTH_ORDER = ("False", "Unknown", "True")


def _health(view: ProfileView) -> str:
    status = view.condition_status(CONDITION_CONTROL_PLANE_HEALTHY)
    return status if status in ("True", "False") else "Unknown"


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

    Attributes:
        key: The member id, or ``namespace/name`` of its only profile when it has none.
        member_id: The ``inventory-member-id`` label, None if unset.
        profiles: Its profiles, sorted by key.
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
        """What the table shows first: the member id, else the profile's name."""
        return self.member_id or self.profiles[0].name

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
        members: One row per member cluster, sorted by key.
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
        (_member_row(group, delivery) for group in by_member.values()), key=lambda r: r.key
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
        built=now or dt.datetime.now(dt.UTC),
    )


#: Sort keys of the member table besides ``property:NAME`` and ``label:KEY``.
SORT_KEYS = ("member", "inventories", "health", "joined", "version", "manager")


@dataclass(frozen=True, kw_only=True)
class Query:
    """The page's controls: which member rows to show, in which order.

    Attributes:
        text: Substring (case-insensitive) of the member, its profiles, version, managers,
            label values or property values.
        labels: A label selector (``env=prod,tier!=db``) the member's labels must match.
        properties: The same over its properties (``region in (eu-west-1)``).
        health: ``True``, ``False`` or ``Unknown`` to show only that health; "" for all.
        inventory: Only members of this namespace; "" for all.
        sort: ``member``, ``inventories``, ``health``, ``joined``, ``version``, ``manager``,
            ``property:NAME`` or ``label:KEY``.
        descending: Reverse the order.
    """

    text: str = ""
    labels: str = ""
    properties: str = ""
    health: str = ""
    inventory: str = ""
    sort: str = "member"
    descending: bool = False

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> Query:
        """Read the controls from a request's query string (unknown values read as unset)."""
        health = params.get("health", "")
        sort = params.get("sort", "")
        if sort not in SORT_KEYS and not sort.startswith(("property:", "label:")):
            sort = "member"
        return cls(
            text=params.get("q", "").strip(),
            labels=params.get("labels", "").strip(),
            properties=params.get("properties", "").strip(),
            health=health if health in HEALTH_ORDER else "",
            inventory=params.get("inventory", "").strip(),
            sort=sort,
            descending=params.get("order", "") == "desc",
        )


@dataclass(frozen=True, kw_only=True)
class Selection:
    """The rows a query selects.

    Attributes:
        rows: The matching member rows, in the query's order.
        error: Why a selector could not be read ("" when both parsed).
    """

    rows: tuple[MemberRow, ...]
    error: str = ""


def _sort_value(row: MemberRow, sort: str) -> tuple[int, str]:
    """A key that puts rows without the value last, whatever the direction."""
    kind, _, name = sort.partition(":")
    if kind == "property":
        value = row.properties.get(name)
    elif kind == "label":
        value = row.labels.get(name)
    elif sort == "health":
        value = str(HEALTH_ORDER.index(row.health))
    elif sort == "inventories":
        value = ",".join(row.inventories)
    elif sort == "joined":
        value = row.joined or None
    elif sort == "version":
        value = row.version or None
    elif sort == "manager":
        value = ",".join(row.managers) or None
    else:
        value = row.key
    return (0, value) if value is not None else (1, "")


def _haystack(row: MemberRow) -> str:
    words = [
        row.key,
        row.version,
        *row.managers,
        *(p.key for p in row.profiles),
        *(p.display_name for p in row.profiles),
        *row.labels.values(),
        *row.properties.values(),
    ]
    return "\n".join(words).casefold()


def select(overview: Overview, query: Query) -> Selection:
    """Filter and sort the member rows. Pure.

    Args:
        overview: What :func:`build` made.
        query: The controls.

    Returns:
        The rows, and the selector error if one did not parse (the rows are then filtered by
        the other controls only).
    """
    error = ""
    try:
        label_req = parse_selector(query.labels) if query.labels else ()
    except SelectorError as exc:
        label_req, error = (), f"labels: {exc}"
    try:
        property_req = parse_selector(query.properties) if query.properties else ()
    except SelectorError as exc:
        property_req, error = (), f"properties: {exc}"
    text = query.text.casefold()
    rows = [
        r
        for r in overview.members
        if (not query.health or r.health == query.health)
        and (not query.inventory or query.inventory in r.inventories)
        and (not label_req or matches(label_req, r.labels))
        and (not property_req or matches(property_req, r.properties))
        and (not text or text in _haystack(r))
    ]
    present = [r for r in rows if _sort_value(r, query.sort)[0] == 0]
    absent = [r for r in rows if _sort_value(r, query.sort)[0] == 1]
    present.sort(key=lambda r: (_sort_value(r, query.sort)[1], r.key), reverse=query.descending)
    return Selection(rows=tuple(present + absent), error=error)

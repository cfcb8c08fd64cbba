"""Which clusters a placement chooses: a pure function of the request and the profiles.

:func:`choose` takes a :class:`PlacementSpec` (parsed from a ``Placement`` object by
:func:`spec_from_object`) and the inventory's ClusterProfiles as plain
:class:`Candidate` values, and returns a :class:`Choice`: the chosen clusters in a stable
order (``namespace/name``), and for every other profile the first reason it was left out.

Rules, in the order they are checked (the first failing one is the reason given):

1. ``LabelsDoNotMatch``: the profile's labels fail ``spec.clusterSelector``;
2. ``PropertiesDoNotMatch``: its ``status.properties`` fail ``spec.propertySelector``;
3. ``Leaving``: the profile is being deleted;
4. ``NotHealthy``: ``ControlPlaneHealthy`` is not ``True`` (unless ``includeUnhealthy``);
5. ``NotChosen``: more clusters qualify than ``numberOfClusters`` asks for.

With ``numberOfClusters``, clusters chosen before keep their place (a new profile does not
push an old choice out, as OCM's scheduler behaves), and with ``spreadByProperty`` the
choice is spread evenly over that property's values: round-robin over the values in sorted
order, profiles without the property last.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cluster_inventory.api import objects
from cluster_inventory.api.objects import ObjectKey
from cluster_inventory.api.views import ProfileView
from cluster_inventory.integrations.placement.selectors import (
    Requirement,
    SelectorError,
    from_label_selector,
    matches,
)

__all__ = [
    "EXCLUSION_REASONS",
    "Candidate",
    "Choice",
    "ClusterRef",
    "PlacementSpec",
    "choose",
    "spec_from_object",
]

#: Why a profile was not chosen, in the order the rules are checked.
EXCLUSION_REASONS = (
    "LabelsDoNotMatch",
    "PropertiesDoNotMatch",
    "Leaving",
    "NotHealthy",
    "NotChosen",
)


#: A ClusterProfile's place on the hub; orders by namespace, then name.
ClusterRef = ObjectKey


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """What a placement looks at in a ClusterProfile.

    Attributes:
        ref: The profile's namespace and name.
        labels: ``metadata.labels``.
        properties: ``status.properties`` as name to value.
        healthy: ``ControlPlaneHealthy`` is ``True``.
        leaving: ``metadata.deletionTimestamp`` is set.
    """

    ref: ClusterRef
    labels: Mapping[str, str] = field(default_factory=dict)
    properties: Mapping[str, str] = field(default_factory=dict)
    healthy: bool = True
    leaving: bool = False

    @classmethod
    def from_profile(cls, profile: Mapping[str, Any] | ProfileView) -> Candidate:
        """Read a ClusterProfile (decoded dict of any served version, or its view)."""
        view = profile if isinstance(profile, ProfileView) else ProfileView.of(profile)
        return cls(
            ref=ClusterRef(view.namespace, view.name),
            labels=view.labels,
            properties=view.properties,
            healthy=view.healthy,
            leaving=view.deleting,
        )


@dataclass(frozen=True, kw_only=True)
class PlacementSpec:
    """A placement request (``Placement.spec``), parsed.

    Attributes:
        cluster_selector: Requirements on profile labels.
        property_selector: Requirements on profile properties.
        number_of_clusters: How many to choose; None for every qualifying cluster.
        spread_by_property: Spread the choice over this property's values.
        include_unhealthy: Also choose profiles whose control plane is not healthy.
    """

    cluster_selector: tuple[Requirement, ...] = ()
    property_selector: tuple[Requirement, ...] = ()
    number_of_clusters: int | None = None
    spread_by_property: str | None = None
    include_unhealthy: bool = False

    def __post_init__(self) -> None:
        if self.number_of_clusters is not None and self.number_of_clusters < 0:
            raise SelectorError(
                f"spec.numberOfClusters: must be >= 0, not {self.number_of_clusters}"
            )


@dataclass(frozen=True, kw_only=True)
class Choice:
    """The outcome of :func:`choose`.

    Attributes:
        chosen: Chosen clusters, sorted by namespace and name.
        reasons: Per chosen cluster, why (the decision's ``reason``).
        excluded: Per reason of :data:`EXCLUSION_REASONS`, the clusters left out, sorted.
        qualifying: How many profiles passed every rule but the count.
        requested: ``numberOfClusters``, or None.
    """

    chosen: tuple[ClusterRef, ...]
    reasons: Mapping[ClusterRef, str]
    excluded: Mapping[str, tuple[ClusterRef, ...]]
    qualifying: int
    requested: int | None

    @property
    def satisfied(self) -> bool:
        """Every requested cluster was found (at least one when no count was asked)."""
        if self.requested is None:
            return bool(self.chosen)
        return len(self.chosen) >= self.requested


def _exclusion(spec: PlacementSpec, candidate: Candidate) -> str | None:
    if not matches(spec.cluster_selector, candidate.labels):
        return "LabelsDoNotMatch"
    if not matches(spec.property_selector, candidate.properties):
        return "PropertiesDoNotMatch"
    if candidate.leaving:
        return "Leaving"
    if not (candidate.healthy or spec.include_unhealthy):
        return "NotHealthy"
    return None


def _spread(
    qualifying: list[Candidate], prop: str, count: int, previous: frozenset[ClusterRef]
) -> list[Candidate]:
    groups: dict[str | None, list[Candidate]] = {}
    for candidate in qualifying:
        groups.setdefault(candidate.properties.get(prop), []).append(candidate)
    order = sorted(groups, key=lambda v: (v is None, v or ""))
    for value in order:  # within a value: kept choices first, then by name
        groups[value].sort(key=lambda c: (c.ref not in previous, c.ref))
    picked: list[Candidate] = []
    depth = 0
    while len(picked) < count:
        for value in order:
            if depth < len(groups[value]) and len(picked) < count:
                picked.append(groups[value][depth])
        depth += 1
    return picked


def choose(
    spec: PlacementSpec,
    candidates: Iterable[Candidate],
    *,
    previous: Iterable[ClusterRef] = (),
    placement: str = "",
) -> Choice:
    """Choose clusters for ``spec`` among ``candidates``.

    Args:
        spec: The request.
        candidates: The inventory's profiles (any order; duplicates by ref are ignored).
        previous: The clusters chosen last time; with a count they keep their place.
        placement: The placement's name, for the decisions' ``reason``.

    Returns:
        The choice; equal inputs give equal outputs, whatever the input order.
    """
    unique = sorted({c.ref: c for c in candidates}.values(), key=lambda c: c.ref)
    kept = frozenset(previous)
    excluded: dict[str, list[ClusterRef]] = {reason: [] for reason in EXCLUSION_REASONS}
    qualifying: list[Candidate] = []
    for candidate in unique:
        reason = _exclusion(spec, candidate)
        if reason is None:
            qualifying.append(candidate)
        else:
            excluded[reason].append(candidate.ref)
    count = spec.number_of_clusters
    picked = qualifying
    if count is not None and count < len(qualifying):
        if spec.spread_by_property:
            picked = _spread(qualifying, spec.spread_by_property, count, kept)
        else:
            picked = sorted(qualifying, key=lambda c: (c.ref not in kept, c.ref))[:count]
        chosen_refs = {c.ref for c in picked}
        excluded["NotChosen"] = [c.ref for c in qualifying if c.ref not in chosen_refs]
    why = f"selected by placement {placement}" if placement else "selected"
    reasons = {
        c.ref: (
            f"{why}, {spec.spread_by_property}={c.properties.get(spec.spread_by_property, '')}"
            if spec.spread_by_property
            else why
        )
        for c in picked
    }
    return Choice(
        chosen=tuple(sorted(c.ref for c in picked)),
        reasons=reasons,
        excluded={k: tuple(v) for k, v in excluded.items() if v},
        qualifying=len(qualifying),
        requested=count,
    )


def spec_from_object(placement: Mapping[str, Any]) -> PlacementSpec:
    """Parse a ``Placement`` object's ``spec``.

    Raises:
        SelectorError: A field is malformed; the message names the object and the field.
    """
    meta = objects.meta(placement)
    name = f"Placement {meta.get('namespace')}/{meta.get('name')}"
    spec = objects.spec(placement)
    try:
        count = spec.get("numberOfClusters")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
            raise SelectorError(f"spec.numberOfClusters: must be an integer, not {count!r}")
        spread = spec.get("spreadByProperty") or None
        if spread is not None and not isinstance(spread, str):
            raise SelectorError("spec.spreadByProperty: must be a string")
        return PlacementSpec(
            cluster_selector=from_label_selector(
                spec.get("clusterSelector"), where="spec.clusterSelector"
            ),
            property_selector=from_label_selector(
                spec.get("propertySelector"),
                where="spec.propertySelector",
                match_key="matchProperties",
            ),
            number_of_clusters=count,
            spread_by_property=spread,
            include_unhealthy=bool(spec.get("includeUnhealthy", False)),
        )
    except SelectorError as exc:
        raise SelectorError(f"{name}: {exc}") from None

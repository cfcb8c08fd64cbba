"""A ClusterProfile decoded once: the view every reader of profiles uses.

Controllers, printers and decisions read the same few things from a profile (its key,
member id, cluster manager, conditions, properties, version, access providers, deletion)
and used to decode them each their own way from the raw dict, with different API versions,
different merge orders of the access providers and different handling of malformed fields.
:class:`ProfileView` decodes them once, as kr8s wraps an object and controller-runtime hands
a reconciler a typed object, and never raises on what another writer stored: a field of the
wrong type reads as absent, so one hostile profile never stops a reader.

Access providers follow ``pkg/access`` (KEP-4322, KEP-5339): ``credentialProviders``
(deprecated, v1alpha1 only) and ``accessProviders`` both count, and on a name clash the
``accessProviders`` entry wins; the order is the unshadowed ``credentialProviders`` entries,
then ``accessProviders``, as :meth:`ClusterProfileStatus.merged_access_providers` gives.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cluster_inventory.api.constants import (
    CONDITION_CONTROL_PLANE_HEALTHY,
    CONDITION_JOINED,
    CONDITION_REPORT_VALID,
    LABEL_CLUSTER_MANAGER,
    LABEL_INVENTORY_MEMBER_ID,
    REASON_AGENT_HEARTBEAT_STALE,
    REASON_AGENT_NOT_REPORTED,
    REASON_AGENT_REPORTING,
)
from cluster_inventory.shapes import RawAccessProvider, RawClusterProfile

__all__ = [
    "ConditionView",
    "EventView",
    "ProfileView",
    "ReviewView",
    "format_micro_time",
    "format_time",
    "parse_time",
]


_V = TypeVar("_V")
_AGENT_REASONS = frozenset(
    {REASON_AGENT_REPORTING, REASON_AGENT_NOT_REPORTED, REASON_AGENT_HEARTBEAT_STALE}
)


def parse_time(value: Any) -> dt.datetime | None:
    """An RFC 3339 time as the API server writes it (``metav1.Time``), or None.

    Args:
        value: ``2026-11-25T13:00:00Z`` (also with fractional seconds or an offset).

    Returns:
        An aware datetime in UTC, or None when ``value`` is not such a string.
    """
    if not isinstance(value, str) or not value:
        return None
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        parsed = dt.datetime.fromisoformat(text)
        # An offset may move a time at the ends of the calendar out of it (year 0 or 10000).
        return parsed.astimezone(dt.UTC) if parsed.tzinfo is not None else None
    except (ValueError, OverflowError):
        return None


def format_time(value: dt.datetime) -> str:
    """``value`` as the API server writes a ``metav1.Time``: RFC 3339 in UTC, whole seconds.

    Args:
        value: A datetime; a naive one is taken to be UTC.

    Returns:
        E.g. ``2026-11-25T13:00:00Z``; the inverse of :func:`parse_time` for what the API
        server stores (``metav1.Time`` keeps no fraction of a second).
    """
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(value: dt.datetime) -> str:
    """Format ``value`` as Kubernetes ``metav1.MicroTime`` does (Lease and Event times).

    Here, not beside the models, so that the Lease and Event writers (``kube``, the shard
    membership) do not import pydantic to format a time.

    Args:
        value: A datetime; a naive one is taken to be UTC.

    Returns:
        RFC 3339 in UTC with microseconds, e.g. ``2026-11-25T13:00:00.123456Z``.
    """
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _mapping(value: Any) -> Mapping[str, Any]:
    # A dict first: every object from the API server is one, and the Mapping ABC's check
    # costs ten times as much (this runs some 30 times per profile decoded).
    return value if type(value) is dict or isinstance(value, Mapping) else {}


def _entries(value: Any) -> list[Mapping[str, Any]]:
    if not isinstance(value, list):
        return []
    return [e for e in value if type(e) is dict or isinstance(e, Mapping)]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _filled(cls: type[_V], fields: dict[str, Any]) -> _V:
    """An instance of the frozen dataclass ``cls`` with every field given in ``fields``.

    What the generated ``__init__`` does, without its one ``object.__setattr__`` per field:
    half the cost of decoding a profile went there.
    """
    made = object.__new__(cls)
    made.__dict__.update(fields)
    return made


def _strings(value: Any) -> dict[str, str]:
    return {k: v for k, v in _mapping(value).items() if isinstance(k, str) and isinstance(v, str)}


@dataclass(frozen=True, kw_only=True)
class ConditionView:
    """One ``metav1.Condition`` of a profile.

    Attributes:
        type: The condition type, e.g. ``ControlPlaneHealthy``.
        status: ``True``, ``False``, ``Unknown`` (or what was stored).
        reason: CamelCase reason.
        message: What a person reads.
        last_transition: ``lastTransitionTime``, None if absent or malformed.
        observed_generation: ``observedGeneration``, None if absent.
    """

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition: dt.datetime | None = None
    observed_generation: int | None = None

    @property
    def true(self) -> bool:
        """``status`` is ``True``."""
        return self.status == "True"


@dataclass(frozen=True, kw_only=True)
class ProfileView:
    """What readers need of a ClusterProfile (any served version), decoded once.

    Build it with :meth:`of`. ``raw`` keeps the object as stored for whatever the view does
    not decode (an exec extension's payload, say).

    Attributes:
        namespace: The inventory namespace.
        name: The profile name.
        uid: ``metadata.uid`` ("" before it is stored).
        resource_version: ``metadata.resourceVersion``.
        labels: ``metadata.labels`` (string values only).
        annotations: ``metadata.annotations`` (string values only).
        member_id: The ``multicluster.x-k8s.io/inventory-member-id`` label, None if unset.
        cluster_manager: ``spec.clusterManager.name``.
        manager_label: The ``x-k8s.io/cluster-manager`` label.
        display_name: ``spec.displayName``.
        deleting: ``metadata.deletionTimestamp`` is set.
        created: ``metadata.creationTimestamp``.
        conditions: ``status.conditions`` by type (the first of a type wins).
        version: ``status.version.kubernetes``.
        properties: ``status.properties`` as name to value, in stored order (the first of
            a name wins).
        properties_observed: ``lastObservedTime`` of those properties that carry a valid one.
        access_providers: The merged access providers (see the module docstring), each the
            stored mapping, one per name.
        deprecated_providers: The names in :attr:`access_providers` that come from the
            deprecated ``credentialProviders`` list only (a printer lists them last).
        raw: The object as given.
    """

    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    member_id: str | None = None
    cluster_manager: str = ""
    manager_label: str = ""
    display_name: str = ""
    deleting: bool = False
    created: dt.datetime | None = None
    conditions: Mapping[str, ConditionView] = field(default_factory=dict)
    version: str = ""
    properties: Mapping[str, str] = field(default_factory=dict)
    properties_observed: Mapping[str, dt.datetime] = field(default_factory=dict)
    access_providers: tuple[RawAccessProvider, ...] = ()
    deprecated_providers: frozenset[str] = frozenset()
    raw: RawClusterProfile = field(
        default_factory=lambda: RawClusterProfile(), repr=False, compare=False
    )

    @classmethod
    def of(cls, profile: Mapping[str, Any]) -> ProfileView:
        """Decode ``profile`` (a dict as the API server returns it). Never raises.

        Args:
            profile: A ClusterProfile, v1alpha1 or v1alpha2, possibly malformed.
        """
        meta = _mapping(profile.get("metadata"))
        spec = _mapping(profile.get("spec"))
        status = _mapping(profile.get("status"))
        labels = _strings(meta.get("labels"))
        conditions: dict[str, ConditionView] = {}
        for entry in _entries(status.get("conditions")):
            kind = _text(entry.get("type"))
            if not kind or kind in conditions:
                continue
            generation = entry.get("observedGeneration")
            conditions[kind] = _filled(
                ConditionView,
                {
                    "type": kind,
                    "status": _text(entry.get("status")),
                    "reason": _text(entry.get("reason")),
                    "message": _text(entry.get("message")),
                    "last_transition": parse_time(entry.get("lastTransitionTime")),
                    "observed_generation": generation if type(generation) is int else None,
                },
            )
        properties: dict[str, str] = {}
        observed: dict[str, dt.datetime] = {}
        for entry in _entries(status.get("properties")):
            name = _text(entry.get("name"))
            if name and name not in properties:
                properties[name] = _text(entry.get("value"))
                when = parse_time(entry.get("lastObservedTime"))
                if when is not None:
                    observed[name] = when
        current: dict[str, Mapping[str, Any]] = {}
        for p in _entries(status.get("accessProviders")):
            name = _text(p.get("name"))
            if name:
                current.setdefault(name, p)
        legacy: dict[str, Mapping[str, Any]] = {}
        for p in _entries(status.get("credentialProviders")):
            name = _text(p.get("name"))
            if name and name not in current:
                legacy.setdefault(name, p)
        return _filled(
            cls,
            {
                "namespace": _text(meta.get("namespace")),
                "name": _text(meta.get("name")),
                "uid": _text(meta.get("uid")),
                "resource_version": _text(meta.get("resourceVersion")),
                "labels": labels,
                "annotations": _strings(meta.get("annotations")),
                "member_id": labels.get(LABEL_INVENTORY_MEMBER_ID) or None,
                "cluster_manager": _text(_mapping(spec.get("clusterManager")).get("name")),
                "manager_label": labels.get(LABEL_CLUSTER_MANAGER, ""),
                "display_name": _text(spec.get("displayName")),
                "deleting": bool(meta.get("deletionTimestamp")),
                "created": parse_time(meta.get("creationTimestamp")),
                "conditions": conditions,
                "version": _text(_mapping(status.get("version")).get("kubernetes")),
                "properties": properties,
                "properties_observed": observed,
                "access_providers": (*legacy.values(), *current.values()),
                "deprecated_providers": frozenset(legacy),
                "raw": profile,
            },
        )

    @property
    def key(self) -> str:
        """``namespace/name`` (client-go's object key)."""
        return f"{self.namespace}/{self.name}"

    def condition(self, condition_type: str) -> ConditionView | None:
        """The condition of ``condition_type``, or None."""
        return self.conditions.get(condition_type)

    def condition_status(self, condition_type: str) -> str:
        """The status of ``condition_type``, or "" when the profile does not report it."""
        found = self.conditions.get(condition_type)
        return found.status if found is not None else ""

    @property
    def healthy(self) -> bool:
        """``ControlPlaneHealthy`` is ``True`` (KEP-4322's one well-known condition)."""
        return self.condition_status(CONDITION_CONTROL_PLANE_HEALTHY) == "True"

    @property
    def joined(self) -> bool:
        """``Joined`` is ``True``."""
        return self.condition_status(CONDITION_JOINED) == "True"

    @property
    def access_mode(self) -> str:
        """``pull`` for a member whose agent reports, ``probe`` for one the manager reaches.

        An agent member's profiles carry ``ReportValid`` once it reported, and its ``Joined``
        or ``ControlPlaneHealthy`` reasons are the agent's (``AgentReporting``,
        ``AgentNotReported``, ``AgentHeartbeatStale``: docs/agent.md, "The hub side"); any
        other ``Joined`` is the cluster manager's own probe. "" for a profile that says
        neither.
        """
        if CONDITION_REPORT_VALID in self.conditions:
            return "pull"
        reasons = {
            c.reason
            for kind, c in self.conditions.items()
            if kind in (CONDITION_JOINED, CONDITION_CONTROL_PLANE_HEALTHY)
        }
        if reasons & _AGENT_REASONS:
            return "pull"
        return "probe" if CONDITION_JOINED in self.conditions else ""

    @property
    def access_provider_names(self) -> list[str]:
        """The names of :attr:`access_providers`, in their order."""
        return [_text(p.get("name")) for p in self.access_providers]

    def access_provider(self, name: str) -> RawAccessProvider | None:
        """The access provider called ``name``, or None."""
        for provider in self.access_providers:
            if provider.get("name") == name:
                return provider
        return None

    @property
    def server(self) -> str:
        """The member's API server as the first access provider that names one gives it.

        "" when none does. What a row about the member shows before (or without) resolving
        which provider a consumer uses (:func:`cluster_inventory.credentials.resolve_access`).
        """
        for provider in self.access_providers:
            server = _mapping(provider.get("cluster")).get("server")
            if server:
                return _text(server)
        return ""


def _count(value: Any) -> int:
    return value if type(value) is int and value > 0 else 0


@dataclass(frozen=True, kw_only=True)
class EventView:
    """One ``events.k8s.io/v1`` Event, decoded once, as ``kubectl describe`` reads it.

    An Event seen again is one object with a ``series`` (client-go's EventRecorder counts it
    there rather than writing another); ``deprecated*`` fields are read where a core/v1
    writer set them. Build it with :meth:`of`; like :class:`ProfileView` it never raises.

    Attributes:
        name: ``metadata.name``.
        namespace: ``metadata.namespace``.
        type: ``Normal`` or ``Warning`` (what was stored).
        reason: CamelCase reason, e.g. ``RenderFailed``.
        note: The message (``note``; core/v1's ``message`` where ``note`` is absent).
        action: What the reporter was doing.
        controller: ``reportingController`` (core/v1's ``source.component`` else).
        instance: ``reportingInstance`` (core/v1's ``source.host`` else).
        first: When it was first seen: ``eventTime``, else ``deprecatedFirstTimestamp``,
            else ``metadata.creationTimestamp``; None if none parses.
        last: When it was last seen: ``series.lastObservedTime``, else
            ``deprecatedLastTimestamp``, else :attr:`first`.
        count: How often it was seen: ``series.count``, else ``deprecatedCount``, else 1.
        regarding: ``regarding`` (the object it is about) as stored, string values only.
    """

    name: str = ""
    namespace: str = ""
    type: str = ""
    reason: str = ""
    note: str = ""
    action: str = ""
    controller: str = ""
    instance: str = ""
    first: dt.datetime | None = None
    last: dt.datetime | None = None
    count: int = 1
    regarding: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, event: Mapping[str, Any]) -> EventView:
        """Decode ``event`` (a dict as the API server returns it). Never raises.

        Args:
            event: An ``events.k8s.io/v1`` Event, possibly malformed.
        """
        meta = _mapping(event.get("metadata"))
        series = _mapping(event.get("series"))
        source = _mapping(event.get("deprecatedSource"))
        first = (
            parse_time(event.get("eventTime"))
            or parse_time(event.get("deprecatedFirstTimestamp"))
            or parse_time(meta.get("creationTimestamp"))
        )
        last = (
            parse_time(series.get("lastObservedTime"))
            or parse_time(event.get("deprecatedLastTimestamp"))
            or first
        )
        return cls(
            name=_text(meta.get("name")),
            namespace=_text(meta.get("namespace")),
            type=_text(event.get("type")),
            reason=_text(event.get("reason")),
            note=_text(event.get("note")) or _text(event.get("message")),
            action=_text(event.get("action")),
            controller=_text(event.get("reportingController")) or _text(source.get("component")),
            instance=_text(event.get("reportingInstance")) or _text(source.get("host")),
            first=first,
            last=last,
            count=_count(series.get("count")) or _count(event.get("deprecatedCount")) or 1,
            regarding=_strings(event.get("regarding")),
        )


@dataclass(frozen=True, kw_only=True)
class ReviewView:
    """The answer of a ``TokenReview`` or a ``SubjectAccessReview``, decoded once.

    ``authentication.k8s.io/v1`` and ``authorization.k8s.io/v1``; like :class:`ProfileView`
    it never raises.

    Attributes:
        authenticated: ``status.authenticated`` (a TokenReview), False when absent.
        allowed: ``status.allowed`` (a SubjectAccessReview), False when absent.
        username: ``status.user.username`` ("" when absent).
        groups: ``status.user.groups`` (strings only).
    """

    authenticated: bool
    allowed: bool
    username: str
    groups: tuple[str, ...]

    @classmethod
    def of(cls, review: Mapping[str, Any]) -> ReviewView:
        """Decode ``review`` (the server's answer to a create of either kind)."""
        status = _mapping(review.get("status"))
        user = _mapping(status.get("user"))
        groups = user.get("groups")
        return cls(
            authenticated=status.get("authenticated") is True,
            allowed=status.get("allowed") is True,
            username=_text(user.get("username")),
            groups=tuple(g for g in groups if isinstance(g, str))
            if isinstance(groups, list)
            else (),
        )

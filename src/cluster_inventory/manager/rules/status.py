"""What a profile's status should say, given what was observed of its member. Pure.

Follows KEP-4322 *Status* (``docs/manager.md``): ``version.kubernetes`` from ``/version``;
``ControlPlaneHealthy`` from ``/readyz`` (reason and message name the failing check);
``Joined`` from whether the registration credential works; ``properties`` mirrored from the
member's ClusterProperty objects with name and value kept exactly. A transient failure never
erases the last good version or properties: only conditions change. ``lastTransitionTime``
moves only when a condition's status does, so an unchanged observation yields an identical
status and no write. How a ``/readyz`` answer or a failed probe reads is
:mod:`cluster_inventory.kube.probes`' (shared with the member agent), re-exported here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cluster_inventory.api import format_time
from cluster_inventory.api.constants import (
    CONDITION_CONTROL_PLANE_HEALTHY,
    CONDITION_JOINED,
    CONDITION_PROPERTIES_SYNCED,
    CONDITION_REPORT_VALID,
    EXTENSION_EXEC,
    PROPERTY_NAME_MAX_LENGTH,
    PROPERTY_VALUE_MAX_LENGTH,
)
from cluster_inventory.api.objects import fingerprint
from cluster_inventory.kube import ClusterConnection
from cluster_inventory.kube.probes import (
    ConditionState,
    probe_failure,
    readyz_condition,
    readyz_failure,
)

__all__ = [
    "ACCESS_PROVIDERS_DIGEST",
    "ConditionState",
    "Observation",
    "ObservedProperty",
    "access_provider",
    "build_status",
    "probe_failure",
    "readyz_condition",
    "readyz_failure",
    "seed_observation",
    "status_matches",
    "trim_status",
]


@dataclass(frozen=True)
class ObservedProperty:
    """One ClusterProperty of a member as last observed (value exact, time of observation)."""

    name: str
    value: str
    observed: dt.datetime


UNKNOWN = ConditionState("Unknown", "NotYetProbed", "the member has not been probed yet")


@dataclass(frozen=True, kw_only=True)
class Observation:
    """Everything the manager knows about one member right now.

    Attributes:
        version: ``gitVersion`` from ``/version``, or None if never read.
        healthy: ``ControlPlaneHealthy``.
        joined: ``Joined``.
        properties: Mirrored ClusterProperties, or None if they could not be read yet.
        properties_error: Why the properties are missing or stale, if they are.
        member_id: The member's kube-system namespace UID, or None if not known yet.
        report_valid: An agent member's ``ReportValid`` (whether every field its agent
            reported was copied), or None: a probed member, or no report yet.
    """

    version: str | None = None
    healthy: ConditionState = UNKNOWN
    joined: ConditionState = UNKNOWN
    properties: tuple[ObservedProperty, ...] | None = None
    properties_error: str | None = None
    member_id: str | None = None
    report_valid: ConditionState | None = None


def access_provider(
    provider: str, connection: ClusterConnection, cluster_name: str
) -> dict[str, Any]:
    """The ``status.accessProviders`` entry: server, CA and the exec extension. No credential."""
    cluster = connection.kubeconfig_cluster()
    # The kubeconfig's entry less insecure-skip-tls-verify, which a profile never advertises.
    cluster.pop("insecure-skip-tls-verify", None)
    cluster["extensions"] = [{"name": EXTENSION_EXEC, "extension": {"clusterName": cluster_name}}]
    return {"name": provider, "cluster": cluster}


def _condition(
    ctype: str, state: ConditionState, previous: Mapping[str, Mapping[str, Any]], now: str
) -> dict[str, Any]:
    old = previous.get(ctype)
    changed = old is None or old.get("status") != state.status
    return {
        "type": ctype,
        "status": state.status,
        "reason": state.reason,
        "message": state.message[:32768],
        "lastTransitionTime": now if changed or old is None else old.get("lastTransitionTime", now),
    }


def _properties(
    obs: Observation,
    previous: Sequence[Mapping[str, Any]] | None,
    extra: Sequence[tuple[str, str]] = (),
    now: str = "",
) -> tuple[list[dict[str, Any]] | None, ConditionState]:
    mirrored, state = _mirrored(obs, previous)
    if not extra:
        return mirrored, state
    # The source's own properties: a ClusterProperty of the same name wins; the observed
    # time is kept while the value is unchanged, so an unchanged source writes nothing.
    out = list(mirrored or ())
    if obs.properties is None:  # ``mirrored`` is the previous list: refresh ours in it
        names = {name for name, _ in extra}
        out = [p for p in out if p.get("name") not in names]
    taken = {p["name"] for p in out}
    before = {str(p.get("name")): p for p in previous or () if isinstance(p, Mapping)}
    for name, value in extra:
        if name in taken or not value:
            continue
        old = before.get(name)
        seen = old.get("lastObservedTime") if old and old.get("value") == value else None
        out.append({"name": name, "value": value, "lastObservedTime": seen or now})
    return sorted(out, key=lambda p: p["name"]), state


def _mirrored(
    obs: Observation, previous: Sequence[Mapping[str, Any]] | None
) -> tuple[list[dict[str, Any]] | None, ConditionState]:
    if obs.properties is None:
        detail = obs.properties_error or "ClusterProperty objects not read yet"
        kept = [dict(p) for p in previous] if previous else None
        return kept, ConditionState("Unknown", "PropertiesUnavailable", detail)
    out, skipped = [], []
    for prop in sorted(obs.properties, key=lambda p: p.name):
        if len(prop.value) > PROPERTY_VALUE_MAX_LENGTH:
            skipped.append(f"{prop.name} (value is {len(prop.value)} characters, limit 1024)")
            continue
        if not prop.value or len(prop.name) > PROPERTY_NAME_MAX_LENGTH:
            skipped.append(f"{prop.name} (empty value or name too long)")
            continue
        out.append(
            {"name": prop.name, "value": prop.value, "lastObservedTime": format_time(prop.observed)}
        )
    if skipped:
        return out, ConditionState(
            "False", "PropertyNotMirrored", "not copied: " + "; ".join(skipped)
        )
    return out, ConditionState("True", "PropertiesMirrored", f"{len(out)} properties mirrored")


def build_status(
    obs: Observation,
    provider: Mapping[str, Any] | None,
    previous: Mapping[str, Any] | None,
    now: dt.datetime,
    *,
    source_properties: Sequence[tuple[str, str]] = (),
) -> dict[str, Any]:
    """The status to apply to a profile.

    Args:
        obs: The member observation.
        provider: The access provider entry (from :func:`access_provider`), or None for a
            member that must not be contacted yet (no ``accessProviders`` then).
        previous: The profile's current ``status`` (or None).
        now: The time to stamp on conditions that change.
        source_properties: ``(name, value)`` pairs from the registration source, published
            beside the mirrored ClusterProperties (a mirrored one of the same name wins).

    Returns:
        A complete ``status`` object (every field this manager owns).
    """
    previous = previous or {}
    stamp = format_time(now)
    prev_conditions = {
        str(c.get("type")): c for c in previous.get("conditions") or () if isinstance(c, Mapping)
    }
    properties, props_state = _properties(obs, previous.get("properties"), source_properties, stamp)
    last = prev_conditions.get(CONDITION_PROPERTIES_SYNCED)
    if obs.properties is None and obs.properties_error is None and last is not None:
        # Not listed yet (a takeover, a restart): the stored condition stands until the list
        # answers or fails; "not read yet" is no news, and would be a write and a flap.
        props_state = ConditionState(
            str(last.get("status")), str(last.get("reason", "")), str(last.get("message", ""))
        )
    status: dict[str, Any] = {
        "conditions": [
            _condition(CONDITION_CONTROL_PLANE_HEALTHY, obs.healthy, prev_conditions, stamp),
            _condition(CONDITION_JOINED, obs.joined, prev_conditions, stamp),
            _condition(CONDITION_PROPERTIES_SYNCED, props_state, prev_conditions, stamp),
        ],
    }
    if obs.report_valid is not None:
        status["conditions"].append(
            _condition(CONDITION_REPORT_VALID, obs.report_valid, prev_conditions, stamp)
        )
    if provider is not None:
        status["accessProviders"] = [dict(provider)]
    version = obs.version or ((previous.get("version") or {}).get("kubernetes"))
    if version:
        status["version"] = {"kubernetes": version}
    if properties is not None:
        status["properties"] = properties
    return status


#: Key of a trimmed status (:func:`trim_status`) holding its access providers' digest.
ACCESS_PROVIDERS_DIGEST = "\x00accessProvidersDigest"


def trim_status(status: dict[str, Any]) -> dict[str, Any]:
    """``status`` without its access providers, which a digest stands for. Changes ``status``.

    A replica keeps another replica's profiles this way: the access providers (their CA data
    is most of a profile's 3-4 KB) are what it never needs until it writes the profile, and
    then it writes its own; the conditions' transition times and the properties' observed
    times, which a new holder must keep, stay (``docs/scale.md``). :func:`status_matches`
    compares the digest.

    Returns:
        ``status``.
    """
    providers = status.pop("accessProviders", None)
    if providers:
        status[ACCESS_PROVIDERS_DIGEST] = fingerprint(providers)
    return status


def status_matches(desired: Mapping[str, Any], current: Mapping[str, Any] | None) -> bool:
    """True if ``current`` already says everything ``desired`` says (no write needed).

    ``current`` may be trimmed (:func:`trim_status`): its access providers then match by
    digest.
    """
    if not current:
        return False
    digest = current.get(ACCESS_PROVIDERS_DIGEST)
    if "accessProviders" not in desired and (current.get("accessProviders") or digest):
        return False  # a member that must not be contacted publishes no access provider
    for key, value in desired.items():
        if key == "accessProviders" and digest is not None:
            if fingerprint(value) != digest:
                return False
        elif key == "conditions":
            have = {c.get("type"): c for c in current.get("conditions") or ()}
            for cond in value:
                old = have.get(cond["type"])
                if old is None or any(old.get(k) != v for k, v in cond.items()):
                    return False
        elif current.get(key) != value:
            return False
    return True


def seed_observation(status: Mapping[str, Any] | None, member_id: str | None) -> Observation | None:
    """What a profile's stored status lets a new holder assume before its first probe.

    A replica that takes a member over (its holder died, a rolling restart) finds the last
    holder's verdict on the profile. If that says the member was healthy and joined, with a
    version and a member id, the new connection starts from it: ``/readyz``, the
    ``kube-system`` read and ``/version`` (three of a start's five member requests) wait for
    the probes' usual cadence, a reconnect or the ``VERSION_EVERY``-th probe, as they would
    have on the last holder; the member pool probes at once only a member whose
    ClusterProperty list does not answer (``docs/scale.md``). Properties are never seeded:
    they are listed.

    Args:
        status: The profile's ``status`` (None: none stored).
        member_id: The profile's member-id label, if any.

    Returns:
        The seed, or None when the stored status is not a healthy, joined member with a
        version and a member id (the first probe then reads everything).
    """
    if not status or not member_id:
        return None
    version = (status.get("version") or {}).get("kubernetes")
    conditions = {
        str(c.get("type")): c for c in status.get("conditions") or () if isinstance(c, Mapping)
    }
    healthy = conditions.get(CONDITION_CONTROL_PLANE_HEALTHY) or {}
    joined = conditions.get(CONDITION_JOINED) or {}
    if not version or healthy.get("status") != "True" or joined.get("status") != "True":
        return None
    return Observation(
        version=str(version),
        healthy=ConditionState(
            "True", str(healthy.get("reason", "")), str(healthy.get("message", ""))
        ),
        joined=ConditionState(
            "True", str(joined.get("reason", "")), str(joined.get("message", ""))
        ),
        member_id=member_id,
    )

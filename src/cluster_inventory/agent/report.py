"""What the agent's MemberReport status says, and whether it differs from the last one. Pure.

The agent reports from inside its member (``docs/agent.md``, "Reporting"): the member id,
the version, its API server's health, its ClusterProperty objects and what the member
advertises to consumers. The hub must see a change quickly and nothing else: like the
kubelet's node status next to its node Lease (KEP-589) and OCM's klusterlet status
controller next to its lease controller, the status is written only when its content
changes; the heartbeat Lease alone is periodic. The probe time changes at every probe, so it
is left out of the comparison (:func:`same_report`); what the member did not tell us this
time (a version not read yet, properties not listed yet) keeps its last reported value.
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cluster_inventory.api.member_report import (
    REPORTED_PROPERTIES_MAX,
    REPORTED_PROPERTY_VALUE_MAX_LENGTH,
)
from cluster_inventory.api.views import format_time, parse_time
from cluster_inventory.kube.probes import ConditionState

__all__ = [
    "MemberView",
    "ObservedValue",
    "advertised",
    "keep_observed_times",
    "report_status",
    "same_report",
]

_log = logging.getLogger("cluster_inventory.agent")

#: The health before the first probe answered.
NOT_PROBED = ConditionState(
    "Unknown", "NotYetProbed", "the agent has not probed its API server yet"
)


@dataclass(frozen=True)
class ObservedValue:
    """A ClusterProperty's value and when the agent first saw it (UTC)."""

    value: str
    observed: dt.datetime


@dataclass(frozen=True, kw_only=True)
class MemberView:
    """What the agent knows of its member now (what it has not read yet is None).

    Attributes:
        member_id: UID of ``kube-system``, read on every (re)connect.
        version: ``gitVersion`` of ``/version``.
        health: The last ``/readyz`` reading (:mod:`cluster_inventory.kube.probes`).
        probed: When that probe ran (UTC); None before the first.
        properties: ClusterProperty name -> value, or None until they are listed.
    """

    member_id: str | None = None
    version: str | None = None
    health: ConditionState = NOT_PROBED
    probed: dt.datetime | None = None
    properties: Mapping[str, ObservedValue] | None = None


def advertised(
    server: str | None,
    ca_pem: bytes | None,
    proxy_url: str | None,
    *,
    cluster_proxy: bool = False,
    tls_server_name: str | None = None,
) -> dict[str, Any]:
    """The part of the status saying how consumers reach the member (from the agent's flags).

    Args:
        server: API server URL consumers use, or None to say nothing.
        ca_pem: PEM CA bundle of that server, or None.
        proxy_url: Proxy consumers must use, or None.
        cluster_proxy: The agent keeps tunnels to the hub's cluster proxy
            (``docs/cluster-proxy.md``).
        tls_server_name: The name the member's serving certificate is verified against
            by consumers behind the cluster proxy, or None.

    Returns:
        ``server``, ``certificateAuthorityData`` (base64, as in a kubeconfig),
        ``proxyURL``, ``clusterProxy`` and ``tlsServerName``, each only when given.
    """
    out: dict[str, Any] = {}
    if server:
        out["server"] = server
    if ca_pem:
        out["certificateAuthorityData"] = base64.b64encode(ca_pem).decode()
    if proxy_url:
        out["proxyURL"] = proxy_url
    if cluster_proxy:
        out["clusterProxy"] = True
    if tls_server_name:
        out["tlsServerName"] = tls_server_name
    return out


def _properties(observed: Mapping[str, ObservedValue], member: str) -> list[dict[str, str]]:
    out = []
    for name in sorted(observed):
        seen = observed[name]
        if len(seen.value) > REPORTED_PROPERTY_VALUE_MAX_LENGTH:
            _log.warning(
                "ClusterProperty %s is not reported: its value is %d characters (limit %d)",
                name,
                len(seen.value),
                REPORTED_PROPERTY_VALUE_MAX_LENGTH,
                extra={"object": member},
            )
            continue
        out.append(
            {"name": name, "value": seen.value, "lastObservedTime": format_time(seen.observed)}
        )
    if len(out) > REPORTED_PROPERTIES_MAX:
        _log.warning(
            "the member has %d ClusterProperty objects; the report holds the first %d by name",
            len(out),
            REPORTED_PROPERTIES_MAX,
            extra={"object": member},
        )
        out = out[:REPORTED_PROPERTIES_MAX]
    return out


def report_status(
    view: MemberView,
    access: Mapping[str, Any],
    agent_version: str,
    previous: Mapping[str, Any] | None,
    *,
    member: str = "",
) -> dict[str, Any]:
    """The complete ``status`` the agent applies (every field it owns).

    Args:
        view: What the agent knows of its member now.
        access: :func:`advertised`.
        agent_version: This agent's version.
        previous: The status last written (or read from the hub at start), or None: what
            ``view`` does not know yet (member id, version, properties) is kept from it.
        member: The member's name, for logs.

    Returns:
        The ``status`` object, in the shape of
        :class:`~cluster_inventory.api.member_report.MemberReportStatus`.
    """
    previous = previous or {}
    status: dict[str, Any] = {}
    member_id = view.member_id or previous.get("memberID")
    if member_id:
        status["memberID"] = member_id
    version = view.version or previous.get("kubernetesVersion")
    if version:
        status["kubernetesVersion"] = version
    status.update(access)
    status["agentVersion"] = agent_version
    health: dict[str, Any] = {
        "status": view.health.status,
        "reason": view.health.reason,
        "message": view.health.message[:32768],
    }
    if view.probed is not None:
        health["lastProbeTime"] = format_time(view.probed)
    status["apiServerHealth"] = health
    if view.properties is not None:
        properties = _properties(view.properties, member)
    elif isinstance(previous.get("properties"), list):
        properties = [dict(p) for p in previous["properties"]]
    else:
        properties = []
    if properties:  # none: the field is left out (released), as the server stores it
        status["properties"] = properties
    return status


def _without_probe_time(status: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(status)
    health = out.get("apiServerHealth")
    if isinstance(health, Mapping):
        out["apiServerHealth"] = {k: v for k, v in health.items() if k != "lastProbeTime"}
    return out


def same_report(desired: Mapping[str, Any], written: Mapping[str, Any] | None) -> bool:
    """True if ``written`` already says what ``desired`` says (no write needed).

    The probe time alone changing is no change: a member that stays as it was costs no
    write however often it is probed.
    """
    if written is None:
        return False
    return _without_probe_time(desired) == _without_probe_time(written)


def keep_observed_times(
    observed: Mapping[str, ObservedValue], reported: Iterable[Mapping[str, Any]]
) -> dict[str, ObservedValue]:
    """``observed`` with each property's time taken from ``reported`` where its value is the same.

    A restarted agent so reports an unchanged property with its old ``lastObservedTime``
    (and writes nothing when nothing changed while it was away).

    Args:
        observed: Name -> value as just listed.
        reported: The report's ``status.properties`` as stored on the hub.
    """
    before = {str(p.get("name")): p for p in reported if isinstance(p, Mapping) and p.get("name")}
    out = dict(observed)
    for name, seen in observed.items():
        old = before.get(name)
        if old is None or old.get("value") != seen.value:
            continue
        when = parse_time(old.get("lastObservedTime"))
        if when is not None:
            out[name] = ObservedValue(seen.value, when)
    return out

"""What ``manager agents`` shows of each agent member: accepted, joined, available, its CSRs.

Pure: the hub's objects in, one :class:`AgentStatus` per agent-mode registration out
(``docs/agent.md``, "Seeing the agents"). Joined and available are read as the cluster
manager reads them (:meth:`~.agent_reports.AgentReports.joined`, the report's
``apiServerHealth`` while the heartbeat Lease is fresh, stale after ``leaseDurationSeconds
x multiple``, the manager's default 5); the CSRs are the pending ones its identities filed or
that carry its name, and the refusals are the CSR approver's Warning Events on its
registration Secret (Events last about an hour on a hub: kube-apiserver's ``--event-ttl``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cluster_inventory.api import objects
from cluster_inventory.api.constants import LABEL_AGENT, REPORTING_CONTROLLER_MANAGER
from cluster_inventory.api.views import parse_time
from cluster_inventory.manager.rules.agent_approval import (
    is_pending,
    read_refusal_note,
    requester_of,
)
from cluster_inventory.manager.rules.registration import is_agent_registration

__all__ = ["AgentStatus", "Refusal", "agent_statuses"]


@dataclass(frozen=True)
class Refusal:
    """One CSR the approver refused for a member's identity (one of its Events).

    Attributes:
        csr: The CSR's name (deleted since, unless its requester was no agent's).
        reason: The Event's reason, e.g. ``WrongAgent``.
        time: When (the Event's time), or None.
        why: The Event's note.
    """

    csr: str
    reason: str
    time: dt.datetime | None
    why: str


@dataclass(frozen=True)
class AgentStatus:
    """One agent member as the hub holds it.

    Attributes:
        name: The member name.
        accepted: When its registration was made (``manager accept``), or None.
        joined: Its agent wrote on the hub (its Lease renewed, or its report).
        available: ``True``, ``False`` or ``Unknown`` (the heartbeat is stale, or nothing
            reported yet); ``-`` before it joined.
        renewed: Its heartbeat's last ``renewTime``, or None.
        pending: Names of the pending CSRs filed by its identities or naming it.
        refused: The approver's refusals of its identities' CSRs, newest first.
    """

    name: str
    accepted: dt.datetime | None
    joined: bool
    available: str
    renewed: dt.datetime | None
    pending: tuple[str, ...]
    refused: tuple[Refusal, ...]


def _by_name(items: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {str(objects.meta(o).get("name")): o for o in items}


def _csr_member(csr: Mapping[str, Any]) -> set[str]:
    spec = objects.spec(csr)
    requester = requester_of(
        str(spec.get("username") or ""), tuple(str(g) for g in spec.get("groups") or ())
    )
    found = {objects.labels_of(csr).get(LABEL_AGENT) or ""}
    if requester is not None:
        found.add(requester.member)
    return found - {""}


def agent_statuses(
    registrations: Iterable[Mapping[str, Any]],
    leases: Iterable[Mapping[str, Any]],
    reports: Iterable[Mapping[str, Any]],
    csrs: Iterable[Mapping[str, Any]],
    events: Iterable[Mapping[str, Any]],
    now: dt.datetime,
    *,
    heartbeat_multiple: float = 5.0,
) -> list[AgentStatus]:
    """One status per agent-mode registration, by name.

    Args:
        registrations: The registration Secrets of the manager's namespace (others skipped).
        leases: The heartbeat Leases there.
        reports: The MemberReports there.
        csrs: The hub's CertificateSigningRequests.
        events: ``events.k8s.io/v1`` Events of the manager's namespace.
        now: The current time (timezone-aware).
        heartbeat_multiple: Lease durations without a renewal after which it is Unknown.
    """
    lease_of, report_of = _by_name(leases), _by_name(reports)
    pending: dict[str, list[str]] = {}
    for csr in csrs:
        if is_pending(dict(csr)):
            for member in _csr_member(csr):
                pending.setdefault(member, []).append(str(objects.meta(csr).get("name")))
    refused: dict[str, list[Refusal]] = {}
    for event in events:
        regarding = event.get("regarding") or {}
        if event.get("reportingController") != REPORTING_CONTROLLER_MANAGER:
            continue
        if regarding.get("kind") != "Secret" or event.get("action") != "Approve":
            continue
        named, why = read_refusal_note(str(event.get("note") or ""))
        refused.setdefault(str(regarding.get("name")), []).append(
            Refusal(
                csr=named,
                reason=str(event.get("reason") or ""),
                time=parse_time(event.get("eventTime")),
                why=why,
            )
        )
    out = []
    for secret in registrations:
        if not is_agent_registration(secret):
            continue
        name = str(objects.meta(secret).get("name"))
        lease_spec = objects.spec(lease_of.get(name) or {})
        status = objects.status(report_of.get(name) or {})
        renewed = parse_time(lease_spec.get("renewTime"))
        joined = renewed is not None or bool(status)
        out.append(
            AgentStatus(
                name=name,
                accepted=parse_time(objects.meta(secret).get("creationTimestamp")),
                joined=joined,
                available=_available(joined, renewed, lease_spec, status, now, heartbeat_multiple),
                renewed=renewed,
                pending=tuple(sorted(pending.get(name, ()))),
                refused=tuple(
                    sorted(
                        refused.get(name, ()),
                        key=lambda r: r.time or dt.datetime.min.replace(tzinfo=dt.UTC),
                        reverse=True,
                    )
                ),
            )
        )
    return sorted(out, key=lambda s: s.name)


def _available(
    joined: bool,
    renewed: dt.datetime | None,
    lease_spec: Mapping[str, Any],
    status: Mapping[str, Any],
    now: dt.datetime,
    multiple: float,
) -> str:
    if not joined:
        return "-"
    duration = lease_spec.get("leaseDurationSeconds")
    seconds = float(duration) if isinstance(duration, int | float) and duration > 0 else 60.0
    if renewed is None or (now - renewed).total_seconds() > seconds * multiple:
        return "Unknown"
    health = status.get("apiServerHealth") or {}
    value = health.get("status") if isinstance(health, Mapping) else None
    return str(value) if value in ("True", "False") else "Unknown"

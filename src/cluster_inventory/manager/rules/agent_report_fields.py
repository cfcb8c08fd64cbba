"""What of an agent's report reaches its profiles: every field checked, the last good kept. Pure.

A MemberReport's status is written by the member's agent, so what it says is input, not
truth (``docs/agent.md``, "The hub side"). The report's CRD bounds each field loosely (a
reason of any 1024 characters, a CA of any size); the profiles it is copied into are
stricter, and so is the cluster manager. Before a field is copied, :func:`check_report`
checks it against

- the ClusterProfile schema it is written to, through the models of
  :mod:`cluster_inventory.api` and their CRD-derived limits: the condition's reason pattern
  and message length (:class:`~cluster_inventory.api.Condition`), a property's name and
  value (:class:`~cluster_inventory.api.Property`), the access provider's ``server`` and
  ``proxy-url`` (:class:`cluster_inventory.api.v1alpha2.Cluster`: v1alpha2's rules contain
  v1alpha1's, which has none for these fields, so whatever the hub serves, a profile never
  holds what a v1alpha2 reader refuses), and the member-id label (apimachinery's label
  value rule);
- the bounds the manager sets (:class:`ReportBounds`, ``ManagerConfig.report_bounds``): CA size,
  property count and value length, message length, which URLs consumers may be sent to
  (:mod:`~cluster_inventory.api.advertised_urls`), a CA that holds PEM certificates and
  nothing else, a version shaped like a ``gitVersion``, times from 1970 to 9999.

A field that fails keeps its last good value for that member (none yet: it is left out),
and the report says so in a :class:`FieldProblem`; the other fields still flow. The one
exception is the health's reason and message: they belong to its status, which still flows
(a member the agent calls unhealthy is shown unhealthy); a refused reason reads
``AgentReported`` and a refused message says it was not copied, since the last good ones
would describe another status. Nothing refused is quoted back: a problem names the field and
what is wrong with it.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from pydantic import ValidationError

from cluster_inventory.api import Condition, Property, label_value_problem, v1alpha2
from cluster_inventory.api.advertised_urls import (
    PROXY_URL_SCHEMES,
    SERVER_SCHEMES,
    AddressPolicy,
    url_problem,
)
from cluster_inventory.api.constants import (
    CONDITION_CONTROL_PLANE_HEALTHY,
    CONDITION_REPORT_VALID,
    PROPERTY_VALUE_MAX_LENGTH,
    REASON_AGENT_REPORTED,
    REASON_INVALID_REPORT_FIELD,
    REASON_REPORT_VALID,
)
from cluster_inventory.api.member_report import REPORTED_PROPERTIES_MAX
from cluster_inventory.api.views import parse_time
from cluster_inventory.kube.probes import ConditionState
from cluster_inventory.manager.rules.status import ObservedProperty

__all__ = [
    "CheckedReport",
    "FieldProblem",
    "ReportBounds",
    "ReportFields",
    "check_report",
]

#: A Kubernetes ``gitVersion``: ``v`` and a semantic version (``v1.36.3``,
#: ``v1.30.2+k3s1``, ``v1.29.4-gke.1043002``); the report's CRD allows 64 characters.
_GIT_VERSION = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]*)?$")
_VERSION_MAX = 64
_PEM_BLOCK = re.compile(rb"-----BEGIN ([A-Z0-9 ]{1,64})-----\r?\n(.*?)-----END \1-----", re.DOTALL)
#: Stands for the server while another field of the access provider is checked alone.
_SOME_SERVER = "https://server.invalid"
#: Property times a profile may carry: Unix time from its start to the last four-digit year.
_EARLIEST = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_LATEST = dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.UTC)
#: Problems a condition message lists before it counts the rest.
_LISTED = 20


@dataclass(frozen=True, kw_only=True)
class ReportBounds:
    """What the cluster manager accepts of a report beyond the ClusterProfile schema.

    The defaults are the manager's (its ``agent_report_*`` settings start from them).

    Attributes:
        ca_max_bytes: Longest ``certificateAuthorityData``, in PEM bytes (after base64).
        properties_max: Most properties one report may give a profile.
        property_value_max: Longest property value (characters, at most 1024).
        message_max: Longest ``apiServerHealth.message`` (characters, at most 32768).
        addresses: Which hosts a reported ``server`` or ``proxyURL`` may name.
    """

    ca_max_bytes: int = 16384
    properties_max: int = REPORTED_PROPERTIES_MAX
    property_value_max: int = PROPERTY_VALUE_MAX_LENGTH
    message_max: int = 4096
    addresses: AddressPolicy = field(default_factory=AddressPolicy)


@dataclass(frozen=True, kw_only=True)
class ReportFields:
    """The fields of a report that may reach a profile, each checked (None: none to copy).

    Attributes:
        member_id: ``memberID``, a label value.
        version: ``kubernetesVersion``.
        server: ``server``, an ``https`` URL consumers may be sent to.
        ca_data: ``certificateAuthorityData`` decoded: its PEM certificate blocks only.
        proxy_url: ``proxyURL``.
        cluster_proxy: ``clusterProxy``: the agent keeps tunnels to the hub's cluster proxy.
        tls_server_name: ``tlsServerName``: the name consumers behind the proxy verify.
        health: ``apiServerHealth`` as ``ControlPlaneHealthy`` would carry it.
        properties: ``properties`` sorted by name, each with the time the member first had
            its value; None when no list was good yet.
    """

    member_id: str | None = None
    version: str | None = None
    server: str | None = None
    ca_data: bytes | None = None
    proxy_url: str | None = None
    cluster_proxy: bool = False
    tls_server_name: str | None = None
    health: ConditionState | None = None
    properties: tuple[ObservedProperty, ...] | None = None


@dataclass(frozen=True)
class FieldProblem:
    """A reported field that was not copied as it is.

    Attributes:
        field: Its path in the MemberReport, e.g. ``status.server`` or
            ``status.properties[region].value``.
        problem: What is wrong with it (never the value itself).
        outcome: What the profile carries instead, e.g. ``the last good value is kept``.
    """

    field: str
    problem: str
    outcome: str

    def __str__(self) -> str:
        return f"{self.field}: {self.problem}; {self.outcome}"


@dataclass(frozen=True)
class CheckedReport:
    """A report's fields as they may be copied, and what was refused.

    Attributes:
        fields: Every field checked; a refused one holds its last good value.
        problems: The refused fields, in the report's order.
    """

    fields: ReportFields
    problems: tuple[FieldProblem, ...] = ()

    def condition(self) -> ConditionState:
        """The profile's ``ReportValid`` condition: True, or False naming each refused field."""
        if not self.problems:
            return ConditionState(
                "True", REASON_REPORT_VALID, "every field of the agent's report was copied"
            )
        listed = "; ".join(str(p) for p in self.problems[:_LISTED])
        more = len(self.problems) - _LISTED
        suffix = f"; and {more} more" if more > 0 else ""
        return ConditionState("False", REASON_INVALID_REPORT_FIELD, listed + suffix)


_KEPT = "the last good value is kept"
_LEFT_OUT = "left out (no good value yet)"


def _shown(name: str) -> str:
    """A reported name as a problem may show it: short, and no control character raw."""
    return name if name.isprintable() and len(name) <= 64 else repr(name[:64])


def _schema_problem(error: ValidationError, key: str) -> str | None:
    """The first refusal of field ``key`` in ``error``, without the value refused."""
    for item in error.errors(include_url=False, include_input=False, include_context=False):
        if item["loc"] and item["loc"][0] == key:
            return f"is refused by the ClusterProfile schema: {item['msg']}"
    return None


def _cluster_problem(key: str, value: Any) -> str | None:
    """Why the v1alpha2 access provider's ``cluster`` refuses ``value`` as its ``key``."""
    try:
        v1alpha2.Cluster.model_validate({"server": _SOME_SERVER, key: value})
    except ValidationError as exc:
        return _schema_problem(exc, key) or "is refused by the ClusterProfile schema"
    return None


#: A TLS server name as written: DNS labels or an IP address, nothing else.
_SERVER_NAME = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9.:]*[a-z0-9])?$")


def _tls_server_name_checker(bounds: ReportBounds) -> Callable[[str], str | None]:
    """Why a ``tlsServerName`` may not be given to consumers, or None.

    Behind the cluster proxy it becomes the host of the profile's ``server``
    (``advertised_connection``), so it is held to a server's address policy too: a consumer
    that left the proxy out would dial it.
    """

    def problem(value: str) -> str | None:
        if not _SERVER_NAME.match(value.lower()):
            return "is not a DNS name or an IP address"
        host = f"[{value}]" if ":" in value else value
        return _cluster_problem("tls-server-name", value) or url_problem(
            f"https://{host}", schemes=("https",), policy=bounds.addresses
        )

    return problem


def _member_id_problem(value: str) -> str | None:
    problem = label_value_problem(value, required=True)
    return None if problem is None else f"{problem} (it becomes the member-id label)"


def _version_problem(value: str) -> str | None:
    if len(value) > _VERSION_MAX or not _GIT_VERSION.match(value):
        return "is not a Kubernetes gitVersion (v1.2.3, with an optional -pre or +build part)"
    return None


def _url_checker(
    schemes: tuple[str, ...], key: str, bounds: ReportBounds
) -> Callable[[str], str | None]:
    def problem(value: str) -> str | None:
        return _cluster_problem(key, value) or url_problem(
            value, schemes=schemes, policy=bounds.addresses
        )

    return problem


def _ca(value: str, max_bytes: int) -> tuple[bytes | None, str | None]:
    """(the PEM certificate blocks of ``value``, None) or (None, why it is refused)."""
    try:
        pem = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None, "is not base64"
    if len(pem) > max_bytes:
        return None, f"is {len(pem)} bytes of PEM; the manager copies at most {max_bytes}"
    blocks = list(_PEM_BLOCK.finditer(pem))
    others = sorted({m.group(1).decode() for m in blocks if m.group(1) != b"CERTIFICATE"})
    if others:
        # A key in a CA field is a credential: never copied, wherever it sits.
        return None, f"holds a {', '.join(others)} block; a CA holds certificates only"
    if not blocks or pem.count(b"-----BEGIN") != len(blocks):
        return None, "holds no PEM certificate, or a PEM block that is not closed"
    certificates = b"".join(m.group(0) + b"\n" for m in blocks)
    try:
        x509.load_pem_x509_certificates(certificates)
    except ValueError:
        return None, "holds a CERTIFICATE block that is not an X.509 certificate"
    return certificates, None


def _health(
    raw: Any, last: ConditionState | None, bounds: ReportBounds, problems: list[FieldProblem]
) -> ConditionState | None:
    """The health as ``ControlPlaneHealthy`` carries it (``last`` when its status is refused)."""
    outcome = _KEPT if last is not None else _LEFT_OUT
    if not isinstance(raw, Mapping):
        problems.append(FieldProblem("status.apiServerHealth", "is not an object", outcome))
        return last
    status = raw.get("status")
    reason = raw.get("reason") or REASON_AGENT_REPORTED
    message = raw.get("message") or ""
    try:
        Condition.model_validate(
            {
                "type": CONDITION_CONTROL_PLANE_HEALTHY,
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": _EARLIEST,
            }
        )
    except ValidationError as exc:
        if _schema_problem(exc, "status") is not None:
            problems.append(
                FieldProblem(
                    "status.apiServerHealth.status", "is not True, False or Unknown", outcome
                )
            )
            return last
        if _schema_problem(exc, "reason") is not None:
            problems.append(
                FieldProblem(
                    "status.apiServerHealth.reason",
                    "does not match the condition reason pattern "
                    "(a letter, then letters, digits, '_', ',' or ':'; at most 1024)",
                    f"the status is copied with reason {REASON_AGENT_REPORTED}",
                )
            )
            reason = REASON_AGENT_REPORTED
    # The schema's own limit (32768) is above the manager's: this covers both.
    if not isinstance(message, str) or len(message) > bounds.message_max:
        size = f"{len(message)} characters" if isinstance(message, str) else "not text"
        problems.append(
            FieldProblem(
                "status.apiServerHealth.message",
                f"is {size}; the manager copies at most {bounds.message_max} characters",
                "the status is copied without it",
            )
        )
        message = f"the agent's message was not copied (condition {CONDITION_REPORT_VALID})"
    return ConditionState(str(status), str(reason), message)


def _property_problem(entry: Mapping[str, Any], bounds: ReportBounds) -> str | None:
    try:
        Property.model_validate(entry)
    except ValidationError as exc:
        for key in ("name", "value", "lastObservedTime"):
            problem = _schema_problem(exc, key)
            if problem is not None:
                return f"{key} {problem}"
        return "is refused by the ClusterProfile schema"
    value = str(entry.get("value"))
    if len(value) > bounds.property_value_max:
        return (
            f"value is {len(value)} characters; the manager copies at most "
            f"{bounds.property_value_max}"
        )
    raw_time = entry.get("lastObservedTime")
    when = parse_time(raw_time)
    if raw_time is not None and (when is None or not _EARLIEST <= when <= _LATEST):
        return "lastObservedTime is not a time from 1970 to 9999 (UTC)"
    return None


def _properties(
    raw: Any,
    last: tuple[ObservedProperty, ...] | None,
    bounds: ReportBounds,
    now: dt.datetime,
    problems: list[FieldProblem],
) -> tuple[ObservedProperty, ...] | None:
    if raw is None:
        return ()  # the agent leaves the list out when the member has no property
    outcome = _KEPT if last is not None else _LEFT_OUT
    if not isinstance(raw, list):
        problems.append(FieldProblem("status.properties", "is not a list", outcome))
        return last
    if len(raw) > bounds.properties_max:
        problems.append(
            FieldProblem(
                "status.properties",
                f"holds {len(raw)} properties; the manager copies at most {bounds.properties_max}",
                outcome,
            )
        )
        return last
    before = {p.name: p for p in last or ()}
    out: dict[str, ObservedProperty] = {}
    for i, entry in enumerate(raw):
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or not name:
            problems.append(FieldProblem(f"status.properties[{i}]", "has no name", "left out"))
            continue
        where = f"status.properties[{_shown(name)}]"
        problem = _property_problem(entry, bounds)
        if problem is not None:
            kept = before.get(name)
            problems.append(FieldProblem(where, problem, _KEPT if kept else _LEFT_OUT))
            if kept is not None:
                out[name] = kept
            continue
        value = str(entry["value"])
        when = parse_time(entry.get("lastObservedTime"))
        if when is None:  # none given: the time it was first seen with this value
            old = before.get(name)
            when = old.observed if old is not None and old.value == value else now
        out[name] = ObservedProperty(name, value, when)
    return tuple(out[name] for name in sorted(out))


def check_report(
    status: Mapping[str, Any],
    last: ReportFields | None,
    bounds: ReportBounds,
    now: dt.datetime,
) -> CheckedReport:
    """Check every field of a MemberReport's ``status`` before it is copied.

    Args:
        status: The report's ``status`` as the hub stores it (non-empty).
        last: What the last check of this member's report let through, or None.
        bounds: The manager's bounds.
        now: The observation time of a property that gives none and is new.

    Returns:
        The fields to copy (a refused one holds its value in ``last``, or None) and the
        problems, in the order of :class:`ReportFields`.
    """
    last = last or ReportFields()
    problems: list[FieldProblem] = []
    good: dict[str, Any] = {}
    checks: tuple[tuple[str, str, Callable[[str], str | None]], ...] = (
        ("member_id", "memberID", _member_id_problem),
        ("version", "kubernetesVersion", _version_problem),
        ("server", "server", _url_checker(SERVER_SCHEMES, "server", bounds)),
        ("proxy_url", "proxyURL", _url_checker(PROXY_URL_SCHEMES, "proxy-url", bounds)),
        ("tls_server_name", "tlsServerName", _tls_server_name_checker(bounds)),
    )
    for attr, key, check in checks:
        raw = status.get(key)
        if raw is None or raw == "":
            good[attr] = None  # not reported (any more): nothing to copy
            continue
        problem = "is not a string" if not isinstance(raw, str) else check(raw)
        if problem is None:
            good[attr] = raw
            continue
        kept = getattr(last, attr)
        problems.append(FieldProblem(f"status.{key}", problem, _KEPT if kept else _LEFT_OUT))
        good[attr] = kept
    raw_proxy = status.get("clusterProxy")
    good["cluster_proxy"] = raw_proxy is True
    if raw_proxy is not None and not isinstance(raw_proxy, bool):
        good["cluster_proxy"] = last.cluster_proxy
        outcome = _KEPT if last.cluster_proxy else _LEFT_OUT
        problems.append(FieldProblem("status.clusterProxy", "is not a boolean", outcome))
    raw_ca = status.get("certificateAuthorityData")
    good["ca_data"] = None
    if raw_ca:
        ca, problem = (
            _ca(raw_ca, bounds.ca_max_bytes) if isinstance(raw_ca, str) else (None, "not text")
        )
        if problem is None:
            good["ca_data"] = ca
        else:
            outcome = _KEPT if last.ca_data else _LEFT_OUT
            problems.append(FieldProblem("status.certificateAuthorityData", problem, outcome))
            good["ca_data"] = last.ca_data
    raw_health = status.get("apiServerHealth")
    good["health"] = (
        None if raw_health is None else _health(raw_health, last.health, bounds, problems)
    )
    good["properties"] = _properties(
        status.get("properties"), last.properties, bounds, now, problems
    )
    return CheckedReport(ReportFields(**good), tuple(problems))

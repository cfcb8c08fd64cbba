"""The cluster manager's settings, with the defaults a deployment starts from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from cluster_inventory import _yaml
from cluster_inventory._textfile import UnreadableFileError, read_text
from cluster_inventory.api import label_value_problem
from cluster_inventory.api.advertised_urls import PROXY_URL_SCHEMES, AddressPolicy, url_problem
from cluster_inventory.api.constants import (
    ACCESS_PROVIDER_SECRETREADER,
    LABEL_CAPI_CLUSTERSET,
    PROPERTY_VALUE_MAX_LENGTH,
)
from cluster_inventory.kube.certificates import MIN_EXPIRATION_SECONDS
from cluster_inventory.manager.rules.agent_report_fields import ReportBounds
from cluster_inventory.manager.rules.member_roles import (
    MemberRoles,
    MemberRolesError,
    member_roles_of,
)
from cluster_inventory.manager.rules.names import DEFAULT_MANAGER_NAME, DEFAULT_NAMESPACE

__all__ = ["SOURCE_KINDS", "ManagerConfig", "parse_source", "read_member_roles_file"]

#: What ``manager run --source`` accepts.
SOURCE_KINDS = ("secrets", "capi", "file:PATH")


def parse_source(spec: str) -> tuple[str, str]:
    """``secrets``, ``capi`` or ``file:PATH`` to ``(kind, argument)``.

    Raises:
        ValueError: Anything else; the message lists what is accepted.
    """
    if spec in ("secrets", "capi"):
        return spec, ""
    if spec.startswith("file:") and len(spec) > 5:
        return "file", spec[5:]
    raise ValueError(f"unknown registration source {spec!r}; use one of {', '.join(SOURCE_KINDS)}")


def read_member_roles_file(path: str) -> dict[str, tuple[str, ...]]:
    """The allow-list of member roles in a YAML file (``--member-roles-file``), read once.

    Its shape is :func:`~.rules.member_roles.member_roles_of`'s: ``prod: [view, edit]``.

    Raises:
        MemberRolesError: The file cannot be read, is not YAML or not such a mapping, or
            names a bad role; the message names the file and the entry.
    """
    try:
        doc: Any = _yaml.load(read_text(path))
    except UnreadableFileError as exc:
        raise MemberRolesError(path, exc.problem) from None
    except yaml.YAMLError as exc:
        raise MemberRolesError(path, _yaml.describe(exc)) from None
    return member_roles_of(doc, path)


#: A condition message's limit (``metav1.Condition``, the ClusterProfile CRD).
_MESSAGE_MAX = 32768

#: aiohttp's keep-alive (seconds), and a member's when its probes are further apart.
_KEEPALIVE = 15.0
_IDLE_CLOSE = 2.0


@dataclass(frozen=True, kw_only=True)
class ManagerConfig:
    """Settings of one cluster manager.

    Attributes:
        name: The manager's name: ``spec.clusterManager.name`` and the label
            ``x-k8s.io/cluster-manager`` of every profile it owns (a label value, <= 63).
        namespace: Hub namespace of registrations and the leader Lease.
        member_namespace: Namespace on each member for the consumers' ServiceAccounts.
        inventory_namespaces: Fixed inventories: hub namespace -> cluster sets, in addition
            to namespaces labelled ``multicluster.x-k8s.io/clusterset``.
        inventory_namespaces_only: Serve only ``inventory_namespaces``, not labelled
            namespaces, and watch token Secrets only there: for a manager whose Secret
            access is granted per namespace (the chart's ``secretAccess: namespaces``).
        access_provider: Name of the access provider published on every profile.
        member_roles: The allow-list of member ClusterRoles: cluster set -> the roles an
            inventory of that set may get, its default first (``--member-roles``). An
            inventory asking for another gets the default (:mod:`.member_roles`).
        default_member_role: The one role allowed, and the default, for a set not in
            ``member_roles`` ("" allows none there).
        token_lifetime: Requested lifetime of consumer tokens, seconds (the API server's
            minimum is 600).
        rotation_fraction: Rotate a token once this fraction of its lifetime has passed.
        probe_interval: Seconds between health probes of a member.
        probe_timeout: Seconds a probe may take before the member counts as unreachable.
        workers: Concurrent status reconciles (token Secrets get a quarter as many).
        sources: Registration sources in order of precedence: ``secrets`` (labelled
            Secrets in ``namespace``), ``capi`` (Cluster API Clusters), ``file:PATH``.
        capi_namespaces: Namespaces of Cluster API Clusters (empty: all namespaces).
        capi_clusterset_label: Label key on a Cluster naming the cluster set it joins.
        capi_clustersets: Cluster sets of a Cluster that names none (empty: such a
            Cluster is not a member).
        agent_approval: Approve the CSRs of accepted agent members (``docs/agent.md``);
            needs the CSR rights of the chart's manager ClusterRole.
        agent_certificate_max_seconds: The longest ``spec.expirationSeconds`` of an agent's
            CSR the approver approves (a CSR asking for more, or naming none, is deleted):
            certificates cannot be revoked, so they are short (default 24 h, the agent's).
        agent_heartbeat_multiple: An agent member's ``ControlPlaneHealthy`` turns Unknown
            once its heartbeat Lease goes this many lease durations without a renewal
            (OCM's hub: 5).
        agent_lease_duration: Seconds of the lease duration the heartbeat's grace is
            counted in when an agent's Lease names one outside ``agent_lease_duration_min``
            .. ``agent_lease_duration_max`` (ignored, said once), and what ``manager accept``
            writes by default (OCM's hub sets the lease duration, not the agent).
        agent_lease_duration_min: Shortest ``leaseDurationSeconds`` of an agent's Lease
            the manager counts in (seconds).
        agent_lease_duration_max: Longest, likewise: an agent never stays fresh for more
            than ``agent_lease_duration_max x agent_heartbeat_multiple`` without renewing.
        agent_report_max_ca_bytes: Longest ``certificateAuthorityData`` (PEM bytes, after
            base64) an agent's report may give its profiles' access provider.
        agent_report_max_properties: Most ClusterProperties one report may give a profile.
        agent_report_max_property_value: Longest property value copied (characters; the
            ClusterProfile's own limit, 1024, at most).
        agent_report_max_message: Longest ``apiServerHealth.message`` copied (characters;
            the condition's limit, 32768, at most).
        agent_report_allow_loopback: A reported ``server`` or ``proxyURL`` may name a
            loopback address (``127.0.0.0/8``, ``::1``, ``localhost``): a tunnel every
            consumer runs beside it, or a member on the consumers' own host.
        agent_report_allow_link_local: A reported ``server`` or ``proxyURL`` may name a
            link-local (``169.254.0.0/16``, ``fe80::/10``) or cloud metadata address
            (``169.254.169.254``, ``fd00:ec2::254``, ``metadata.google.internal``, ...).
        cluster_proxy_url: The consumers' CONNECT URL of the hub's cluster proxy
            (``http``, ``https`` or ``socks5``... in practice ``http://HOST:PORT``); an
            agent member whose report says ``clusterProxy`` gets an access provider through
            it (``docs/cluster-proxy.md``). None: such members get the server they
            advertise, if any.

    Raises:
        ValueError: A setting is out of range; the message names it.
    """

    name: str = DEFAULT_MANAGER_NAME
    namespace: str = DEFAULT_NAMESPACE
    member_namespace: str = DEFAULT_NAMESPACE
    inventory_namespaces: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    inventory_namespaces_only: bool = False
    access_provider: str = ACCESS_PROVIDER_SECRETREADER
    member_roles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    default_member_role: str = "view"
    token_lifetime: float = 3600.0
    rotation_fraction: float = 0.8
    probe_interval: float = 2.0
    probe_timeout: float = 2.0
    workers: int = 32
    sources: tuple[str, ...] = ("secrets",)
    capi_namespaces: tuple[str, ...] = ()
    capi_clusterset_label: str = LABEL_CAPI_CLUSTERSET
    capi_clustersets: tuple[str, ...] = ()
    agent_approval: bool = True
    agent_certificate_max_seconds: int = 86400
    agent_heartbeat_multiple: float = 5.0
    agent_lease_duration: float = 60.0
    agent_lease_duration_min: float = 10.0
    agent_lease_duration_max: float = 3600.0
    agent_report_max_ca_bytes: int = ReportBounds.ca_max_bytes
    agent_report_max_properties: int = ReportBounds.properties_max
    agent_report_max_property_value: int = ReportBounds.property_value_max
    agent_report_max_message: int = ReportBounds.message_max
    agent_report_allow_loopback: bool = AddressPolicy.allow_loopback
    agent_report_allow_link_local: bool = AddressPolicy.allow_link_local
    cluster_proxy_url: str | None = None

    def __post_init__(self) -> None:
        if self.cluster_proxy_url is not None:
            problem = url_problem(
                self.cluster_proxy_url,
                schemes=PROXY_URL_SCHEMES,
                policy=AddressPolicy(allow_loopback=True),
            )
            if problem is not None:
                raise ValueError(f"cluster_proxy_url: {problem}")
        if label_value_problem(self.name, required=True):
            raise ValueError(f"manager name {self.name!r} must be a label value (<= 63 chars)")
        if self.token_lifetime < 600:
            raise ValueError("token_lifetime must be at least 600 s (TokenRequest minimum)")
        if not 0.1 <= self.rotation_fraction < 1:
            raise ValueError("rotation_fraction must be in [0.1, 1)")
        if self.probe_interval <= 0 or self.probe_timeout <= 0:
            raise ValueError("probe_interval and probe_timeout must be positive")
        if self.inventory_namespaces_only and not self.inventory_namespaces:
            raise ValueError("inventory_namespaces_only needs at least one inventory namespace")
        if self.agent_heartbeat_multiple < 1:
            raise ValueError("agent_heartbeat_multiple must be at least 1")
        self._check_agent_bounds()
        MemberRoles(by_set=self.member_roles, default=self.default_member_role)  # validates
        if self.workers < 1:
            raise ValueError("workers must be at least 1")
        if not self.sources:
            raise ValueError("sources must name at least one registration source")
        for spec in self.sources:
            parse_source(spec)
        if len(set(self.sources)) != len(self.sources):
            raise ValueError(f"a registration source is given twice: {list(self.sources)}")
        if self.agent_certificate_max_seconds < MIN_EXPIRATION_SECONDS:
            raise ValueError(
                f"agent_certificate_max_seconds must be at least {MIN_EXPIRATION_SECONDS} "
                f"(the CSR API's minimum), not {self.agent_certificate_max_seconds}"
            )

    def _check_agent_bounds(self) -> None:
        low, high = self.agent_lease_duration_min, self.agent_lease_duration_max
        if not 0 < low <= self.agent_lease_duration <= high:
            raise ValueError(
                f"agent_lease_duration {self.agent_lease_duration:g} s must lie within "
                f"agent_lease_duration_min {low:g} s and agent_lease_duration_max {high:g} s "
                "(the minimum above 0)"
            )
        for name, value, top in (
            ("agent_report_max_ca_bytes", self.agent_report_max_ca_bytes, None),
            ("agent_report_max_properties", self.agent_report_max_properties, None),
            (
                "agent_report_max_property_value",
                self.agent_report_max_property_value,
                PROPERTY_VALUE_MAX_LENGTH,
            ),
            ("agent_report_max_message", self.agent_report_max_message, _MESSAGE_MAX),
        ):
            if value < 1 or (top is not None and value > top):
                limit = f" and at most {top} (the ClusterProfile's limit)" if top else ""
                raise ValueError(f"{name} must be at least 1{limit}, not {value}")

    @property
    def roles(self) -> MemberRoles:
        """The allow-list of member ClusterRoles (``member_roles``, ``default_member_role``)."""
        return MemberRoles(by_set=self.member_roles, default=self.default_member_role)

    @property
    def report_bounds(self) -> ReportBounds:
        """What of an agent's report the manager copies (the ``agent_report_*`` settings)."""
        return ReportBounds(
            ca_max_bytes=self.agent_report_max_ca_bytes,
            properties_max=self.agent_report_max_properties,
            property_value_max=self.agent_report_max_property_value,
            message_max=self.agent_report_max_message,
            addresses=AddressPolicy(
                allow_loopback=self.agent_report_allow_loopback,
                allow_link_local=self.agent_report_allow_link_local,
            ),
        )

    @property
    def member_keepalive(self) -> float:
        """Seconds a member's idle connection is kept for its next request.

        aiohttp's 15 s while the next probe comes sooner (the connection serves it); 2 s when
        probes are further apart than that, so that the connection a probe opened is closed
        just after it: kept, it would only hold memory (uvloop's 256 KiB read buffer, the TLS
        state) until aiohttp closed it unused, for most members at once (``docs/scale.md``).
        The ClusterProperty watch is never idle, and a probe's own requests follow at once.
        """
        return _KEEPALIVE if self.probe_interval < _KEEPALIVE else _IDLE_CLOSE

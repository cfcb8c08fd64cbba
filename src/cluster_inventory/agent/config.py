"""What an agent reports as and how often, checked whole before it acts. Pure.

Every value here ends up somewhere: the name and namespace in the hub's object names, the
advertised server, CA and proxy in the MemberReport's status and from there in the access
provider of the member's ClusterProfiles (``api.member_report.MemberReportStatus``,
``api.v1alpha2.Cluster``). So each is checked against what it will be written to when the
agent starts, before it files a CSR or writes anything, and a bad one is an
:class:`AgentConfigError` naming the field (``cluster-inventory agent run`` names the flag).
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

import pydantic
from cryptography import x509

from cluster_inventory import kube
from cluster_inventory.agent.credential import DEFAULT_CONSUMER_TOKEN_LIFETIME
from cluster_inventory.agent.heartbeat import DEFAULT_LEASE_DURATION
from cluster_inventory.agent.reporter import DEFAULT_PROBE_INTERVAL
from cluster_inventory.api.agents import check_member_name
from cluster_inventory.api.member_report import MemberReportStatus

#: A TLS server name: DNS labels (a wildcard-free host name) or an IPv4/IPv6 address.
_SERVER_NAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([-A-Za-z0-9.:]*[A-Za-z0-9])?$")

__all__ = ["AgentConfigError", "ReportingConfig", "check_ca_bundle", "check_url"]


class AgentConfigError(ValueError):
    """A setting of the agent is invalid.

    Attributes:
        field: The :class:`ReportingConfig` field, e.g. ``server``.
        problem: What is wrong with it.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"agent {field}: {problem}")


def check_url(field: str, value: str, schemes: tuple[str, ...]) -> None:
    """Check ``value`` is an absolute URL of one of ``schemes`` with a host.

    Raises:
        AgentConfigError: It is not (the message names ``field``).
    """
    parts = urlsplit(value)
    try:
        parts.port  # noqa: B018 - the property parses the port and raises on a bad one
    except ValueError:
        raise AgentConfigError(field, f"{value!r} has a bad port") from None
    if parts.scheme not in schemes or not parts.hostname:
        raise AgentConfigError(
            field, f"{value!r} is not a URL with scheme {' or '.join(schemes)} and a host"
        )


def check_ca_bundle(pem: bytes) -> None:
    """Check ``pem`` holds one or more PEM certificates and nothing that does not parse.

    Raises:
        AgentConfigError: It does not (field ``ca_pem``).
    """
    try:
        certs = x509.load_pem_x509_certificates(pem)
    except ValueError as exc:
        raise AgentConfigError("ca_pem", f"is not a PEM certificate bundle ({exc})") from None
    if not certs:  # pragma: no cover - cryptography raises on an empty bundle
        raise AgentConfigError("ca_pem", "holds no PEM certificate")


@dataclass(frozen=True, kw_only=True)
class ReportingConfig:
    """What the agent reports as, and how often (seconds).

    Attributes:
        name: The member's name (a DNS-1123 label): its Lease and MemberReport.
        namespace: The cluster manager's hub namespace.
        server: API server URL the member advertises to consumers (None: none); https.
        ca_pem: PEM CA bundle of that server (None: none).
        proxy_url: Proxy consumers must use to reach it (None: none): http, https or
            socks5.
        proxy_servers: The hub's cluster proxy endpoints (``wss://``) the agent keeps
            tunnels to (``docs/cluster-proxy.md``); empty: none.
        proxy_ca_pem: PEM CA of the cluster proxy's serving certificate (None: the
            system's trust store).
        tls_server_name: The name consumers behind the cluster proxy verify the member's
            serving certificate against (None: the host of the member kubeconfig's server).
        lease_duration: Heartbeat Lease duration, also the mean renewal interval.
        probe_interval: Seconds between probes of the member's ``/readyz``.
        probe_timeout: Seconds a probe may take.
        rejection_window: Seconds the hub must refuse the agent's own objects while it is
            ready before the agent takes it for a rejection and stops (None: the Lease
            duration; :mod:`~cluster_inventory.agent.rejection`).
        consumer_service_account: The member ServiceAccount (namespace, name) whose token
            the agent keeps for consumers in its hub credential Secret; None: none kept.
        consumer_token_lifetime: ``expirationSeconds`` of that token (at least 600, the
            TokenRequest minimum).

    Raises:
        AgentNameError: The name, namespace or consumer account is not a DNS-1123 label
            (a ``ValueError``).
        AgentConfigError: Another field is invalid, or the advertised fields do not fit
            the MemberReport's status (a ``ValueError``); the message names the field.
    """

    name: str
    namespace: str
    server: str | None = None
    ca_pem: bytes | None = None
    proxy_url: str | None = None
    proxy_servers: tuple[str, ...] = ()
    proxy_ca_pem: bytes | None = None
    tls_server_name: str | None = None
    lease_duration: float = DEFAULT_LEASE_DURATION
    probe_interval: float = DEFAULT_PROBE_INTERVAL
    probe_timeout: float = 10.0
    rejection_window: float | None = None
    consumer_service_account: tuple[str, str] | None = None
    consumer_token_lifetime: int = DEFAULT_CONSUMER_TOKEN_LIFETIME

    def __post_init__(self) -> None:
        for field, value in (("name", self.name), ("namespace", self.namespace)):
            check_member_name(value, source="agent", field=field)
        if self.consumer_service_account is not None:
            namespace, account = self.consumer_service_account
            for field, value in (("namespace", namespace), ("name", account)):
                check_member_name(value, source="agent consumer_service_account", field=field)
        if self.consumer_token_lifetime < 600:
            raise AgentConfigError(
                "consumer_token_lifetime",
                f"{self.consumer_token_lifetime} s is under 600 s (the TokenRequest minimum)",
            )
        for field, seconds in (
            ("lease_duration", self.lease_duration),
            ("probe_interval", self.probe_interval),
            ("probe_timeout", self.probe_timeout),
        ):
            if not seconds > 0:
                raise AgentConfigError(field, f"{seconds:g} s is not positive")
        if self.rejection_window is not None and not self.rejection_window >= 0:
            raise AgentConfigError("rejection_window", f"{self.rejection_window:g} s is negative")
        if self.server is not None:
            check_url("server", self.server, ("https",))
        if self.proxy_url is not None:
            check_url("proxy_url", self.proxy_url, kube.PROXY_SCHEMES)
        if self.ca_pem is not None:
            check_ca_bundle(self.ca_pem)
        for url in self.proxy_servers:
            check_url("proxy_servers", url, ("wss",))
        if self.proxy_ca_pem is not None:
            try:
                check_ca_bundle(self.proxy_ca_pem)
            except AgentConfigError as exc:
                raise AgentConfigError("proxy_ca_pem", exc.problem) from None
        if self.tls_server_name is not None and not _SERVER_NAME.match(self.tls_server_name):
            raise AgentConfigError(
                "tls_server_name",
                f"{self.tls_server_name[:64]!r} is not a DNS name or an IP address",
            )
        self._check_fits_the_report()

    @property
    def window(self) -> float:
        """The rejection window in seconds (the Lease duration unless given)."""
        return self.lease_duration if self.rejection_window is None else self.rejection_window

    def _check_fits_the_report(self) -> None:
        """The advertised fields as the MemberReport's status will hold them (its limits)."""
        advertised = {
            "server": self.server,
            "proxyURL": self.proxy_url,
            "certificateAuthorityData": (
                base64.b64encode(self.ca_pem).decode() if self.ca_pem is not None else None
            ),
        }
        fields = {"server": "server", "proxyURL": "proxy_url"}
        try:
            MemberReportStatus.model_validate(advertised)
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            where = str(first["loc"][0]) if first["loc"] else "server"
            raise AgentConfigError(fields.get(where, "ca_pem"), first["msg"]) from None

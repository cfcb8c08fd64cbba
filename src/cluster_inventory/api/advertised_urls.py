"""Which URLs an agent member may advertise to consumers: its ``server`` and ``proxyURL``. Pure.

Shared by both ends, as :mod:`cluster_inventory.api.agents` is: the cluster manager checks a
report with it before copying it (``manager/agent_report_fields.py``), and an agent may
check its own flags with it before it reports them.

What an agent reports about how to reach its member becomes the ``server`` and ``proxy-url``
of every profile's access provider, and every consumer of the inventory (a controller on the
hub, Argo CD, a person's kubectl) dials it. The ClusterProfile schema (v1alpha2's CEL rules)
asks only for an absolute URL with a host; the cluster manager asks more of a URL a member
chose (``docs/agent.md``, "The hub side"):

- the scheme: ``https`` for a server (consumers send credentials to it), ``http``, ``https``
  or ``socks5`` for a proxy (client-go's transport);
- no user name or password (a credential never goes into a ClusterProfile), no query or
  fragment, no control character or white space;
- a host a consumer can dial that is not one a hostile member would send consumers to: no
  link-local address (``169.254.0.0/16``, ``fe80::/10``) and no cloud metadata address or
  name (``169.254.169.254``, ``fd00:ec2::254``, ``metadata.google.internal``, ...) unless
  the manager allows them; loopback (``127.0.0.0/8``, ``::1``, ``localhost``) is allowed by
  default (a tunnel every consumer runs beside it, ``docs/agent.md``, "Consumers behind a
  tunnel"; the test fleet's members) and can be refused; never an unspecified, multicast or
  broadcast address. A host whose last label is a number must be a dotted-quad IPv4
  address as written (the WHATWG URL rule): ``2852039166`` or ``0251.0376.0251.0376`` are
  ``169.254.169.254`` to a resolver.

Names are judged as written: no DNS lookup is made (one per member, and racy: the answer
may change before a consumer dials), so a name that resolves to a link-local address is
not caught here.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = [
    "METADATA_ADDRESSES",
    "METADATA_HOSTS",
    "PROXY_URL_SCHEMES",
    "SERVER_SCHEMES",
    "AddressPolicy",
    "host_problem",
    "url_problem",
]

#: Schemes of an advertised ``server``.
SERVER_SCHEMES = ("https",)
#: Schemes of an advertised ``proxyURL`` (the v1alpha2 ClusterProfile's CEL rule).
PROXY_URL_SCHEMES = ("http", "https", "socks5")
#: Cloud instance metadata services by address: AWS (IPv4, IPv6 and the ECS task endpoint),
#: GCP, Azure and OpenStack (``169.254.169.254``), Alibaba Cloud.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200")
)
#: The same services by name.
METADATA_HOSTS = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
_UNSAFE = re.compile(r"[\x00-\x20\x7f-\x9f]")
_NUMBER = re.compile(r"^(0[xX][0-9a-fA-F]*|[0-9]+)$")


@dataclass(frozen=True, kw_only=True)
class AddressPolicy:
    """Which hosts the manager lets a member advertise (``ManagerConfig.agent_report_*``).

    Attributes:
        allow_loopback: ``127.0.0.0/8``, ``::1`` and ``localhost`` (RFC 6761) are accepted.
        allow_link_local: Link-local and cloud metadata addresses and names are accepted.
    """

    allow_loopback: bool = True
    allow_link_local: bool = False


def url_problem(value: str, *, schemes: tuple[str, ...], policy: AddressPolicy) -> str | None:
    """Why ``value`` may not be advertised to consumers, or None.

    Args:
        value: The URL as reported.
        schemes: The schemes accepted (:data:`SERVER_SCHEMES`, :data:`PROXY_URL_SCHEMES`).
        policy: Which hosts are accepted.

    Returns:
        The problem, for a person; it names the scheme or host at most, never the whole
        URL (which may carry a password).
    """
    if _UNSAFE.search(value):
        return "contains a control character or white space"
    parts = urlsplit(value)
    if parts.scheme.lower() not in schemes:
        shown = parts.scheme[:16] or "missing"
        return f"the scheme is {shown}; the manager accepts {', '.join(schemes)}"
    if "@" in parts.netloc:
        return "carries a user name or password (a credential never goes into a ClusterProfile)"
    if parts.query or parts.fragment or value.endswith(("?", "#")):
        return "has a query or a fragment"
    try:
        parts.port  # noqa: B018 - parsing it is the check
    except ValueError:
        return "has a port that is not a number from 0 to 65535"
    host = (parts.hostname or "").rstrip(".")
    if not host:
        return "has no host"
    return host_problem(host, policy)


def host_problem(host: str, policy: AddressPolicy) -> str | None:
    """Why a consumer must not be sent to ``host`` (lower case, no brackets), or None."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is None:
        if _NUMBER.match(host.rsplit(".", 1)[-1]):
            return f"host {host[:64]} is not an IPv4 address in dotted-quad form"
        if host == "localhost" or host.endswith(".localhost"):
            return None if policy.allow_loopback else f"host {host[:64]} is a loopback name"
        if host in METADATA_HOSTS and not policy.allow_link_local:
            return f"host {host} is a cloud metadata service"
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_unspecified or address.is_multicast or str(address) == "255.255.255.255":
        return f"host {host} is not an address a consumer can dial"
    if address.is_loopback and not policy.allow_loopback:
        return f"host {host} is a loopback address"
    if not policy.allow_link_local:
        if address in METADATA_ADDRESSES:
            return f"host {host} is a cloud metadata service"
        if address.is_link_local:
            return f"host {host} is a link-local address"
    return None

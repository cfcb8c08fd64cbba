"""The agent's identity on the hub: its private key, its certificate, when to renew it.

As kubelet's and OCM klusterlet's client-certificate bootstrap: the agent makes an ECDSA
P-256 key that never leaves the member, asks the hub to sign a certificate for
``CN=cluster-inventory:agent:NAME, O=cluster-inventory:agents,
O=cluster-inventory:acceptance:NAME:ACC`` (``ACC``: the member's acceptance, read from the
bootstrap certificate, then from its own: :func:`acceptance_of_certificate`) and keeps both
in its state directory (:mod:`.state`, key mode 0600), so that a restart reuses them.
Rotation follows client-go's certificate manager: renew once 70-90% of the life has passed;
ours renews when 20-25% of it remains, the jitter chosen once per certificate (a fleet
started together does not renew together). Pure.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass, field, replace

from cryptography import x509
from cryptography.x509.oid import NameOID

from cluster_inventory import kube
from cluster_inventory.api.agents import (
    acceptance_group,
    acceptance_in_groups,
    agent_user,
    check_acceptance_id,
    check_member_name,
)
from cluster_inventory.api.constants import AGENT_GROUP
from cluster_inventory.kube import certificates
from cluster_inventory.kube.certificates import new_private_key

__all__ = [
    "AgentIdentity",
    "acceptance_of_certificate",
    "certificate_request_pem",
    "needs_rotation",
    "new_private_key",
    "renewal_time",
    "rotation_time",
]

#: Renew when this share of the certificate's life remains, at most and at least.
ROTATE_REMAINING = (0.20, 0.25)


def certificate_request_pem(name: str, acceptance: str, key_pem: bytes) -> bytes:
    """The PEM certificate request of member ``name``'s agent, signed with ``key_pem``.

    Subject ``CN=cluster-inventory:agent:NAME, O=cluster-inventory:agents,
    O=cluster-inventory:acceptance:NAME:ACC`` and nothing else (the hub approves nothing
    more, :func:`cluster_inventory.api.agents.csr_shape_problem`).

    Args:
        name: The member name.
        acceptance: The member's acceptance id (``ACC``).
        key_pem: The private key, PEM.

    Raises:
        AgentNameError: ``name`` is not a DNS-1123 label, or ``acceptance`` no acceptance id.
        ValueError: ``key_pem`` is not an EC private key.
    """
    check_member_name(name)
    check_acceptance_id(acceptance, source="agent", field="acceptance")
    return certificates.certificate_request_pem(
        key_pem,
        common_name=agent_user(name),
        organizations=[AGENT_GROUP, acceptance_group(name, acceptance)],
    )


def acceptance_of_certificate(cert_pem: bytes, name: str, *, bootstrap: bool = False) -> str | None:
    """The acceptance id of member ``name`` a certificate's O values carry, or None.

    Args:
        cert_pem: A PEM certificate (the agent's, or its bootstrap credential's).
        name: The member.
        bootstrap: Read the bootstrap certificate's group, not the agent's.

    Returns:
        None when it does not parse or carries none (a certificate not issued for ``name``).
    """
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
    except ValueError:
        return None
    orgs = [str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    return acceptance_in_groups(orgs, name, bootstrap=bootstrap)


def _jitter(seed: bytes) -> float:
    """A share in :data:`ROTATE_REMAINING`, fixed per credential (a digest, not a draw).

    The same certificate (or token) gives the same share after a restart, so a restarted
    agent does not renew earlier or later than it would have.
    """
    digest = hashlib.sha256(seed).digest()
    fraction = int.from_bytes(digest[:8], "big") / 2**64
    low, high = ROTATE_REMAINING
    return low + (high - low) * fraction


def renewal_time(cert_pem: bytes) -> dt.datetime:
    """When the certificate ``cert_pem`` should be renewed (UTC).

    When 20-25% of its life (``notBefore`` to ``notAfter``) remains, the share chosen once
    per certificate.

    Raises:
        ValueError: ``cert_pem`` is not a PEM certificate.
    """
    cert = x509.load_pem_x509_certificate(cert_pem)
    return rotation_time(cert.not_valid_before_utc, cert.not_valid_after_utc, cert_pem)


def rotation_time(start: dt.datetime, end: dt.datetime, seed: bytes) -> dt.datetime:
    """When a credential valid from ``start`` to ``end`` should be renewed.

    When 20-25% of its life remains (:data:`ROTATE_REMAINING`), the share derived from
    ``seed`` (the certificate, the token: the same credential renews at the same time after
    a restart, and a fleet started together does not renew together). The agent's
    certificate and the consumer token it keeps rotate by this one rule.

    Args:
        start: When it was issued (timezone-aware).
        end: When it expires (timezone-aware).
        seed: Bytes of the credential itself (hashed; never stored or logged).
    """
    return end - (end - start) * _jitter(seed)


def needs_rotation(cert_pem: bytes, now: dt.datetime) -> bool:
    """True once ``now`` (timezone-aware) has reached :func:`renewal_time` of ``cert_pem``."""
    return now >= renewal_time(cert_pem)


@dataclass(frozen=True, kw_only=True)
class AgentIdentity:
    """An issued identity: the key and the certificate the hub signed for it.

    Attributes:
        name: The member name.
        key_pem: The private key, PEM (never in ``repr``, logs or errors).
        cert_pem: The issued certificate chain, PEM.
    """

    name: str
    key_pem: bytes = field(repr=False)
    cert_pem: bytes

    @property
    def not_after(self) -> dt.datetime:
        """When the certificate expires (UTC)."""
        return x509.load_pem_x509_certificate(self.cert_pem).not_valid_after_utc

    @property
    def acceptance(self) -> str | None:
        """The acceptance id the certificate was issued for (None: none it names)."""
        return acceptance_of_certificate(self.cert_pem, self.name)

    def connection(self, bootstrap: kube.ClusterConnection) -> kube.ClusterConnection:
        """The hub connection of this identity: ``bootstrap``'s server and TLS, our cert.

        The bootstrap's own credential (token, certificate or exec plugin) is dropped.
        """
        return replace(
            bootstrap,
            token=None,
            exec_user=None,
            exec_cluster_config=None,
            client_cert_data=self.cert_pem,
            client_key_data=self.key_pem,
            name=bootstrap.name or self.name,
        )

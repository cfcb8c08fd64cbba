"""The names and the certificate request of a pull-mode member's agent (``docs/agent.md``).

Pure and shared by both ends of the join: the agent (:mod:`cluster_inventory.agent`) builds
its CertificateSigningRequest from these rules, the cluster manager's approver checks a CSR
against the same ones, so the two cannot drift apart. The CSR's PEM request is read with
``cryptography``; nothing here does I/O.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID

from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    AGENT_CSR_USAGES,
    AGENT_GROUP,
    AGENT_OBJECT_PREFIX,
    AGENT_USER_PREFIX,
    LABEL_AGENT,
    SIGNER_KUBE_APISERVER_CLIENT,
)

__all__ = [
    "AgentNameError",
    "CsrShape",
    "agent_credential_name",
    "agent_object_name",
    "agent_user",
    "check_member_name",
    "csr_shape_problem",
    "member_of_user",
    "read_csr_shape",
]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


class AgentNameError(ValueError):
    """A member name is not a DNS-1123 label.

    Attributes:
        source: Where the name came from, e.g. ``agent --name`` or ``CSR x: label``.
        field: The field, e.g. ``name``.
        problem: What is wrong.
    """

    def __init__(self, source: str, field: str, problem: str) -> None:
        self.source = source
        self.field = field
        self.problem = problem
        super().__init__(f"{source}: {field}: {problem}")


def check_member_name(name: object, *, source: str = "member", field: str = "name") -> str:
    """Return ``name`` if it is a DNS-1123 label (what a ClusterProfile name must be).

    Args:
        name: The member name.
        source: Where it came from (for the error).
        field: Its field (for the error).

    Returns:
        The name, unchanged.

    Raises:
        AgentNameError: It is not a string of 1-63 lower-case letters, digits and ``-``,
            starting and ending with a letter or digit (RFC 1123, as Kubernetes checks).
    """
    if not isinstance(name, str) or not _DNS_LABEL.match(name):
        raise AgentNameError(
            source, field, f"{name!r} is not a DNS-1123 label (a-z, 0-9, '-'; at most 63)"
        )
    return name


def agent_user(name: str) -> str:
    """The user an agent's certificate authenticates as: ``cluster-inventory:agent:NAME``."""
    return f"{AGENT_USER_PREFIX}{name}"


def member_of_user(user: str) -> str | None:
    """The member an agent user name stands for, or None for any other user."""
    if not user.startswith(AGENT_USER_PREFIX):
        return None
    return user.removeprefix(AGENT_USER_PREFIX) or None


def agent_object_name(name: str) -> str:
    """The agent's Role and RoleBinding name on the hub: ``cluster-inventory-agent-NAME``."""
    return f"{AGENT_OBJECT_PREFIX}{name}"


def agent_credential_name(name: str) -> str:
    """The agent's credential Secret on the hub: ``cluster-inventory-agent-NAME-credential``.

    In the registration namespace, beside the member's Lease and MemberReport: its agent
    writes the consumer token it mints on the member there (``docs/agent.md``).
    """
    return f"{AGENT_OBJECT_PREFIX}{name}-credential"


@dataclass(frozen=True, kw_only=True)
class CsrShape:
    """What an agent CSR asks for, as read from the object.

    Attributes:
        name: The CSR's ``metadata.name``.
        member: The label ``cluster-inventory.dev/agent`` (the member asked for), or "".
        signer: ``spec.signerName``.
        usages: ``spec.usages`` in order.
        common_name: Subject CN of ``spec.request`` ("" if it does not parse).
        organizations: Subject O values of ``spec.request``.
        other_subject: Subject attributes other than CN and O (none is allowed).
        has_extensions: The request asks for extensions (SANs and the like; none is allowed).
        signature_ok: The request's self-signature verifies (the requester holds the key).
        request_error: Why ``spec.request`` does not parse, or None.
        username: ``spec.username`` (who created the CSR, filled in by the API server).
        groups: ``spec.groups``.
    """

    name: str
    member: str
    signer: str
    usages: tuple[str, ...]
    common_name: str
    organizations: tuple[str, ...]
    other_subject: bool
    has_extensions: bool
    signature_ok: bool
    request_error: str | None
    username: str
    groups: tuple[str, ...]


def read_csr_shape(csr: Mapping[str, Any]) -> CsrShape:
    """Read a CertificateSigningRequest object into a :class:`CsrShape` (never raises)."""
    spec = objects.spec(csr)
    labels = objects.labels_of(csr)
    cn, other, exts, sig_ok = "", False, False, False
    orgs: tuple[str, ...] = ()
    error: str | None = None
    try:
        request = x509.load_pem_x509_csr(base64.b64decode(str(spec.get("request") or "")))
        subject = request.subject
        cn = ",".join(str(a.value) for a in subject.get_attributes_for_oid(NameOID.COMMON_NAME))
        orgs = tuple(
            str(a.value) for a in subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
        )
        keep = {NameOID.COMMON_NAME, NameOID.ORGANIZATION_NAME}
        other = any(attr.oid not in keep for attr in subject)
        exts = len(request.extensions) > 0  # parsed lazily: a bad one raises here
        sig_ok = request.is_signature_valid
    except ValueError as exc:  # binascii.Error is one
        error = f"spec.request is not a PEM certificate request ({type(exc).__name__})"
    return CsrShape(
        name=str(objects.meta(csr).get("name") or ""),
        member=str(labels.get(LABEL_AGENT) or ""),
        signer=str(spec.get("signerName") or ""),
        usages=tuple(str(u) for u in spec.get("usages") or ()),
        common_name=cn,
        organizations=orgs,
        other_subject=other,
        has_extensions=exts,
        signature_ok=sig_ok,
        request_error=error,
        username=str(spec.get("username") or ""),
        groups=tuple(str(g) for g in spec.get("groups") or ()),
    )


def csr_shape_problem(shape: CsrShape) -> str | None:
    """Why a CSR is not exactly what an agent of its member asks for, or None if it is.

    The rules are the contract's (``docs/agent.md``, "Objects"), as OCM's registration hub
    checks a klusterlet's CSR: label naming a valid member, signer
    ``kubernetes.io/kube-apiserver-client``, usages exactly ``[digital signature, client
    auth]``, subject exactly ``CN=cluster-inventory:agent:NAME, O=cluster-inventory:agents``
    for that member, no extensions, and a valid self-signature.
    """
    if not shape.member:
        return f"it has no label {LABEL_AGENT} naming the member"
    if not _DNS_LABEL.match(shape.member):
        return f"its label {LABEL_AGENT}={shape.member!r} is not a DNS-1123 label"
    if shape.signer != SIGNER_KUBE_APISERVER_CLIENT:
        return f"spec.signerName is {shape.signer!r}, not {SIGNER_KUBE_APISERVER_CLIENT!r}"
    if shape.usages != AGENT_CSR_USAGES:
        return f"spec.usages are {list(shape.usages)}, not {list(AGENT_CSR_USAGES)}"
    if shape.request_error is not None:
        return shape.request_error
    if shape.common_name != agent_user(shape.member):
        return (
            f"the subject's CN is {shape.common_name!r}, not {agent_user(shape.member)!r} "
            f"(the member of its label)"
        )
    if shape.organizations != (AGENT_GROUP,) or shape.other_subject:
        return f"the subject must be exactly CN and O={AGENT_GROUP!r}"
    if shape.has_extensions:
        return "the request asks for extensions (subject alternative names or others)"
    if not shape.signature_ok:
        return "the request's signature does not verify"
    return None

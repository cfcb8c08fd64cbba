"""The names and the certificate request of a pull-mode member's agent (``docs/agent.md``).

Pure and shared by both ends of the join: the agent (:mod:`cluster_inventory.agent`) builds
its CertificateSigningRequest from these rules, the cluster manager's approver checks a CSR
against the same ones, so the two cannot drift apart. The CSR's PEM request is read with
``cryptography``; nothing here does I/O.

Identities (``docs/agent.md``, "Who can obtain which certificate"): each ``manager accept``
of member ``NAME`` makes a new acceptance id ``ACC`` (:func:`new_acceptance_id`). Its agent's
certificate is ``CN=cluster-inventory:agent:NAME`` in the groups ``cluster-inventory:agents``
and :func:`acceptance_group` ``cluster-inventory:acceptance:NAME:ACC``; its bootstrap
certificate is ``CN=cluster-inventory:agent-bootstrap:NAME`` in ``cluster-inventory:agent-
bootstrappers`` and :func:`bootstrap_acceptance_group`. The hub's RBAC names only the two
groups of the current acceptance, so a certificate of an earlier one authorises nothing;
the one CSR the two may read is :func:`agent_csr_name` ``cluster-inventory-agent-NAME-ACC``.
"""

from __future__ import annotations

import base64
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID

from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    AGENT_ACCEPTANCE_GROUP_PREFIX,
    AGENT_BOOTSTRAP_ACCEPTANCE_GROUP_PREFIX,
    AGENT_BOOTSTRAP_USER_PREFIX,
    AGENT_CLUSTER_ROLE_PREFIX,
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
    "acceptance_group",
    "acceptance_in_groups",
    "agent_cluster_role_name",
    "agent_credential_name",
    "agent_csr_name",
    "agent_object_name",
    "agent_user",
    "bootstrap_acceptance_group",
    "bootstrap_user",
    "check_acceptance_id",
    "check_member_name",
    "csr_shape_problem",
    "member_of_bootstrap_user",
    "member_of_user",
    "new_acceptance_id",
    "read_csr_shape",
]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
#: An acceptance id: what :func:`new_acceptance_id` makes (base32, 80 random bits).
_ACCEPTANCE_ID = re.compile(r"^[a-z2-7]{16}$")


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


def new_acceptance_id() -> str:
    """A new acceptance id: 16 characters of base32 (``a-z``, ``2-7``), 80 random bits.

    Not a credential: it names one acceptance of a member (``manager accept``), so that
    nothing issued for an earlier acceptance of the same name is valid for a later one, and
    it is the unguessable part of the one CSR name the member's identities may read.
    """
    return base64.b32encode(secrets.token_bytes(10)).decode().lower()


def check_acceptance_id(value: object, *, source: str, field: str) -> str:
    """Return ``value`` if it is an acceptance id (:func:`new_acceptance_id`'s shape).

    Raises:
        AgentNameError: It is not 16 characters of ``a-z`` and ``2-7``.
    """
    if not isinstance(value, str) or not _ACCEPTANCE_ID.match(value):
        raise AgentNameError(source, field, "is not an acceptance id (16 of a-z, 2-7)")
    return value


def agent_user(name: str) -> str:
    """The user an agent's certificate authenticates as: ``cluster-inventory:agent:NAME``."""
    return f"{AGENT_USER_PREFIX}{name}"


def member_of_user(user: str) -> str | None:
    """The member an agent user name stands for, or None for any other user."""
    if not user.startswith(AGENT_USER_PREFIX):
        return None
    return user.removeprefix(AGENT_USER_PREFIX) or None


def bootstrap_user(name: str) -> str:
    """The user of member ``name``'s bootstrap certificate.

    ``cluster-inventory:agent-bootstrap:NAME`` (``manager bootstrap-kubeconfig --member``).
    """
    return f"{AGENT_BOOTSTRAP_USER_PREFIX}{name}"


def member_of_bootstrap_user(user: str) -> str | None:
    """The member a bootstrap user name is for, or None for any other user."""
    if not user.startswith(AGENT_BOOTSTRAP_USER_PREFIX):
        return None
    return user.removeprefix(AGENT_BOOTSTRAP_USER_PREFIX) or None


def acceptance_group(name: str, acceptance: str) -> str:
    """The group of acceptance ``acceptance``'s agent certificates of member ``name``.

    ``cluster-inventory:acceptance:NAME:ACC``: the subject of the agent's RoleBinding and
    ClusterRoleBinding on the hub while that acceptance is the member's current one.
    """
    return f"{AGENT_ACCEPTANCE_GROUP_PREFIX}{name}:{acceptance}"


def bootstrap_acceptance_group(name: str, acceptance: str) -> str:
    """The group of acceptance ``acceptance``'s bootstrap certificates of member ``name``.

    ``cluster-inventory:bootstrap:NAME:ACC``: a subject of the member's ClusterRoleBinding
    (its one CSR) while that acceptance is current.
    """
    return f"{AGENT_BOOTSTRAP_ACCEPTANCE_GROUP_PREFIX}{name}:{acceptance}"


def acceptance_in_groups(
    groups: Sequence[str], name: str, *, bootstrap: bool = False
) -> str | None:
    """The acceptance id of member ``name`` that ``groups`` carry, or None.

    Args:
        groups: A requester's groups (a CSR's ``spec.groups``) or a certificate's O values.
        name: The member.
        bootstrap: Read the bootstrap group (:func:`bootstrap_acceptance_group`), not the
            agent's (:func:`acceptance_group`).

    Returns:
        The id, when exactly one group of that kind names ``name`` with a well-formed id;
        None when none does, or more than one (no certificate the hub issues has two).
    """
    prefix = bootstrap_acceptance_group(name, "") if bootstrap else acceptance_group(name, "")
    found = [g.removeprefix(prefix) for g in groups if g.startswith(prefix)]
    if len(found) != 1 or not _ACCEPTANCE_ID.match(found[0]):
        return None
    return found[0]


def agent_csr_name(name: str, acceptance: str) -> str:
    """The one CSR name of member ``name``'s acceptance: ``cluster-inventory-agent-NAME-ACC``.

    The agent's first request (with the bootstrap identity) and each rotation (with its own)
    use it, the previous request deleted first; the hub's RBAC lets the acceptance's two
    identities read, watch and delete a CSR of this name and of no other.
    """
    return f"{AGENT_OBJECT_PREFIX}{name}-{acceptance}"


def agent_cluster_role_name(namespace: str, name: str) -> str:
    """The ClusterRole and ClusterRoleBinding of accepted member ``name`` of ``namespace``.

    ``cluster-inventory-agent:NS:NAME``: cluster-scoped, as CSRs are.
    """
    return f"{AGENT_CLUSTER_ROLE_PREFIX}{namespace}:{name}"


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
        created: Its ``metadata.creationTimestamp`` as stored ("" if absent).
        member: The label ``cluster-inventory.dev/agent`` (the member asked for), or "".
        signer: ``spec.signerName``.
        usages: ``spec.usages`` in order.
        expiration_seconds: ``spec.expirationSeconds`` (None: absent, or not an integer).
        common_name: Subject CN of ``spec.request`` ("" if it does not parse).
        organizations: Subject O values of ``spec.request``.
        acceptance: The acceptance id of ``member`` the O values carry
            (:func:`acceptance_in_groups`), or "".
        other_subject: Subject attributes other than CN and O (none is allowed).
        has_extensions: The request asks for extensions (SANs and the like; none is allowed).
        signature_ok: The request's self-signature verifies (the requester holds the key).
        request_error: Why ``spec.request`` does not parse, or None.
        username: ``spec.username`` (who created the CSR, filled in by the API server).
        groups: ``spec.groups`` (the requester's groups, likewise).
    """

    name: str
    created: str = ""
    member: str
    signer: str
    usages: tuple[str, ...]
    expiration_seconds: int | None = None
    common_name: str
    organizations: tuple[str, ...]
    acceptance: str = ""
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
    meta = objects.meta(csr)
    member = str(labels.get(LABEL_AGENT) or "")
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
    seconds = spec.get("expirationSeconds")
    return CsrShape(
        name=str(meta.get("name") or ""),
        created=str(meta.get("creationTimestamp") or ""),
        member=member,
        signer=str(spec.get("signerName") or ""),
        usages=tuple(str(u) for u in spec.get("usages") or ()),
        expiration_seconds=seconds if type(seconds) is int else None,
        common_name=cn,
        organizations=orgs,
        acceptance=(acceptance_in_groups(orgs, member) or "") if member else "",
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
    checks a klusterlet's CSR, and stricter: label naming a valid member, signer
    ``kubernetes.io/kube-apiserver-client``, usages exactly ``[digital signature, client
    auth]``, subject exactly ``CN=cluster-inventory:agent:NAME`` with the two O values
    ``cluster-inventory:agents`` and ``cluster-inventory:acceptance:NAME:ACC`` for that
    member, the name :func:`agent_csr_name` of that acceptance, no extensions, and a valid
    self-signature. Who asked, and whether ``ACC`` is current, is the approver's to judge.
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
    wanted = {AGENT_GROUP, acceptance_group(shape.member, shape.acceptance)}
    if not shape.acceptance or len(shape.organizations) != 2 or set(shape.organizations) != wanted:
        return (
            f"the subject must be exactly CN, O={AGENT_GROUP!r} and O="
            f"{acceptance_group(shape.member, 'ACCEPTANCE')!r} (one acceptance of the member)"
        )
    if shape.other_subject:
        return "the subject has attributes other than CN and O"
    if shape.name != agent_csr_name(shape.member, shape.acceptance):
        return (
            f"its name is not {agent_csr_name(shape.member, 'ACCEPTANCE')!r} for the "
            "acceptance its subject names"
        )
    if shape.has_extensions:
        return "the request asks for extensions (subject alternative names or others)"
    if not shape.signature_ok:
        return "the request's signature does not verify"
    return None

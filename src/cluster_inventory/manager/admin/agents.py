"""Accepting and rejecting a pull-mode member: the hub's half of the join (``docs/agent.md``).

``cluster-inventory manager accept NAME`` writes, in the cluster manager's namespace, the
agent-mode registration Secret ``NAME`` holding a new **acceptance id** ``ACC``
(:func:`~cluster_inventory.api.agents.new_acceptance_id`; accepting again keeps it), the
Role and RoleBinding ``cluster-inventory-agent-NAME``, the Lease and MemberReport ``NAME``
the agent will renew and report into, and the empty credential Secret
``cluster-inventory-agent-NAME-credential`` its agent keeps its consumers' token in; and,
cluster-scoped as CSRs are, the ClusterRole and ClusterRoleBinding
``cluster-inventory-agent:NS:NAME``: ``create`` CSRs, and ``get``, ``list``, ``watch`` and
``delete`` of the one CSR ``cluster-inventory-agent-NAME-ACC``, by ``resourceNames``.

Every binding names only the groups of that acceptance (the agent's
``cluster-inventory:acceptance:NAME:ACC``, and for the CSR the bootstrap certificate's
``cluster-inventory:bootstrap:NAME:ACC``), never a group or user that outlives it. RBAC
cannot limit ``create`` by name, so the hub creates the Lease, MemberReport and Secret and
the agent may only ``get``, ``update`` and ``patch`` these three: it can write nothing else
(OCM's hub does the same for a klusterlet's lease). Everything is server-side applied, so
accepting twice changes nothing.

``manager reject NAME`` deletes it all, the registration and the bindings first: from then
on no certificate ever issued for that acceptance (the agent's, its bootstrap credential)
authorises anything on the hub, CSRs included, however long it is valid (Kubernetes cannot
revoke a client certificate; it can stop trusting its groups). A later ``accept`` of the
same name makes a new acceptance id, which no earlier certificate carries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api.agents import (
    AgentNameError,
    acceptance_group,
    agent_cluster_role_name,
    agent_credential_name,
    agent_csr_name,
    agent_object_name,
    agent_user,
    bootstrap_acceptance_group,
    bootstrap_user,
    check_member_name,
    new_acceptance_id,
)
from cluster_inventory.api.constants import (
    AGENT_BOOTSTRAP_GROUP,
    AGENT_CREDENTIAL_SECRET_TYPE,
    AGENT_GROUP,
    FIELD_MANAGER_CLI,
    LABEL_AGENT,
    PROJECT_DOMAIN,
)
from cluster_inventory.manager.admin.registration_secrets import agent_registration_secret
from cluster_inventory.manager.rules.registration import (
    RegistrationError,
    acceptance_of,
    is_agent_registration,
)

__all__ = [
    "DEFAULT_LEASE_DURATION",
    "Acceptance",
    "accept",
    "agent_objects",
    "current_acceptance",
    "reject",
]

#: ``leaseDurationSeconds`` of a new agent's heartbeat Lease (the contract's default).
DEFAULT_LEASE_DURATION = 60
_RBAC = "rbac.authorization.k8s.io"
_CSRS = "certificatesigningrequests"


@dataclass(frozen=True)
class Acceptance:
    """One acceptance of an agent member: who may act for it on the hub.

    Attributes:
        namespace: The cluster manager's namespace.
        name: The member name.
        id: The acceptance id (``cluster-inventory.dev/acceptance`` on its registration).
    """

    namespace: str
    name: str
    id: str

    @property
    def agent_user(self) -> str:
        """The agent certificate's user, ``cluster-inventory:agent:NAME``."""
        return agent_user(self.name)

    @property
    def group(self) -> str:
        """The agent certificate's acceptance group, ``cluster-inventory:acceptance:NAME:ACC``."""
        return acceptance_group(self.name, self.id)

    @property
    def agent_groups(self) -> tuple[str, str]:
        """The agent certificate's groups: ``cluster-inventory:agents`` and :attr:`group`."""
        return (AGENT_GROUP, self.group)

    @property
    def bootstrap_groups(self) -> tuple[str, str]:
        """The bootstrap certificate's groups: the bootstrappers' and :attr:`bootstrap_group`."""
        return (AGENT_BOOTSTRAP_GROUP, self.bootstrap_group)

    @property
    def bootstrap_user(self) -> str:
        """The bootstrap certificate's user, ``cluster-inventory:agent-bootstrap:NAME``."""
        return bootstrap_user(self.name)

    @property
    def bootstrap_group(self) -> str:
        """The bootstrap certificate's group, ``cluster-inventory:bootstrap:NAME:ACC``."""
        return bootstrap_acceptance_group(self.name, self.id)

    @property
    def csr_name(self) -> str:
        """The one CSR its identities may read, ``cluster-inventory-agent-NAME-ACC``."""
        return agent_csr_name(self.name, self.id)


def agent_objects(
    acceptance: Acceptance,
    clustersets: Sequence[str],
    *,
    display_name: str | None = None,
    lease_duration: int = DEFAULT_LEASE_DURATION,
) -> list[tuple[kube.Resource, dict[str, Any]]]:
    """Every object ``accept`` writes for one acceptance, in the order it writes them.

    The Lease, MemberReport and empty credential Secret first, the RBAC that lets the
    acceptance's identities at them and at their CSR next, the registration Secret (what
    the CSR approver waits for) last. The credential Secret is applied without ``data``:
    accepting again keeps the agent's token.

    Raises:
        RegistrationError: The name or a cluster set is not a DNS-1123 label (or the name
            is too long for a certificate's CN), no cluster set is given, or the lease
            duration is under 1 s (checked before anything is written).
    """
    namespace, name = acceptance.namespace, acceptance.name
    secret = agent_registration_secret(
        name, namespace, clustersets, display_name=display_name, acceptance=acceptance.id
    )
    if lease_duration < 1:
        raise RegistrationError(
            f"Lease {namespace}/{name}",
            "spec.leaseDurationSeconds",
            f"must be at least 1, not {lease_duration}",
            member=name,
        )
    labels = {LABEL_AGENT: name}
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels}
    rbac_name = agent_object_name(name)
    rbac_meta: dict[str, Any] = {"name": rbac_name, "namespace": namespace, "labels": labels}
    verbs = ["get", "update", "patch"]
    role: dict[str, Any] = {
        "metadata": rbac_meta,
        "rules": [
            {
                "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"],
                "resourceNames": [name],
                "verbs": verbs,
            },
            {
                "apiGroups": [PROJECT_DOMAIN],
                "resources": ["memberreports", "memberreports/status"],
                "resourceNames": [name],
                "verbs": verbs,
            },
            {
                "apiGroups": [""],
                "resources": ["secrets"],
                "resourceNames": [agent_credential_name(name)],
                "verbs": verbs,
            },
        ],
    }
    agent = {"apiGroup": _RBAC, "kind": "Group", "name": acceptance.group}
    binding: dict[str, Any] = {
        "metadata": rbac_meta,
        "roleRef": {"apiGroup": _RBAC, "kind": "Role", "name": rbac_name},
        "subjects": [agent],
    }
    csr_role_name = agent_cluster_role_name(namespace, name)
    csr_meta: dict[str, Any] = {"name": csr_role_name, "labels": labels}
    csr_role: dict[str, Any] = {
        "metadata": csr_meta,
        "rules": [
            # RBAC cannot limit create by name: the approver refuses (and deletes) any CSR
            # but the acceptance's one, and this binding goes with `manager reject`.
            {"apiGroups": ["certificates.k8s.io"], "resources": [_CSRS], "verbs": ["create"]},
            {
                "apiGroups": ["certificates.k8s.io"],
                "resources": [_CSRS],
                "resourceNames": [acceptance.csr_name],
                # list and watch with the field selector metadata.name=<it> (the API server
                # authorises those by name), delete to replace an earlier request.
                "verbs": ["get", "list", "watch", "delete"],
            },
        ],
    }
    csr_binding: dict[str, Any] = {
        "metadata": csr_meta,
        "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": csr_role_name},
        "subjects": [
            agent,
            {"apiGroup": _RBAC, "kind": "Group", "name": acceptance.bootstrap_group},
        ],
    }
    lease: dict[str, Any] = {
        "metadata": meta,
        "spec": {"holderIdentity": agent_user(name), "leaseDurationSeconds": lease_duration},
    }
    report: dict[str, Any] = {"metadata": meta, "spec": {}}
    credential: dict[str, Any] = {
        "metadata": {**meta, "name": agent_credential_name(name)},
        "type": AGENT_CREDENTIAL_SECRET_TYPE,
    }
    return [
        (kube.LEASES, lease),
        (kube.MEMBER_REPORTS, report),
        (kube.SECRETS, credential),
        (kube.ROLES, role),
        (kube.ROLE_BINDINGS, binding),
        (kube.CLUSTER_ROLES, csr_role),
        (kube.CLUSTER_ROLE_BINDINGS, csr_binding),
        (kube.SECRETS, secret),
    ]


async def current_acceptance(hub: kube.ApiClient, namespace: str, name: str) -> Acceptance | None:
    """Member ``name``'s current acceptance, read from its registration Secret, or None.

    Raises:
        RegistrationError: ``NAME`` is a probed member's registration.
        KubeAPIError: The Secret could not be read.
    """
    try:
        secret = await kube.get(hub, kube.SECRETS, name, namespace)
    except kube.NotFoundError:
        return None
    _refuse_probed(secret, namespace, name)
    found = acceptance_of(secret)
    return None if found is None else Acceptance(namespace, name, found)


async def accept(
    hub: kube.ApiClient,
    namespace: str,
    name: str,
    clustersets: Sequence[str],
    *,
    display_name: str | None = None,
    lease_duration: int = DEFAULT_LEASE_DURATION,
    field_manager: str = FIELD_MANAGER_CLI,
) -> Acceptance:
    """Accept member ``name`` as an agent member (idempotent; ``manager accept``).

    Every input is checked, and the namespace shown to exist, before anything is written
    (``accept -n typo`` creates nothing). A member accepted already keeps its acceptance id;
    one not accepted (or rejected since) gets a new one.

    Args:
        hub: Hub client with the rights to write Secrets, Roles, RoleBindings, Leases and
            MemberReports in ``namespace``, ClusterRoles and ClusterRoleBindings, and to
            grant what they grant (CSR ``create``, ``get``, ``list``, ``watch``, ``delete``).
        namespace: The cluster manager's namespace (it must exist).
        name: The member name (a DNS-1123 label of at most 30 characters).
        clustersets: Cluster sets the member joins.
        display_name: ``spec.displayName`` of its profiles.
        lease_duration: ``leaseDurationSeconds`` of its heartbeat Lease.
        field_manager: Field manager of the writes.

    Returns:
        The acceptance (its id, users, groups and CSR name).

    Raises:
        RegistrationError: Bad name, cluster sets or lease duration, the namespace does not
            exist, or a Secret ``NAME`` that is no agent-mode registration exists (a probed
            member's); nothing was written.
        KubeAPIError: A read or write was refused.
    """
    agent_objects(  # every input checked first
        Acceptance(namespace, name, new_acceptance_id()),
        clustersets,
        display_name=display_name,
        lease_duration=lease_duration,
    )
    try:
        await kube.get(hub, kube.NAMESPACES, namespace)
    except kube.NotFoundError:
        raise RegistrationError(
            f"Namespace {namespace}",
            "metadata.name",
            "does not exist: the cluster manager's namespace (-n) is made by the chart or by "
            "`kubectl create namespace`; nothing was written",
            member=name,
        ) from None
    except kube.ForbiddenError:
        pass  # we may not read namespaces: the first write into a missing one fails (404)
    acceptance = await current_acceptance(hub, namespace, name) or Acceptance(
        namespace, name, new_acceptance_id()
    )
    objects = agent_objects(
        acceptance, clustersets, display_name=display_name, lease_duration=lease_duration
    )
    for resource, obj in objects:
        await kube.apply(hub, resource, obj, field_manager=field_manager)
    return acceptance


def _refuse_probed(secret: dict[str, Any], namespace: str, name: str) -> None:
    if not is_agent_registration(secret):
        raise RegistrationError(
            f"Secret {namespace}/{name}",
            "metadata.annotations",
            "exists and is not an agent-mode registration (a probed member's is removed "
            "with deregister)",
            member=name,
        )


async def reject(hub: kube.ApiClient, namespace: str, name: str) -> list[str]:
    """Undo :func:`accept` for member ``name`` (``manager reject``); missing objects are fine.

    The registration Secret goes first (the approver signs nothing more for ``name``), then
    the two bindings (from here no certificate of the acceptance authorises anything: not
    its Lease, report or credential, not a CSR), then the rest.

    Returns:
        What was there and is deleted, e.g. ``["Secret ns/x", "RoleBinding ns/..."]``.

    Raises:
        RegistrationError: ``name`` is not a DNS-1123 label, or ``NAME`` is a probed
            member's registration (``deregister`` it); nothing was deleted.
        KubeAPIError: A delete was refused.
    """
    try:  # the name, before anything
        check_member_name(name, source=f"Secret {namespace}/{name}", field="metadata.name")
    except AgentNameError as exc:
        raise RegistrationError(exc.source, exc.field, exc.problem, member=name) from None
    try:
        secret = await kube.get(hub, kube.SECRETS, name, namespace)
    except kube.NotFoundError:
        pass
    else:
        _refuse_probed(secret, namespace, name)
    rbac_name = agent_object_name(name)
    csr_rbac = agent_cluster_role_name(namespace, name)
    targets: list[tuple[kube.Resource, str, str | None]] = [
        (kube.SECRETS, name, namespace),
        (kube.ROLE_BINDINGS, rbac_name, namespace),
        (kube.CLUSTER_ROLE_BINDINGS, csr_rbac, None),
        (kube.ROLES, rbac_name, namespace),
        (kube.CLUSTER_ROLES, csr_rbac, None),
        (kube.LEASES, name, namespace),
        (kube.MEMBER_REPORTS, name, namespace),
        (kube.SECRETS, agent_credential_name(name), namespace),
    ]
    deleted: list[str] = []
    for resource, obj_name, obj_namespace in targets:
        try:
            await kube.delete(hub, resource, obj_name, obj_namespace, missing_ok=False)
        except kube.NotFoundError:
            continue
        deleted.append(resource.describe(obj_namespace, obj_name))
    return deleted

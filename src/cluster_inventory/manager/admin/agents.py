"""Accepting and rejecting a pull-mode member: the hub's half of the join (``docs/agent.md``).

``cluster-inventory manager accept NAME`` writes, in the cluster manager's namespace, the
agent-mode registration Secret ``NAME``, the Role and RoleBinding
``cluster-inventory-agent-NAME`` and the Lease and MemberReport ``NAME`` the agent will
renew and report into, and the empty credential Secret
``cluster-inventory-agent-NAME-credential`` its agent keeps its consumers' token in. RBAC
cannot limit ``create`` by name, so the hub creates these objects and the agent's identity
may only ``get``, ``update`` and ``patch`` these three, by ``resourceNames``: it can write
nothing else (OCM's hub does the same for a klusterlet's lease). Everything is server-side
applied, so accepting twice changes nothing. ``manager reject NAME`` deletes it all, the
RoleBinding first: from then on the agent's certificate, however long it is valid,
authorises nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api.agents import agent_credential_name, agent_object_name, agent_user
from cluster_inventory.api.constants import (
    AGENT_CREDENTIAL_SECRET_TYPE,
    FIELD_MANAGER_CLI,
    LABEL_AGENT,
    PROJECT_DOMAIN,
)
from cluster_inventory.manager.admin.registration_secrets import agent_registration_secret
from cluster_inventory.manager.rules.registration import RegistrationError, is_agent_registration

__all__ = [
    "DEFAULT_LEASE_DURATION",
    "accept",
    "agent_objects",
    "reject",
]

#: ``leaseDurationSeconds`` of a new agent's heartbeat Lease (the contract's default).
DEFAULT_LEASE_DURATION = 60
_RBAC = "rbac.authorization.k8s.io"


def agent_objects(
    namespace: str,
    name: str,
    clustersets: Sequence[str],
    *,
    display_name: str | None = None,
    lease_duration: int = DEFAULT_LEASE_DURATION,
) -> list[tuple[kube.Resource, dict[str, Any]]]:
    """Every object ``accept`` writes for member ``name``, in the order it writes them.

    The Lease, MemberReport and empty credential Secret first, the RBAC that lets the agent
    at them next, the registration Secret (what the CSR approver waits for) last. The
    credential Secret is applied without ``data``: accepting again keeps the agent's token.

    Raises:
        RegistrationError: ``name`` or a cluster set is not a DNS-1123 label, or no cluster
            set is given (checked before anything is written).
    """
    secret = agent_registration_secret(name, namespace, clustersets, display_name=display_name)
    labels = {LABEL_AGENT: name}
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels}
    rbac_name = agent_object_name(name)
    rbac_meta: dict[str, Any] = {"name": rbac_name, "namespace": namespace, "labels": labels}
    role: dict[str, Any] = {
        "metadata": rbac_meta,
        "rules": [
            {
                "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"],
                "resourceNames": [name],
                "verbs": ["get", "update", "patch"],
            },
            {
                "apiGroups": [PROJECT_DOMAIN],
                "resources": ["memberreports", "memberreports/status"],
                "resourceNames": [name],
                "verbs": ["get", "update", "patch"],
            },
            {
                "apiGroups": [""],
                "resources": ["secrets"],
                "resourceNames": [agent_credential_name(name)],
                "verbs": ["get", "update", "patch"],
            },
        ],
    }
    binding: dict[str, Any] = {
        "metadata": rbac_meta,
        "roleRef": {"apiGroup": _RBAC, "kind": "Role", "name": rbac_name},
        "subjects": [{"apiGroup": _RBAC, "kind": "User", "name": agent_user(name)}],
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
        (kube.SECRETS, secret),
    ]


async def accept(
    hub: kube.ApiClient,
    namespace: str,
    name: str,
    clustersets: Sequence[str],
    *,
    display_name: str | None = None,
    lease_duration: int = DEFAULT_LEASE_DURATION,
    field_manager: str = FIELD_MANAGER_CLI,
) -> None:
    """Accept member ``name`` as an agent member (idempotent; ``manager accept``).

    Args:
        hub: Hub client with the rights to write Secrets, Roles, RoleBindings, Leases and
            MemberReports in ``namespace`` (and to grant what the Role grants).
        namespace: The cluster manager's namespace (created if missing).
        name: The member name (a DNS-1123 label).
        clustersets: Cluster sets the member joins.
        display_name: ``spec.displayName`` of its profiles.
        lease_duration: ``leaseDurationSeconds`` of its heartbeat Lease.
        field_manager: Field manager of the writes.

    Raises:
        RegistrationError: Bad name or cluster sets, or a Secret ``NAME`` that is no
            agent-mode registration exists (a probed member's); nothing was written.
        KubeAPIError: A write was refused.
    """
    objects = agent_objects(
        namespace, name, clustersets, display_name=display_name, lease_duration=lease_duration
    )
    try:
        await kube.create(hub, kube.NAMESPACES, {"metadata": {"name": namespace}})
    except (kube.AlreadyExistsError, kube.ForbiddenError):
        pass  # exists, or we may not create namespaces: the writes below tell
    await _refuse_probed(hub, namespace, name)
    for resource, obj in objects:
        await kube.apply(hub, resource, obj, field_manager=field_manager)


async def _refuse_probed(hub: kube.ApiClient, namespace: str, name: str) -> None:
    try:
        current = await kube.get(hub, kube.SECRETS, name, namespace)
    except kube.NotFoundError:
        return
    if not is_agent_registration(current):
        raise RegistrationError(
            f"Secret {namespace}/{name}",
            "metadata.annotations",
            "exists and is not an agent-mode registration (a probed member's is removed "
            "with deregister first)",
            member=name,
        )


async def reject(hub: kube.ApiClient, namespace: str, name: str) -> list[str]:
    """Undo :func:`accept` for member ``name`` (``manager reject``); missing objects are fine.

    The registration Secret goes first (the approver signs nothing more for ``name``), then
    the RoleBinding (the agent's identity is powerless from here), then the rest.

    Returns:
        What was there and is deleted, e.g. ``["Secret ns/x", "RoleBinding ns/..."]``.

    Raises:
        RegistrationError: ``NAME`` is a probed member's registration (``deregister`` it).
        KubeAPIError: A delete was refused.
    """
    try:
        secret: dict[str, Any] | None = await kube.get(hub, kube.SECRETS, name, namespace)
    except kube.NotFoundError:
        secret = None
    if secret is not None and not is_agent_registration(secret):
        raise RegistrationError(
            f"Secret {namespace}/{name}",
            "metadata.annotations",
            "is not an agent-mode registration; use deregister for a probed member",
            member=name,
        )
    rbac_name = agent_object_name(name)
    targets = [
        (kube.SECRETS, name),
        (kube.ROLE_BINDINGS, rbac_name),
        (kube.ROLES, rbac_name),
        (kube.LEASES, name),
        (kube.MEMBER_REPORTS, name),
        (kube.SECRETS, agent_credential_name(name)),
    ]
    deleted: list[str] = []
    for resource, obj_name in targets:
        try:
            await kube.delete(hub, resource, obj_name, namespace, missing_ok=False)
        except kube.NotFoundError:
            continue
        deleted.append(resource.describe(namespace, obj_name))
    return deleted

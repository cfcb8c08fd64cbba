"""What a cluster manager holds on a member against what is needed there, read from outside.

The ``cluster-inventory manager grants`` command: an operator's view, with no manager
running. What is held is read on the member (:func:`.accounts.list_grants`); what is needed
is read on the hub as the manager would decide it: the inventories holding a ClusterProfile
of this manager for this member (label ``multicluster.x-k8s.io/inventory-member-id`` = the
member's ``kube-system`` UID), each with the member role the manager's allow-list gives it
(:func:`~cluster_inventory.manager.rules.inventory.inventories`). An orphan is what the
manager removes on its next connection to the member; one left on a member the manager no
longer serves is for the operator to delete.
"""

from __future__ import annotations

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import LABEL_CLUSTER_MANAGER, LABEL_INVENTORY_MEMBER_ID
from cluster_inventory.manager.config import ManagerConfig
from cluster_inventory.manager.members.accounts import list_grants
from cluster_inventory.manager.rules.grants import Grant, GrantState, compare, needed_grants
from cluster_inventory.manager.rules.inventory import granted_roles, inventories

__all__ = ["grant_report"]


async def grant_report(
    member: kube.ApiClient, hub: kube.ApiClient, config: ManagerConfig
) -> list[tuple[Grant, GrantState]]:
    """Every grant cluster manager ``config.name`` holds on ``member`` or its inventories need.

    Args:
        member: A client of the member (reading ServiceAccounts, ClusterRoleBindings and the
            ``kube-system`` namespace is enough).
        hub: A client of the hub (reading ClusterProfiles and Namespaces is enough).
        config: The manager's settings as ``manager run`` was given them: name,
            ``member_namespace``, fixed inventories and the allow-list of member roles.

    Returns:
        ``(grant, state)`` by inventory, kind and name (:func:`.grants.compare`).

    Raises:
        KubeError: The member or the hub cannot be read.
    """
    held = await list_grants(member, config.name, config.member_namespace)
    member_id = objects.meta(await kube.get(member, kube.NAMESPACES, "kube-system")).get("uid")
    profiles = await kube.list_objects(
        hub,
        kube.CLUSTER_PROFILES,
        label_selector=f"{LABEL_CLUSTER_MANAGER}={config.name},"
        f"{LABEL_INVENTORY_MEMBER_ID}={member_id}",
    )
    served = {str(objects.meta(p).get("namespace")) for p in profiles.get("items") or ()}
    namespaces = await kube.list_objects(hub, kube.NAMESPACES)
    invs = inventories(
        [ns for ns in namespaces.get("items") or () if objects.meta(ns).get("name") in served],
        config.inventory_namespaces,
        config.roles,
        fixed_only=config.inventory_namespaces_only,
    )
    needed = needed_grants(
        granted_roles(invs.values()), manager=config.name, namespace=config.member_namespace
    )
    return compare(held, needed)

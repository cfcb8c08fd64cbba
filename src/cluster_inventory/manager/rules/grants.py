"""What a cluster manager holds on a member for its consumers, and what it needs there. Pure.

For each inventory its consumers are granted (:attr:`.inventory.Inventory.granted`), the
manager keeps on every member of the inventory's cluster sets a ServiceAccount
``<manager>-<inventory>`` in its member namespace and a ClusterRoleBinding
``<account>:<role>`` binding it to the inventory's member role. Both carry the labels
``app.kubernetes.io/managed-by=<manager>`` and ``cluster-inventory.dev/inventory=<inventory>``.
Grants follow desired state: what is held (a LIST by those labels on the member, once per
connection) minus what is needed is removed, whatever event was missed (``docs/manager.md``).
An object counts as held by this manager only if its labels *and* its name are the ones this
manager writes (:func:`grant_of`), so nothing another manager or a person made is touched.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    LABEL_INVENTORY,
    LABEL_INVENTORY_MEMBER_ID,
    LABEL_MANAGED_BY,
)
from cluster_inventory.manager.rules.inventory import Inventory, granted_roles
from cluster_inventory.manager.rules.inventory_state import InventoryState
from cluster_inventory.manager.rules.member_keys import MemberKey

__all__ = [
    "BINDING",
    "SERVICE_ACCOUNT",
    "Grant",
    "GrantState",
    "Needs",
    "binding_name",
    "compare",
    "grant_of",
    "grant_selector",
    "member_needs",
    "needed_grants",
    "orphans",
    "service_account_name",
    "unneeded",
    "whole",
]

#: The kinds of :class:`Grant`.
SERVICE_ACCOUNT = "ServiceAccount"
BINDING = "ClusterRoleBinding"
#: ``held`` (held and needed), ``needed`` (not held yet), ``orphan`` (held, not needed).
GrantState = Literal["held", "needed", "orphan"]


def service_account_name(inventory_namespace: str, manager: str) -> str:
    """Member ServiceAccount serving one hub inventory namespace (a DNS label, <= 63)."""
    name = f"{manager}-{inventory_namespace}"
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    return f"{name[:52].rstrip('-')}-{digest}"


def binding_name(account: str, role: str) -> str:
    """The ClusterRoleBinding giving ``account`` the member ClusterRole ``role``."""
    return f"{account}:{role}"


def grant_selector(manager: str) -> str:
    """The label selector of every grant of cluster manager ``manager`` on a member."""
    return f"{LABEL_MANAGED_BY}={manager},{LABEL_INVENTORY}"


@dataclass(frozen=True, kw_only=True)
class Grant:
    """One object a cluster manager keeps (or should keep) on a member for its consumers.

    Attributes:
        inventory: The hub inventory namespace it serves.
        kind: :data:`SERVICE_ACCOUNT` or :data:`BINDING`.
        name: Its name.
        namespace: Its namespace ("" for a ClusterRoleBinding).
        role: The ClusterRole bound ("" for a ServiceAccount).
        subject: Of a held ClusterRoleBinding, ``namespace/name`` of the ServiceAccount it
            binds ("" when it binds none, or several); "" for the others.
    """

    inventory: str
    kind: str
    name: str
    namespace: str = ""
    role: str = ""
    subject: str = field(default="", compare=False)

    @property
    def key(self) -> tuple[str, str]:
        """``(kind, name)``: what identifies the object on the member."""
        return self.kind, self.name

    @property
    def order(self) -> tuple[str, bool, str]:
        """Sort key: by inventory, its ServiceAccount first, then by name."""
        return self.inventory, self.kind != SERVICE_ACCOUNT, self.name


def grant_of(obj: Mapping[str, Any], kind: str, manager: str) -> Grant | None:
    """The grant a listed member object is, or None if cluster manager ``manager`` did not make it.

    Ours means labelled with our name and an inventory, and named as we name them: a
    ServiceAccount ``service_account_name(inventory, manager)``, a ClusterRoleBinding
    ``<that account>:<its roleRef>``. A label alone is not enough: anyone who can label an
    object on the member could otherwise have us delete it.
    """
    labels = objects.labels_of(obj)
    inventory = labels.get(LABEL_INVENTORY)
    if labels.get(LABEL_MANAGED_BY) != manager or not inventory:
        return None
    meta = objects.meta(obj)
    name = str(meta.get("name") or "")
    account = service_account_name(str(inventory), manager)
    if kind == SERVICE_ACCOUNT:
        if name != account:
            return None
        return Grant(
            inventory=str(inventory), kind=kind, name=name, namespace=str(meta.get("namespace"))
        )
    role = str((obj.get("roleRef") or {}).get("name") or "")
    if not role or name != binding_name(account, role):
        return None
    subjects = [s for s in obj.get("subjects") or () if isinstance(s, Mapping)]
    subject = ""
    if len(subjects) == 1 and subjects[0].get("kind") == SERVICE_ACCOUNT:
        subject = f"{subjects[0].get('namespace')}/{subjects[0].get('name')}"
    return Grant(inventory=str(inventory), kind=kind, name=name, role=role, subject=subject)


@dataclass(frozen=True)
class Needs:
    """What a member needs of one cluster manager now.

    Attributes:
        roles: Inventory namespace -> the member ClusterRole its consumers get there.
        complete: False while some invalid registration names no member: any grant may be
            its member's, so nothing is removed (as no profile is deleted then).
    """

    roles: Mapping[str, str]
    complete: bool = True


def member_needs(
    state: InventoryState,
    profile_of: Callable[[str], Mapping[str, Any] | None],
    conn: MemberKey,
    member_id: str | None,
) -> Needs:
    """What the member reached through ``conn`` (member id ``member_id``) needs now.

    Read from the inventory state: every inventory granted (:attr:`.inventory.Inventory.granted`)
    that selects a registration reaching the member, through this connection or through any
    other with the same member id (another registration, another replica's), and the
    inventories of profiles held for an invalid registration of that member.

    Args:
        state: The desired profiles and what reaches which member.
        profile_of: A stored profile by ``namespace/name`` (the hub cache), for the member ids
            of held profiles.
        conn: A member key.
        member_id: The member's id (``kube-system`` UID), None if not known yet.

    Returns:
        The granted inventories of every registration reaching it and their roles;
        ``complete`` is False while an invalid registration names no member.
    """
    names = state.names_of(conn) | (state.reaching(member_id) if member_id else set())
    found: dict[str, Inventory] = {}
    for name in names:
        for inv in state.inventories_of(name):
            found[inv.namespace] = inv
    if member_id:
        for keys in state.held_keys.values():
            for key in keys:
                held_id = objects.labels_of(profile_of(str(key)) or {}).get(
                    LABEL_INVENTORY_MEMBER_ID
                )
                if held_id == member_id and key.namespace in state.inventories:
                    found[key.namespace] = state.inventories[key.namespace]
    return Needs(roles=granted_roles(found.values()), complete=state.held is not None)


def needed_grants(roles: Mapping[str, str], *, manager: str, namespace: str) -> list[Grant]:
    """The grants serving ``roles`` (inventory -> member role) on a member, sorted.

    Args:
        roles: From :attr:`Needs.roles`.
        manager: The cluster manager's name.
        namespace: Its namespace on the member (``member_namespace``).
    """
    out = []
    for inventory, role in roles.items():
        account = service_account_name(inventory, manager)
        out.append(
            Grant(inventory=inventory, kind=SERVICE_ACCOUNT, name=account, namespace=namespace)
        )
        out.append(
            Grant(
                inventory=inventory,
                kind=BINDING,
                name=binding_name(account, role),
                role=role,
                subject=f"{namespace}/{account}",
            )
        )
    return sorted(out, key=lambda grant: grant.order)


def orphans(held: Iterable[Grant], needed: Iterable[Grant]) -> list[Grant]:
    """The held grants nothing needs (an inventory gone, a role changed or refused), sorted."""
    wanted = {grant.key for grant in needed}
    return sorted((grant for grant in held if grant.key not in wanted), key=lambda g: g.order)


def unneeded(
    held: Iterable[Grant], needs: Needs, *, manager: str, namespace: str
) -> list[Grant] | None:
    """What of ``held`` the member does not need (:func:`orphans`), or None while unknown.

    Args:
        held: The grants read on the member (and kept by our writes since).
        needs: What the member needs now; nothing is unneeded while it is not ``complete``.
        manager: The cluster manager's name.
        namespace: Its namespace on the member.
    """
    if not needs.complete:
        return None
    return orphans(held, needed_grants(needs.roles, manager=manager, namespace=namespace))


def whole(held: Mapping[tuple[str, str], Grant], grants: Iterable[Grant]) -> bool:
    """True if every one of ``grants`` is held as it should be (a binding with its subject)."""
    for grant in grants:
        found = held.get(grant.key)
        if found is None or (grant.kind == BINDING and found.subject != grant.subject):
            return False
    return True


def compare(held: Iterable[Grant], needed: Iterable[Grant]) -> list[tuple[Grant, GrantState]]:
    """Every grant held or needed, with its state, by inventory, then kind, then name.

    ``held``: held and needed; ``needed``: needed and not held yet (the manager makes it
    when it next mints a token for the inventory); ``orphan``: held and not needed (the
    manager removes it on its next connection or inventory change).
    """
    have = {grant.key: grant for grant in held}
    want = {grant.key: grant for grant in needed}
    rows: list[tuple[Grant, GrantState]] = [
        (grant, "held" if grant.key in want else "orphan") for grant in have.values()
    ]
    rows += [(grant, "needed") for key, grant in want.items() if key not in have]
    return sorted(rows, key=lambda row: row[0].order)

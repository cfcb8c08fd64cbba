"""Inventories: which ClusterProfiles should exist in which namespace. Pure, plain data.

An inventory is a hub namespace. A namespace labelled ``multicluster.x-k8s.io/clusterset``
(or named in the manager's fixed inventories) receives one profile per member of its set(s);
a terminating namespace is left alone (nothing created, nothing deleted). Desired minus
existing is created, existing minus desired deleted; only profiles of this manager count as
existing, so another manager's profiles are never touched (KEP-4322 *Cluster Manager*).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cluster_inventory.api import objects
from cluster_inventory.api.constants import ANNOTATION_MEMBER_ROLE, LABEL_CLUSTER_SET
from cluster_inventory.api.objects import ObjectKey
from cluster_inventory.manager.rules.member_roles import MemberRoles
from cluster_inventory.manager.rules.registration import Registration, RegistrationError

__all__ = [
    "DuplicateMember",
    "Inventory",
    "InventoryPlan",
    "PlacementPlan",
    "ProfileKey",
    "desired_profiles",
    "duplicate_members",
    "fallback_member_id",
    "granted_roles",
    "held_members",
    "inventories",
    "plan",
]


#: Where a profile lives: hub namespace and name.
ProfileKey = ObjectKey


@dataclass(frozen=True, kw_only=True)
class Inventory:
    """One inventory namespace.

    Attributes:
        namespace: The hub namespace.
        clustersets: Sets whose members it holds.
        member_role: ClusterRole its consumers get on each member, as the cluster manager's
            allow-list decides (:mod:`.member_roles`); None: no grant, no token.
        terminating: The namespace is being deleted.
        role_refusal: Why the role its annotation asks for is not granted (for a Warning
            Event on the Namespace), or None.
    """

    namespace: str
    clustersets: frozenset[str]
    member_role: str | None
    terminating: bool = False
    role_refusal: str | None = None

    @property
    def granted(self) -> bool:
        """True if its consumers get a role on each member now (not terminating, a role)."""
        return self.member_role is not None and not self.terminating


def granted_roles(invs: Iterable[Inventory]) -> dict[str, str]:
    """Inventory namespace -> member role of the inventories granted now (``Inventory.granted``)."""
    return {
        inv.namespace: inv.member_role
        for inv in invs
        if inv.member_role is not None and not inv.terminating
    }


def inventories(
    namespaces: Iterable[Mapping[str, Any]],
    fixed: Mapping[str, Iterable[str]],
    roles: MemberRoles,
    *,
    fixed_only: bool = False,
) -> dict[str, Inventory]:
    """Inventories from the hub's Namespace objects and the manager's fixed configuration.

    A fixed inventory whose namespace does not exist is skipped (profiles cannot be created).
    With ``fixed_only`` (``--inventory-namespaces-only``: the manager may write Secrets only
    in those), a labelled namespace that is not fixed is no inventory of this manager. The
    member role is what ``roles`` allows of what the namespace's annotation asks for
    (:meth:`.member_roles.MemberRoles.decide`).
    """
    out: dict[str, Inventory] = {}
    for ns in namespaces:
        meta = objects.meta(ns)
        name = str(meta.get("name"))
        if fixed_only and name not in fixed:
            continue
        sets = set(fixed.get(name, ()))
        label = (meta.get("labels") or {}).get(LABEL_CLUSTER_SET)
        if label:
            sets.add(str(label))
        if not sets:
            continue
        asked = str((meta.get("annotations") or {}).get(ANNOTATION_MEMBER_ROLE) or "")
        decision = roles.decide(name, sets, asked)
        out[name] = Inventory(
            namespace=name,
            clustersets=frozenset(sets),
            member_role=decision.role,
            terminating=bool(meta.get("deletionTimestamp"))
            or objects.status(ns).get("phase") == "Terminating",
            role_refusal=decision.refusal,
        )
    return out


@dataclass(frozen=True, order=True)
class DuplicateMember:
    """A registration left out of an inventory: another one reaches the same member cluster.

    KEP-4322 (after kubernetes/enhancements#6237): within an inventory each member cluster
    has at most one ClusterProfile, and its ``inventory-member-id`` is unique there.

    Attributes:
        inventory: The inventory namespace.
        registration: The registration left out.
        kept: The registration whose profile stands for the member (the one whose profile
            carries the member id already, else the first by name;
            :meth:`~cluster_inventory.manager.rules.inventory_state.InventoryState.place`).
        member_id: The member id both reach (the member's ``kube-system`` namespace UID).
    """

    inventory: str
    registration: str
    kept: str
    member_id: str

    def __str__(self) -> str:
        return (
            f"registration {self.registration} reaches member {self.member_id}, as "
            f"{self.kept} does: inventory {self.inventory} keeps one profile for it "
            f"({self.kept})"
        )


def members_and_duplicates(
    registrations: Mapping[str, Registration],
    inventories: Mapping[str, Inventory],
    member_ids: Mapping[str, str],
) -> tuple[dict[ProfileKey, tuple[Registration, Inventory]], list[DuplicateMember]]:
    """:func:`desired_profiles` and :func:`duplicate_members` at once (a pass needs both)."""
    out: dict[ProfileKey, tuple[Registration, Inventory]] = {}
    dups: list[DuplicateMember] = []
    names = sorted(registrations)
    for inv in inventories.values():
        seen: dict[str, str] = {}
        for name in names:
            reg = registrations[name]
            if not inv.clustersets.intersection(reg.clustersets):
                continue
            member = member_ids.get(name)
            kept = seen.setdefault(member, name) if member else name
            if member and kept != name:
                dups.append(
                    DuplicateMember(
                        inventory=inv.namespace, registration=name, kept=kept, member_id=member
                    )
                )
                continue
            out[ProfileKey(inv.namespace, name)] = (reg, inv)
    return out, sorted(dups)


def desired_profiles(
    registrations: Mapping[str, Registration],
    inventories: Mapping[str, Inventory],
    member_ids: Mapping[str, str] | None = None,
) -> dict[ProfileKey, tuple[Registration, Inventory]]:
    """Every (inventory, member) pair whose cluster sets meet, one profile per member.

    Args:
        registrations: By name.
        inventories: By namespace.
        member_ids: Registration name to the member id seen through it, where known.
            Registrations that reach one member stand for it once: an inventory gets a
            profile for the first of them by name only (KEP-4322 after #6237: at most one
            profile per member cluster in an inventory; see :func:`duplicate_members`). The
            manager's inventory controller also prefers the one whose profile carries the
            member id already (:meth:`.inventory_state.InventoryState.place`).
    """
    return members_and_duplicates(registrations, inventories, member_ids or {})[0]


def duplicate_members(
    registrations: Mapping[str, Registration],
    inventories: Mapping[str, Inventory],
    member_ids: Mapping[str, str] | None = None,
) -> list[DuplicateMember]:
    """The registrations :func:`desired_profiles` leaves out, sorted, for reporting."""
    return members_and_duplicates(registrations, inventories, member_ids or {})[1]


@dataclass(frozen=True)
class InventoryPlan:
    """What a pass has to do: create and delete, in sorted order."""

    create: list[ProfileKey]
    delete: list[ProfileKey]


#: The name :class:`InventoryPlan` had while the manager's inventories were called placement
#: (``cluster_inventory.manager.PlacementPlan`` is public).
PlacementPlan = InventoryPlan


def plan(
    desired: Iterable[ProfileKey],
    existing: Iterable[ProfileKey],
    inventories: Mapping[str, Inventory],
) -> InventoryPlan:
    """Desired minus existing to create; existing (ours) minus desired to delete.

    Nothing is created or deleted in a terminating namespace.

    Args:
        desired: Profiles that should exist.
        existing: Profiles of this manager that exist.
        inventories: Current inventories (their ``terminating`` flag is honoured).
    """
    frozen = {n for n, inv in inventories.items() if inv.terminating}
    want, have = set(desired), set(existing)
    return InventoryPlan(
        create=sorted(k for k in want - have if k.namespace not in frozen),
        delete=sorted(k for k in have - want if k.namespace not in frozen),
    )


def fallback_member_id(manager: str, member: str) -> str:
    """A stable member id used until the member's kube-system UID is known."""
    return hashlib.sha256(f"{manager}/{member}".encode()).hexdigest()[:36]


def held_members(
    registrations: Mapping[str, Registration], errors: list[RegistrationError]
) -> frozenset[str] | None:
    """The member names whose profiles must not be deleted now (pure).

    An invalid registration says nothing about whether its member should still have
    profiles, so they are kept: a typo in a Secret, a Cluster label or a file entry never
    deletes an inventory entry. A name registered validly by another source is not held.

    Args:
        registrations: The valid registrations by member name.
        errors: The invalid ones.

    Returns:
        The held member names, or None when an error names no member (a file entry with no
        usable name): then every deletion waits, since any profile may be that entry's.
    """
    held: set[str] = set()
    for error in errors:
        if error.member is None:
            return None
        if error.member not in registrations:
            held.add(error.member)
    return frozenset(held)

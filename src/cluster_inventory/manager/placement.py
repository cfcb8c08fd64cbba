"""Inventory placement: which ClusterProfiles should exist. Pure functions of plain data.

An inventory is a hub namespace. A namespace labelled ``multicluster.x-k8s.io/clusterset``
(or named in the manager's fixed inventories) receives one profile per member of its set(s);
a terminating namespace is left alone (nothing created, nothing deleted). Desired minus
existing is created, existing minus desired deleted; only profiles of this manager count as
existing, so another manager's profiles are never touched (KEP-4322 *Cluster Manager*).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cluster_inventory.api.constants import LABEL_CLUSTER_SET
from cluster_inventory.manager.names import ANNOTATION_MEMBER_ROLE
from cluster_inventory.manager.registration import Registration

__all__ = ["Inventory", "Plan", "ProfileKey", "desired_profiles", "inventories", "plan"]


@dataclass(frozen=True, order=True)
class ProfileKey:
    """Where a profile lives: hub namespace and name."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, kw_only=True)
class Inventory:
    """One inventory namespace.

    Attributes:
        namespace: The hub namespace.
        clustersets: Sets whose members it holds.
        member_role: ClusterRole its consumers get on each member.
        terminating: The namespace is being deleted.
    """

    namespace: str
    clustersets: frozenset[str]
    member_role: str
    terminating: bool = False


def inventories(
    namespaces: Iterable[Mapping[str, Any]],
    fixed: Mapping[str, Iterable[str]],
    default_role: str,
) -> dict[str, Inventory]:
    """Inventories from the hub's Namespace objects and the manager's fixed configuration.

    A fixed inventory whose namespace does not exist is skipped (profiles cannot be created).
    """
    out: dict[str, Inventory] = {}
    for ns in namespaces:
        meta = ns.get("metadata") or {}
        name = str(meta.get("name"))
        sets = set(fixed.get(name, ()))
        label = (meta.get("labels") or {}).get(LABEL_CLUSTER_SET)
        if label:
            sets.add(str(label))
        if not sets:
            continue
        out[name] = Inventory(
            namespace=name,
            clustersets=frozenset(sets),
            member_role=str(
                (meta.get("annotations") or {}).get(ANNOTATION_MEMBER_ROLE) or default_role
            ),
            terminating=bool(meta.get("deletionTimestamp"))
            or (ns.get("status") or {}).get("phase") == "Terminating",
        )
    return out


def desired_profiles(
    registrations: Mapping[str, Registration], inventories: Mapping[str, Inventory]
) -> dict[ProfileKey, tuple[Registration, Inventory]]:
    """Every (inventory, member) pair whose cluster sets meet."""
    out: dict[ProfileKey, tuple[Registration, Inventory]] = {}
    for inv in inventories.values():
        for reg in registrations.values():
            if inv.clustersets.intersection(reg.clustersets):
                out[ProfileKey(inv.namespace, reg.name)] = (reg, inv)
    return out


@dataclass(frozen=True)
class Plan:
    """What placement has to do: create and delete, in sorted order."""

    create: list[ProfileKey]
    delete: list[ProfileKey]


def plan(
    desired: Iterable[ProfileKey],
    existing: Iterable[ProfileKey],
    inventories: Mapping[str, Inventory],
) -> Plan:
    """Desired minus existing to create; existing (ours) minus desired to delete.

    Nothing is created or deleted in a terminating namespace.

    Args:
        desired: Profiles that should exist.
        existing: Profiles of this manager that exist.
        inventories: Current inventories (their ``terminating`` flag is honoured).
    """
    frozen = {n for n, inv in inventories.items() if inv.terminating}
    want, have = set(desired), set(existing)
    return Plan(
        create=sorted(k for k in want - have if k.namespace not in frozen),
        delete=sorted(k for k in have - want if k.namespace not in frozen),
    )

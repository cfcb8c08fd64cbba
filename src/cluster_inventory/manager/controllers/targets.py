"""What a profile key stands for now: its registration, inventory, stored profile and member.

The status and token controllers reconcile profile keys; both start from the same question,
answered here from the inventory state
(:mod:`~cluster_inventory.manager.rules.inventory_state`: which profiles this replica keeps),
the hub cache and the member pool, never from another controller.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from cluster_inventory import kube
from cluster_inventory.manager.members.pool import Member
from cluster_inventory.manager.rules.inventory import Inventory, ProfileKey
from cluster_inventory.manager.rules.inventory_state import InventoryState
from cluster_inventory.manager.rules.member_keys import MemberKey, member_key
from cluster_inventory.manager.rules.registration import Registration

__all__ = ["MemberLookup", "ProfileTargets", "Target"]


class MemberLookup(Protocol):
    """Where a member's connection is found by its key (the member pool)."""

    def get(self, key: MemberKey) -> Member | None:
        """The member of ``key``, or None while there is none."""
        ...


class Target(NamedTuple):
    """What a reconcile of one profile key works on.

    Attributes:
        registration: The member's registration.
        inventory: The inventory the profile is in.
        profile: The profile as cached, or None while it does not exist yet.
        member: The member's connection in the pool, or None while it is not added yet.
    """

    registration: Registration
    inventory: Inventory
    profile: dict[str, Any] | None
    member: Member | None


class ProfileTargets:
    """The profiles this replica keeps, as the status and token controllers read them.

    Args:
        state: The desired profiles (kept by the inventory controller).
        profiles: The hub cache of this manager's profiles.
        members: The member pool (or anything that finds a member by its key).

    Attributes:
        conflicts: Profiles that exist but belong to another cluster manager (left
            untouched; the inventory controller finds them when it creates a profile).
    """

    def __init__(
        self, state: InventoryState, profiles: kube.NamespacedInformer, members: MemberLookup
    ) -> None:
        self.state = state
        self.profiles = profiles
        self.members = members
        self.conflicts: set[ProfileKey] = set()

    def __contains__(self, key: object) -> bool:
        """True if this replica keeps profile ``key`` (another manager's too)."""
        return key in self.state.desired

    def get(self, key: ProfileKey) -> Target | None:
        """What ``key`` stands for, or None when the profile is not ours to keep."""
        entry = self.state.desired.get(key)
        if entry is None or key in self.conflicts:
            return None
        reg, inv = entry
        return Target(
            reg, inv, self.profiles.get(str(key)), self.members.get(member_key(reg.connection))
        )

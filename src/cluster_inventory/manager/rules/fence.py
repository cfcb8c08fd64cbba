"""The fence of a sharded cluster manager: which replica writes a profile, at which version.

Replicas of one cluster manager share the members (``controller.sharding``); their views of
the live peers differ for a moment whenever one joins or dies. So that two replicas never
write one profile, each profile names the replica holding it (annotation
``cluster-inventory.dev/shard-holder``) and every write of a sharded replica is conditional on
the resourceVersion it read (server-side apply with ``metadata.resourceVersion``): a replica
writing from an outdated view gets 409 Conflict from the hub instead of overwriting.

A replica takes (claims) a profile only when nobody holds it, or its holder is not a live
replica in its view (a killed replica, noticed after the Lease duration). A live holder gives
its profiles up itself when it sees that they moved (one write each, on a change of the
replicas only), so there is no tug of war between two live replicas (``docs/scale.md``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cluster_inventory.api import objects
from cluster_inventory.api.constants import ANNOTATION_SHARD_HOLDER, LABEL_INVENTORY_MEMBER_ID
from cluster_inventory.controller import ShardMembership
from cluster_inventory.manager.rules.inventory import ProfileKey

__all__ = ["ProfileFence", "member_id_elsewhere"]


def member_id_elsewhere(profiles: Iterable[Mapping[str, Any]]) -> str | None:
    """The member id another replica's registration reaches, read from its profiles' labels.

    A replica reaches only its own members; the others' ids come from the profiles their
    owners wrote, so a member registered twice under names owned by two replicas is still
    given one profile per inventory (the first name wins on every replica).

    Args:
        profiles: The stored profiles of one registration (every inventory's), in a fixed
            order (the first that carries an id gives it).

    Returns:
        The label ``multicluster.x-k8s.io/inventory-member-id`` of the first that has one.
    """
    for profile in profiles:
        mid = objects.labels_of(profile).get(LABEL_INVENTORY_MEMBER_ID)
        if mid:
            return str(mid)
    return None


class ProfileFence:
    """One replica's side of the fence: who holds each profile and its version to write on.

    Args:
        membership: This replica's shard membership.
    """

    def __init__(self, membership: ShardMembership) -> None:
        self.membership = membership
        #: The versions our latest write superseded (what the cache may still show: the one it
        #: showed when we wrote, and those of our own writes since that it has not caught up
        #: with, such as a claim's label write before its status write), and the version
        #: that write made.
        self._versions: dict[ProfileKey, tuple[frozenset[str], str]] = {}

    @property
    def identity(self) -> str:
        """This replica's identity (the annotation's value on the profiles it holds)."""
        return self.membership.config.identity

    def holding(self, key: ProfileKey, current: Mapping[str, Any]) -> tuple[str, str]:
        """``(holder, resourceVersion)`` of a profile ("" holder: nobody holds it).

        As our own last write left it while the cache has not caught up with that write
        (it shows what that write superseded, an earlier write of ours included), else as
        cached. Without the earlier writes, the echo of a claim's label write arriving before
        that of its status write made the next write conditional on the label write's
        version: a 409, a requeue and a write again, once per profile taken over.
        """
        meta = objects.meta(current)
        seen = str(meta.get("resourceVersion") or "")
        ours = self._versions.get(key)
        if ours is not None and seen in ours[0]:
            return self.identity, ours[1]
        holder = str((meta.get("annotations") or {}).get(ANNOTATION_SHARD_HOLDER) or "")
        return holder, seen

    def blocked_by(self, holder: str) -> bool:
        """True if a live other replica holds the profile: wait for it to give it up."""
        return bool(holder) and holder != self.identity and self.membership.is_live(holder)

    def wrote(self, key: ProfileKey, current: Mapping[str, Any], written: Mapping[str, Any]) -> str:
        """Record our write of ``key`` (made on the cached ``current``); its new version.

        A write made while the cache still shows what our previous write superseded is
        chained to it: the cache showing any version of the chain means our latest write
        stands. The chain restarts once the cache caught up, so it stays a few versions long.
        """
        version = str(objects.meta(written).get("resourceVersion"))
        seen = str(objects.meta(current).get("resourceVersion") or "")
        prior = self._versions.get(key)
        superseded = {seen}
        if prior is not None and seen in prior[0]:
            superseded |= prior[0] | {prior[1]}
        self._versions[key] = (frozenset(superseded), version)
        return version

    def forget(self, key: ProfileKey) -> None:
        """Drop what we know of ``key`` (deleted, or given up)."""
        self._versions.pop(key, None)

    def annotations(self, holder: str | None = None) -> dict[str, str]:
        """The holder annotation to apply (ours unless ``holder`` says otherwise)."""
        return {ANNOTATION_SHARD_HOLDER: self.identity if holder is None else holder}

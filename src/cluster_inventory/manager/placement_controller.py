"""The placement controller: which profiles exist, and which members are connected.

A reconcile of the single key ``placement`` reads every registration (the source), every
inventory (hub Namespaces) and the profiles this manager owns (the hub cache), computes the
desired profiles (:mod:`.placement`, pure), creates and deletes profiles of this manager, and
starts or stops member connections in the :class:`~cluster_inventory.manager.pool.MemberPool`.
Every member any inventory wants is connected and probed once before its profiles are made,
so that registrations reaching one member are known as such from the first time.
Sharded, it places only the members this replica owns and gives up (one write each) the
profiles that moved to another replica (``docs/scale.md``).
"""

from __future__ import annotations

import functools
import logging
import time
from typing import TYPE_CHECKING

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import FIELD_MANAGER_CLUSTER_MANAGER, LABEL_INVENTORY_MEMBER_ID
from cluster_inventory.manager.fence import member_ids_elsewhere
from cluster_inventory.manager.member import connection_key
from cluster_inventory.manager.placement import (
    Inventory,
    ProfileKey,
    desired_profiles,
    fallback_member_id,
    held_members,
    inventories,
    members_and_duplicates,
    plan,
)
from cluster_inventory.manager.registration import Registration

if TYPE_CHECKING:
    from cluster_inventory.manager.cluster_manager import ClusterManagerRunnable

__all__ = ["PlacementController"]

_log = logging.getLogger("cluster_inventory.manager")


class PlacementController:
    """Reconciles the ``placement`` key of one :class:`ClusterManagerRunnable`.

    Args:
        manager: The cluster manager whose source, cache, member pool and desired profiles
            this controller reads and updates.
    """

    def __init__(self, manager: ClusterManagerRunnable) -> None:
        self.manager = manager

    async def reconcile(self) -> float | None:
        """Create and delete profiles and start or stop member connections.

        Returns:
            None (placement is event-driven).
        """
        m = self.manager
        cpu = time.thread_time()
        registrations, invalid = m.source.snapshot()
        m.reports.source_failures(m.source.failures())
        await m.reports.invalid_registrations(invalid)
        held = held_members(registrations, [error for _, error in invalid])
        invs = inventories(
            m.namespaces.items(),
            m.config.inventory_namespaces,
            m.config.default_member_role,
            fixed_only=m.config.inventory_namespaces_only,
        )
        owned = {name: reg for name, reg in registrations.items() if self._mine(name)}
        if m.shard is not None:
            m.shard.report_owned(len(owned))
        # Every member any inventory wants is connected and probed once before its profiles
        # are created or deleted, so that registrations reaching one member are known as such
        # the first time (otherwise each would get a profile, deleted again at the next
        # placement). Members start in the background, paced; each first probe queues the
        # placement again, so profiles appear as their members answer.
        candidates = desired_profiles(owned, invs)
        conns = {name: connection_key(reg.connection) for name, reg in owned.items()}
        needed = {conns[key.name] for key in candidates}
        not_ready = {
            conns[key.name]: reg.not_ready for key, (reg, _) in candidates.items() if reg.not_ready
        }
        new = needed - set(m.members)
        seeds = {}
        for key in candidates:
            conn = conns[key.name]
            if conn in new and conn not in seeds and (seed := m.seed_for(key)) is not None:
                seeds[conn] = seed
        m.members.add(new, not_ready, seeds)
        members = {name: member for name, conn in conns.items() if (member := m.members.get(conn))}
        pending = {name for name, member in members.items() if not member.observed}
        member_ids = member_ids_elsewhere(m.profiles.items(), registrations, owned) | {
            name: member.observation.member_id
            for name, member in members.items()
            if member.observation.member_id
        }
        everyone, duplicates = members_and_duplicates(registrations, invs, member_ids)
        desired = {key: entry for key, entry in everyone.items() if key.name in owned}
        for dup in duplicates:
            if dup.registration in owned:
                await m.reports.duplicate(dup, registrations[dup.registration])
        existing = {
            key
            for key in (ProfileKey(*k.split("/", 1)) for k in m.profiles.keys())
            if self._mine(key.name)
        }
        todo = plan(desired, existing, invs)
        m.reports.held([k for k in todo.delete if held is None or k.name in held])
        deletions = [k for k in todo.delete if held is not None and k.name not in held | pending]
        creations = [k for k in todo.create if k.name not in pending]
        by_member: dict[kube.ClusterConnection, set[ProfileKey]] = {}
        for key in desired:
            by_member.setdefault(conns[key.name], set()).add(key)
        previous, previous_by_member = m.desired, m.by_member
        m.desired, m.by_member = desired, by_member
        spent = time.thread_time() - cpu
        await kube.gather_bounded(
            [functools.partial(self._create_profile, key, *desired[key]) for key in creations],
            m.config.workers * 2,
        )
        await kube.gather_bounded(
            [functools.partial(self._delete_profile, key, previous.get(key)) for key in deletions],
            m.config.workers * 2,
        )
        cpu = time.thread_time()
        gone = set(m.members) - needed
        wanted = self._wanted_anywhere(registrations, invs) if gone else set()
        moved = (
            [k for k in previous.keys() - desired.keys() if k not in deletions]
            if m.shard is not None
            else []
        )
        spent += time.thread_time() - cpu
        for conn in gone:
            # Moved to another replica, or held (its registration is invalid now): its
            # grants stay. Left the manager: they go (docs/manager.md).
            kept = held is None or any(k.name in held for k in previous_by_member.get(conn, ()))
            await m.members.remove(conn, left=conn not in wanted and not kept)
        if not m.members.starting:  # also when the last member starting was removed
            m.tokens.release()
        if moved:
            await kube.gather_bounded(
                [functools.partial(self._release, key, *previous[key]) for key in moved],
                m.config.workers * 2,
            )
        cpu = time.thread_time()
        # New entries, and those whose registration or inventory changed; the others are
        # queued by their own events (member observations, profile updates). Queueing every
        # key at every placement cost O(N) reconciles per placement, and placements come once
        # per member start-up during a cold start.
        for key, entry in desired.items():
            if previous.get(key) != entry:
                m.queue.add(key)
        m.metrics.placement_seconds.labels("full").observe(spent + time.thread_time() - cpu)
        return None

    @staticmethod
    def _wanted_anywhere(
        registrations: dict[str, Registration], invs: dict[str, Inventory]
    ) -> set[kube.ClusterConnection]:
        """Connections some inventory wants, whichever replica serves them."""
        sets = [inv.clustersets for inv in invs.values()]
        return {
            connection_key(reg.connection)
            for reg in registrations.values()
            if any(s.intersection(reg.clustersets) for s in sets)
        }

    def _mine(self, member: str) -> bool:
        """True if this replica serves ``member`` (always, unsharded)."""
        m = self.manager
        return m.shard is None or m.shard.owns(member)

    async def _release(self, key: ProfileKey, reg: Registration, inv: Inventory) -> None:
        """Give up holding a profile whose member moved to another replica (one write).

        Conditional on the cached resourceVersion: if another replica holds it already, or
        the cache is behind, the 409 means there is nothing left to give up.
        """
        m = self.manager
        current = m.profiles.get(str(key))
        assert m.fence is not None
        if current is None:
            return
        holder, version = m.fence.holding(key, current)
        m.fence.forget(key)
        if holder != m.fence.identity:
            return
        labels = objects.labels_of(current)
        body = m.status.profile_metadata(key, reg, str(labels.get(LABEL_INVENTORY_MEMBER_ID)), "")
        body["metadata"]["resourceVersion"] = version
        try:
            await kube.apply(
                m.hub, kube.CLUSTER_PROFILES, body, field_manager=FIELD_MANAGER_CLUSTER_MANAGER
            )
        except (kube.ConflictError, kube.NotFoundError):
            return
        m.status.count_health(key, None)

    def _member_id(self, reg: Registration) -> str:
        m = self.manager
        member = m.members.get(connection_key(reg.connection))
        observed = member.observation.member_id if member else None
        return observed or fallback_member_id(m.config.name, reg.name)

    async def _create_profile(self, key: ProfileKey, reg: Registration, inv: Inventory) -> None:
        m = self.manager
        body = m.status.profile_metadata(key, reg, self._member_id(reg))
        try:
            await kube.create(m.hub, kube.CLUSTER_PROFILES, body)
        except kube.AlreadyExistsError:
            found = await kube.get(m.hub, kube.CLUSTER_PROFILES, key.name, namespace=key.namespace)
            owner = (objects.spec(found).get("clusterManager") or {}).get("name")
            if owner != m.config.name and key not in m.conflicts:
                m.conflicts.add(key)
                _log.warning(
                    "profile exists and belongs to cluster manager %r; left untouched",
                    owner,
                    extra={"object": str(key), "cluster": reg.name},
                )
            return
        m.conflicts.discard(key)
        _log.info("created profile", extra={"object": str(key), "cluster": reg.name})

    async def _delete_profile(
        self, key: ProfileKey, was: tuple[Registration, Inventory] | None
    ) -> None:
        m = self.manager
        await kube.delete(m.hub, kube.CLUSTER_PROFILES, key.name, namespace=key.namespace)
        await kube.delete(m.hub, kube.SECRETS, key.name, namespace=key.namespace)
        m.status.written.pop(key, None)
        m.tokens.forget(key)
        if m.fence is not None:
            m.fence.forget(key)
        m.status.count_health(key, None)
        _log.info("deleted profile", extra={"object": str(key)})
        if was is None:
            return
        conn = connection_key(was[0].connection)
        member = m.members.get(conn)
        still_used = any(k.namespace == key.namespace for k in m.by_member.get(conn, ()))
        if member is not None and not still_used:
            await member.accounts.forget_inventory(key.namespace)

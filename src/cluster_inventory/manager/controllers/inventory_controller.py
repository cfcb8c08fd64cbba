"""The placement controller: which profiles exist, and which members are connected.

A placement reads the registrations (the source), the inventories (hub Namespaces) and the
profiles this manager owns (the hub cache), decides the desired profiles (:mod:`.placement`,
pure), creates and deletes profiles of this manager, and starts or stops member connections
in the :class:`~cluster_inventory.manager.pool.MemberPool`. Every member any inventory wants
is connected and probed once before its profiles are made, so that registrations reaching one
member are known as such from the first time. Sharded, it places only the members this
replica owns and gives up (one write each) the profiles that moved to another replica
(``docs/scale.md``).

Placement is incremental (:mod:`.placement_state`): the events that queue it say what they
touched (a registration, a member's first verdict or member id, a profile), and a pass places
only those registrations and the ones sharing a member id with them. A change of the
inventories, of the replicas, of a source's health, or a pass that failed, makes the next pass
full. A cold start of N members so costs O(N) placement work, not O(N) per batch of members.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import TYPE_CHECKING, Any

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import FIELD_MANAGER_CLUSTER_MANAGER, LABEL_INVENTORY_MEMBER_ID
from cluster_inventory.kube.informer import ADDED, DELETED, MODIFIED
from cluster_inventory.manager.rules.fence import member_id_elsewhere
from cluster_inventory.manager.rules.inventory import (
    Inventory,
    ProfileKey,
    fallback_member_id,
    held_members,
    inventories,
)
from cluster_inventory.manager.rules.inventory_state import PlacementState
from cluster_inventory.manager.rules.member_keys import MemberKey, member_key
from cluster_inventory.manager.rules.registration import Registration

if TYPE_CHECKING:
    from cluster_inventory.manager.cluster_manager import ClusterManagerRunnable

__all__ = ["PROFILES_BY_MEMBER_ID", "PROFILES_BY_NAME", "PlacementController"]

_log = logging.getLogger("cluster_inventory.manager")
#: The profile cache's index by profile name (every inventory's profile of one member).
PROFILES_BY_NAME = "placement-name"
#: Profiles of this manager by ``inventory/member id`` (their member-id label).
PROFILES_BY_MEMBER_ID = "placement-member-id"


def _inventory_member_id(profile: dict[str, Any]) -> list[str]:
    member_id = objects.labels_of(profile).get(LABEL_INVENTORY_MEMBER_ID)
    return [f"{objects.meta(profile).get('namespace')}/{member_id}"] if member_id else []


class PlacementController:
    """Reconciles the ``placement`` key of one :class:`ClusterManagerRunnable`.

    Args:
        manager: The cluster manager whose source, cache, member pool and desired profiles
            this controller reads and updates.

    Attributes:
        state: The desired profiles, kept up to date name by name.
    """

    def __init__(self, manager: ClusterManagerRunnable) -> None:
        self.manager = manager
        self.state = PlacementState()
        manager.profiles.add_indexer(PROFILES_BY_NAME, lambda p: [str(objects.meta(p)["name"])])
        manager.profiles.add_indexer(PROFILES_BY_MEMBER_ID, _inventory_member_id)
        self._full = True
        self._source = True
        self._failures: list[str] = []
        self._names: set[str] = set()
        self._conns: set[MemberKey] = set()

    # -- what the events touched ---------------------------------------------------------
    def touch_all(self) -> None:
        """The next pass is full (inventories or replicas changed)."""
        self._full = True

    def touch_source(self) -> None:
        """The next pass reads the registration source again (and places what changed)."""
        self._source = True

    def touch_member(self, conn: MemberKey) -> None:
        """The next pass places the registrations reaching member ``conn`` (a connection key)."""
        self._conns.add(conn)

    def touch_namespace(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> bool:
        """Note a Namespace event; True if it changed an inventory (the next pass is full)."""
        c = self.manager.config

        def inventory(ns: dict[str, Any] | None) -> dict[str, Inventory]:
            return inventories(
                [ns] if ns else [],
                c.inventory_namespaces,
                c.roles,
                fixed_only=c.inventory_namespaces_only,
            )

        if inventory(None if event == DELETED else obj) == inventory(old):
            return False
        self._full = True
        return True

    def touch_profile(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> bool:
        """Note a profile event; True if placement has something to do about it.

        This replica's profile appearing where none is desired (a stray to delete) or
        disappearing where one is (to create again, or a held one gone); another replica's
        profile changing its member id (which may make one of ours a duplicate, or not).
        """
        meta = objects.meta(obj)
        key = ProfileKey(str(meta.get("namespace")), str(meta.get("name")))
        if self._mine(key.name):
            touched = event != MODIFIED and self.state.affects(key, present=event == ADDED)
        else:
            now = (
                None if event == DELETED else objects.labels_of(obj).get(LABEL_INVENTORY_MEMBER_ID)
            )
            then = objects.labels_of(old).get(LABEL_INVENTORY_MEMBER_ID) if old else None
            touched = now != then
        if touched:
            self._names.add(key.name)
        return touched

    # -- the pass ------------------------------------------------------------------------
    async def reconcile(self) -> float | None:
        """Create and delete profiles and start or stop member connections.

        Returns:
            None (placement is event-driven).
        """
        full, source, names, conns = self._full, self._source, self._names, self._conns
        self._full, self._source, self._names, self._conns = False, False, set(), set()
        try:
            await self._place(full, source, names, conns)
        except BaseException:
            self._full = True  # what this pass did not finish, the next one does
            raise
        return None

    async def _place(
        self, full: bool, source: bool, names: set[str], conns: set[MemberKey]
    ) -> None:
        m, state = self.manager, self.state
        cpu = time.thread_time()
        inventories_changed = False
        if full or source:
            registrations, invalid = m.source.snapshot()
            failures = m.source.failures()
            full = full or failures != self._failures
            self._failures = failures
            m.reports.source_failures(failures)
            await m.reports.invalid_registrations(invalid)
            held = held_members(registrations, [error for _, error in invalid])
            if full:
                invs = inventories(
                    m.namespaces.items(),
                    m.config.inventory_namespaces,
                    m.config.roles,
                    fixed_only=m.config.inventory_namespaces_only,
                )
                await m.reports.member_roles(invs.values(), m.namespaces.get)
                inventories_changed = invs != state.inventories
                names |= state.reset(registrations, invs, held, self._mine)
                names |= {key.split("/", 1)[1] for key in m.profiles.keys()}  # strays too
            else:
                names |= state.set_registrations(registrations, held)
        for conn in conns:
            names |= state.names_of(conn)
        if m.shard is not None:
            m.shard.report_owned(state.owned)
        # Every member any inventory wants is connected and probed once before its profiles
        # are created or deleted, so that registrations reaching one member are known as such
        # the first time (otherwise each would get a profile, deleted again at the next
        # placement). Members start in the background, paced; each first probe queues the
        # placement again, so profiles appear as their members answer.
        candidates = state.candidates(names)
        needed = {member_key(reg.connection) for reg in candidates.values()}
        not_ready = {
            member_key(reg.connection): reg.not_ready
            for reg in candidates.values()
            if reg.not_ready
        }
        new = {conn for conn in needed if conn not in m.members}
        seeds = {}
        for key, reg in candidates.items():
            conn = member_key(reg.connection)
            if conn in new and conn not in seeds and (seed := m.seed_for(key)) is not None:
                seeds[conn] = seed
        m.members.add(new, not_ready, seeds)
        step = state.place(
            names,
            member_id=self._member_id_of,
            pending=self._pending,
            existing=self._existing,
            started=m.members,
            holders=self._holders,
        )
        spent = time.thread_time() - cpu
        for dup in step.duplicates:
            await m.reports.duplicate(dup, state.registrations[dup.registration])
        cpu = time.thread_time()
        m.reports.held(sorted(key for keys in state.held_keys.values() for key in keys))
        deleted = set(step.delete)
        moved = [key for key in step.dropped if key not in deleted] if m.shard is not None else []
        spent += time.thread_time() - cpu
        await kube.gather_bounded(
            [
                functools.partial(self._create_profile, key, *state.desired[key])
                for key in step.create
            ],
            m.config.workers * 2,
        )
        await kube.gather_bounded(
            [
                functools.partial(self._delete_profile, key, step.dropped.get(key))
                for key in step.delete
            ],
            m.config.workers * 2,
        )
        for conn, left in step.stop.items():
            # Moved to another replica, or held (its registration is invalid now): its
            # grants stay. Left the manager: they go (docs/manager.md).
            member = m.members.get(conn)
            if member is not None and not member.observed:
                self._conns.add(conn)  # its profiles waited for it: place them once more
                m.place_soon()
            await m.members.remove(conn, left=left)
        if not m.members.starting:  # also when the last member starting was removed
            m.tokens.release()
            m.grants.release()
        if inventories_changed:  # one went, or changed its role: every member's grants
            m.grants.touch_all()
        if full:
            m.members.sweep(
                {
                    member_key(reg.connection): reg.connection
                    for name, reg in state.registrations.items()
                    if state.owns(name) and not reg.not_ready and not state.inventories_of(name)
                }
            )
        await kube.gather_bounded(
            [functools.partial(self._release, key, *step.dropped[key]) for key in moved],
            m.config.workers * 2,
        )
        cpu = time.thread_time()
        # New entries, and those whose registration or inventory changed; the others are
        # queued by their own events (member observations, profile updates).
        for key in step.changed:
            m.queue.add(key)
        spent += time.thread_time() - cpu
        m.metrics.placement_seconds.labels("full" if full else "incremental").observe(spent)

    def _member_id_of(self, name: str) -> str | None:
        """The member id registration ``name`` reaches, as far as this replica knows."""
        m = self.manager
        if self.state.owns(name):
            conn = self.state.connection_of(name)
            member = m.members.get(conn) if conn is not None else None
            return member.observation.member_id if member is not None else None
        return member_id_elsewhere(m.profiles.by_index(PROFILES_BY_NAME, name))

    def _holders(self, namespace: str, member_id: str) -> list[str]:
        """Names of the profiles in inventory ``namespace`` that stand for ``member_id``.

        Those that carry it (their member-id label); when none does yet, those of the
        registrations reaching it that exist in the inventory at all: a profile whose status
        write is still on its way (the cache has not seen its label) stands for the member
        before a registration that has no profile there, so the choice does not flip when
        that label arrives.
        """
        profiles = self.manager.profiles
        found = profiles.by_index(PROFILES_BY_MEMBER_ID, f"{namespace}/{member_id}")
        if found:
            return [str(objects.meta(p).get("name")) for p in found]
        return [
            name
            for name in self.state.reaching(member_id)
            if any(
                objects.meta(p).get("namespace") == namespace
                for p in profiles.by_index(PROFILES_BY_NAME, name)
            )
        ]

    def _pending(self, name: str) -> bool:
        """True while this replica's member of ``name`` has not given a first verdict."""
        conn = self.state.connection_of(name) if self.state.owns(name) else None
        member = self.manager.members.get(conn) if conn is not None else None
        return member is not None and not member.observed

    def _existing(self, name: str) -> list[ProfileKey]:
        """This replica's profiles of registration ``name`` in the hub cache."""
        if not self._mine(name):
            return []
        found = self.manager.profiles.by_index(PROFILES_BY_NAME, name)
        return [ProfileKey(str(objects.meta(p).get("namespace")), name) for p in found]

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
        member = m.members.get(member_key(reg.connection))
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
        if was is not None:  # its member may need one inventory less: its grants follow
            m.grants.touch(member_key(was[0].connection))

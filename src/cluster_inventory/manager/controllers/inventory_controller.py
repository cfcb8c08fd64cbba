"""The inventory controller: which profiles exist in which inventory, which members are connected.

A pass reads the registrations (the source), the inventories (hub Namespaces) and the
profiles this manager owns (the hub cache), decides the desired profiles
(:mod:`~cluster_inventory.manager.rules.inventory`, pure), creates and deletes profiles of
this manager (through the one profile writer), and starts or stops member connections in the
:class:`~cluster_inventory.manager.members.pool.MemberPool`. Every member any inventory wants
is connected and probed once before its profiles are made, so that registrations reaching one
member are known as such from the first time. Sharded, it places only the members this
replica owns and gives up (one write each) the profiles that moved to another replica
(``docs/scale.md``).

A pass is incremental (:mod:`~cluster_inventory.manager.rules.inventory_state`): the events
that queue it say what they touched (a registration, a member's first verdict or member id, a
profile), and a pass places only those registrations and the ones sharing a member id with
them. A change of the
inventories, of the replicas, of a source's health, or a pass that failed, makes the next pass
full. A cold start of N members so costs O(N) work here, not O(N) per batch of members.

What a pass decided for the other controllers is sent on its channels: the profiles it placed
anew (:attr:`InventoryController.placed`: their status follows), those it deleted
(:attr:`InventoryController.deleted`: their token and grants follow) and a change of the
inventories (:attr:`InventoryController.inventories_changed`: every member's grants).
Its work-queue key, :data:`PLACEMENT`, and its controller's name,
``clustermanager-placement``, are the names it had as the placement (metrics are API).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import LABEL_INVENTORY_MEMBER_ID
from cluster_inventory.controller import Channel, Controller, Result
from cluster_inventory.kube.informer import ADDED, DELETED, MODIFIED
from cluster_inventory.manager.controllers.findings import ManagerFindings
from cluster_inventory.manager.controllers.hub import (
    PROFILES_BY_MEMBER_ID,
    PROFILES_BY_NAME,
    HubView,
)
from cluster_inventory.manager.controllers.profile_writer import ProfileWriter
from cluster_inventory.manager.controllers.targets import ProfileTargets
from cluster_inventory.manager.members.pool import MemberPool
from cluster_inventory.manager.rules.fence import member_id_elsewhere
from cluster_inventory.manager.rules.inventory import (
    Inventory,
    ProfileKey,
    fallback_member_id,
    held_members,
    inventories,
)
from cluster_inventory.manager.rules.inventory_state import DeletedProfile, InventoryState
from cluster_inventory.manager.rules.member_keys import MemberKey, member_key
from cluster_inventory.manager.rules.registration import Registration
from cluster_inventory.manager.rules.status import Observation, seed_observation
from cluster_inventory.manager.sources.source import RegistrationSource

__all__ = ["NAME", "PLACEMENT", "InventoryController"]

_log = logging.getLogger("cluster_inventory.manager")
#: The controller's name (its work queue and metrics).
NAME = "clustermanager-placement"
#: The work-queue key of a pass (there is one: every pass places what changed).
PLACEMENT = "placement"
#: Seconds between passes while members are still starting.
_PASS_BATCH = 1.0
#: Uids of deleted profiles remembered (the cache sees a delete within seconds; these are
#: the last N deletes, far more than a pass makes in that time).
_DELETED_UIDS_KEPT = 4096


class InventoryController:
    """Reconciles the :data:`PLACEMENT` key: the profiles of every inventory, and the members.

    Args:
        hub: The hub view (client, caches, settings, shard membership and fence).
        source: The registration source.
        state: The desired profiles, kept up to date name by name (the status and token
            controllers read it through :class:`~.targets.ProfileTargets`).
        members: The member pool (members started and stopped here).
        writer: The one profile writer.
        targets: Where profiles another cluster manager owns are noted (``conflicts``).
        findings: What the manager tells people (Events, logs, gauges).

    Attributes:
        controller: The controller running :meth:`reconcile` (one worker), over the hub's
            Namespaces and this manager's profiles.
        placed: Sends each profile a pass made desired anew, or whose registration or
            inventory changed.
        deleted: Sends each profile a pass deleted.
        inventories_changed: Sends None when a pass found the inventories changed.
    """

    def __init__(
        self,
        hub: HubView,
        source: RegistrationSource,
        state: InventoryState,
        members: MemberPool,
        writer: ProfileWriter,
        targets: ProfileTargets,
        findings: ManagerFindings,
    ) -> None:
        self.hub = hub
        self.source = source
        self.state = state
        self.members = members
        self.writer = writer
        self.targets = targets
        self.findings = findings
        self.placed: Channel[ProfileKey] = Channel("profile placed")
        self.deleted: Channel[DeletedProfile] = Channel("profile deleted")
        self.inventories_changed: Channel[None] = Channel("inventories changed")
        self._full = True
        self._source = True
        self._failures: list[str] = []
        self._names: set[str] = set()
        self._conns: set[MemberKey] = set()
        #: (member id, observed) of each member connection as a pass last heard of it.
        self._member_seen: dict[MemberKey, tuple[str | None, bool]] = {}
        #: Uids of the profiles this controller deleted, the newest last (``_deleted_here``).
        self._deleted_uids: dict[str, None] = {}
        self.controller: Controller[str] = (
            hub.controller(NAME, self.reconcile)
            .watch(
                hub.namespaces,
                lambda *event: [PLACEMENT] if self.touch_namespace(*event) else [],
            )
            .watch(hub.profiles, self._profile_event)
        )

    # -- what the events touched ---------------------------------------------------------
    def touch_all(self) -> None:
        """The next pass is full (inventories or replicas changed); queue it."""
        self._full = True
        self.controller.queue.add(PLACEMENT)

    def touch_source(self) -> None:
        """The next pass reads the registration source again (and places what changed)."""
        self._source = True
        self.controller.queue.add(PLACEMENT)

    def member_changed(self, conn: MemberKey) -> None:
        """A member's observation changed: place its registrations if what a pass sees did.

        A pass dedups members by their id, and waits for a member's first verdict. A member
        calls before it marks its first verdict, so a change of a member not yet observed
        is placed too (a pass runs later than the mark).
        """
        member = self.members.get(conn)
        seen = (member.observation.member_id, member.observed) if member else (None, False)
        if self._member_seen.get(conn) != seen or not seen[1]:
            self._member_seen[conn] = seen
            self._conns.add(conn)
            self.place_soon()

    def member_started(self, conn: MemberKey) -> None:
        """A member started: its profiles can be placed now (batched while many start)."""
        self._conns.add(conn)
        self.place_soon()

    def touch_namespace(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> bool:
        """Note a Namespace event; True if it changed an inventory (the next pass is full)."""
        c = self.hub.config

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
        """Note a profile event; True if a pass has something to do about it.

        This replica's profile appearing where none is desired (a stray to delete) or
        disappearing where one is (to create again, or a held one gone); another replica's
        profile changing its member id (which may make one of ours a duplicate, or not).
        """
        meta = objects.meta(obj)
        key = ProfileKey(str(meta.get("namespace")), str(meta.get("name")))
        if self.hub.owns(key.name):
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

    def _profile_event(
        self, event: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[str]:
        if self.touch_profile(event, obj, old):
            self.place_soon()
        return []

    def place_soon(self) -> None:
        """Queue a pass: at once, or batched (one per second) while members start.

        Every member's first answer changes what a pass sees (its member id). A pass places
        only what changed since the last one, but each has its own cost (a reconcile, the
        reports): batching keeps their number low while thousands of members start.
        """
        delay = _PASS_BATCH if self.members.starting else 0
        self.controller.queue.add_after(PLACEMENT, delay)

    # -- the pass ------------------------------------------------------------------------
    async def reconcile(self, key: str) -> Result | None:
        """Create and delete profiles and start or stop member connections.

        Returns:
            None (a pass is event-driven).
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
        hub, state, config = self.hub, self.state, self.hub.config
        cpu = time.thread_time()
        inventories_changed = False
        if full or source:
            registrations, invalid = self.source.snapshot()
            failures = self.source.failures()
            full = full or failures != self._failures
            self._failures = failures
            self.findings.source_failures(failures)
            await self.findings.invalid_registrations(invalid)
            held = held_members(registrations, [error for _, error in invalid])
            if full:
                invs = inventories(
                    hub.namespaces.items(),
                    config.inventory_namespaces,
                    config.roles,
                    fixed_only=config.inventory_namespaces_only,
                )
                await self.findings.member_roles(invs.values(), hub.namespaces.get)
                inventories_changed = invs != state.inventories
                names |= state.reset(registrations, invs, held, hub.owns)
                names |= {key.split("/", 1)[1] for key in hub.profiles.keys()}  # strays too
            else:
                names |= state.set_registrations(registrations, held)
        for conn in conns:
            names |= state.names_of(conn)
        if hub.shard is not None:
            hub.shard.report_owned(state.owned)
        # Every member any inventory wants is connected and probed once before its profiles
        # are created or deleted, so that registrations reaching one member are known as such
        # the first time (otherwise each would get a profile, deleted again at the next
        # pass). Members start in the background, paced; each first probe queues a pass
        # again, so profiles appear as their members answer.
        candidates = state.candidates(names)
        needed = {member_key(reg.connection) for reg in candidates.values()}
        not_ready = {
            member_key(reg.connection): reg.not_ready
            for reg in candidates.values()
            if reg.not_ready
        }
        new = {conn for conn in needed if conn not in self.members}
        seeds: dict[MemberKey, Observation] = {}
        named: dict[MemberKey, str] = {}
        for key, reg in candidates.items():
            conn = member_key(reg.connection)
            if conn in new:
                named.setdefault(conn, reg.name)
            if conn in new and conn not in seeds and (seed := self._seed_for(key)) is not None:
                seeds[conn] = seed
        self.members.add(new, not_ready, seeds, named)
        step = state.place(
            names,
            member_id=self._member_id_of,
            pending=self._pending,
            existing=self._existing,
            started=self.members,
            holders=self._holders,
        )
        spent = time.thread_time() - cpu
        for dup in step.duplicates:
            await self.findings.duplicate(dup, state.registrations[dup.registration])
        cpu = time.thread_time()
        self.findings.held(sorted(key for keys in state.held_keys.values() for key in keys))
        deleted = set(step.delete)
        moved = [key for key in step.dropped if key not in deleted] if hub.shard else []
        spent += time.thread_time() - cpu
        await self._each(
            functools.partial(self._create_profile, key, *state.desired[key]) for key in step.create
        )
        await self._each(
            functools.partial(self._delete_profile, key, step.dropped.get(key))
            for key in step.delete
        )
        for conn, left in step.stop.items():
            # Moved to another replica, or held (its registration is invalid now): its
            # grants stay. Left the manager: they go (docs/manager.md).
            member = self.members.get(conn)
            if member is not None and not member.observed:
                self._conns.add(conn)  # its profiles waited for it: place them once more
                self.place_soon()
            await self.members.remove(conn, left=left)
        if inventories_changed:  # one went, or changed its role: every member's grants
            self.inventories_changed.send(None)
        if full:
            self.members.sweep(
                {
                    member_key(reg.connection): reg.connection
                    for name, reg in state.registrations.items()
                    if state.owns(name) and not reg.not_ready and not state.inventories_of(name)
                }
            )
        await self._each(
            functools.partial(self.writer.release, key, step.dropped[key][0]) for key in moved
        )
        cpu = time.thread_time()
        # New entries, and those whose registration or inventory changed; the others are
        # queued by their own events (member observations, profile updates).
        for key in step.changed:
            self.placed.send(key)
        spent += time.thread_time() - cpu
        hub.metrics.placement_seconds.labels("full" if full else "incremental").observe(spent)

    async def _each(self, writes: Iterable[Callable[[], Awaitable[None]]]) -> None:
        """Run ``writes`` (hub writes), twice as many at once as there are status workers."""
        await kube.gather_bounded(list(writes), self.hub.config.workers * 2)

    def _seed_for(self, key: ProfileKey) -> Observation | None:
        """The observation a new connection for ``key``'s member may start from, or None.

        From the profile's stored status
        (:func:`~cluster_inventory.manager.rules.status.seed_observation`): the last holder's
        verdict when another replica held it, this manager's own otherwise (a restart).
        """
        current = self.hub.profiles.get(str(key))
        if current is None or "status" not in current:
            return None
        member_id = objects.labels_of(current).get(LABEL_INVENTORY_MEMBER_ID)
        return seed_observation(current["status"], member_id)

    def _member_id_of(self, name: str) -> str | None:
        """The member id registration ``name`` reaches, as far as this replica knows."""
        if self.state.owns(name):
            conn = self.state.connection_of(name)
            member = self.members.get(conn) if conn is not None else None
            return member.observation.member_id if member is not None else None
        return member_id_elsewhere(self.hub.profiles.by_index(PROFILES_BY_NAME, name))

    def _holders(self, namespace: str, member_id: str) -> list[str]:
        """Names of the profiles in inventory ``namespace`` that stand for ``member_id``.

        Those that carry it (their member-id label); when none does yet, those of the
        registrations reaching it that exist in the inventory at all: a profile whose status
        write is still on its way (the cache has not seen its label) stands for the member
        before a registration that has no profile there, so the choice does not flip when
        that label arrives.
        """
        profiles = self.hub.profiles
        found = [
            p
            for p in profiles.by_index(PROFILES_BY_MEMBER_ID, f"{namespace}/{member_id}")
            if not self._deleted_here(p)
        ]
        if found:
            return [str(objects.meta(p).get("name")) for p in found]
        return [
            name
            for name in self.state.reaching(member_id)
            if any(
                objects.meta(p).get("namespace") == namespace and not self._deleted_here(p)
                for p in profiles.by_index(PROFILES_BY_NAME, name)
            )
        ]

    def _deleted_here(self, profile: dict[str, Any]) -> bool:
        """This controller deleted ``profile`` and the cache has not seen it go yet.

        A duplicate's profile, deleted by a pass, may have got its member-id label from a
        status write just before: read from the cache, it would make the next pass keep
        that registration instead, and delete the other one's profile (both reported as
        duplicates, each profile deleted in turn).
        """
        return str(objects.meta(profile).get("uid")) in self._deleted_uids

    def _pending(self, name: str) -> bool:
        """True while this replica's member of ``name`` has not given a first verdict."""
        conn = self.state.connection_of(name) if self.state.owns(name) else None
        member = self.members.get(conn) if conn is not None else None
        return member is not None and not member.observed

    def _existing(self, name: str) -> list[ProfileKey]:
        """This replica's profiles of registration ``name`` in the hub cache."""
        if not self.hub.owns(name):
            return []
        found = self.hub.profiles.by_index(PROFILES_BY_NAME, name)
        return [ProfileKey(str(objects.meta(p).get("namespace")), name) for p in found]

    def _member_id(self, reg: Registration) -> str:
        member = self.members.get(member_key(reg.connection))
        observed = member.observation.member_id if member else None
        return observed or fallback_member_id(self.hub.config.name, reg.name)

    async def _create_profile(self, key: ProfileKey, reg: Registration, inv: Inventory) -> None:
        conflicts = self.targets.conflicts
        found = await self.writer.create(key, reg, self._member_id(reg))
        if found is None:
            conflicts.discard(key)
            _log.info("created profile", extra={"object": str(key), "cluster": reg.name})
            return
        owner = (objects.spec(found).get("clusterManager") or {}).get("name")
        if owner != self.hub.config.name and key not in conflicts:
            conflicts.add(key)
            _log.warning(
                "profile exists and belongs to cluster manager %r; left untouched",
                owner,
                extra={"object": str(key), "cluster": reg.name},
            )

    async def _delete_profile(
        self, key: ProfileKey, was: tuple[Registration, Inventory] | None
    ) -> None:
        held = self.hub.profiles.get(str(key))
        if held is not None and (uid := objects.meta(held).get("uid")):
            self._deleted_uids[str(uid)] = None
            while len(self._deleted_uids) > _DELETED_UIDS_KEPT:  # uids are never reused
                self._deleted_uids.pop(next(iter(self._deleted_uids)))
        await self.writer.delete(key)
        _log.info("deleted profile", extra={"object": str(key)})
        self.deleted.send(DeletedProfile(key, was))

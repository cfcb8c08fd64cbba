"""The desired profiles of every inventory, kept up to date name by name. Pure, no I/O.

A full pass (:func:`.inventory.members_and_duplicates` and :func:`.inventory.plan` over
every registration) costs O(registrations x inventories), and a cold start of N members asks
for one after every batch of first member answers: O(N^2) over the start. A
:class:`InventoryState` keeps the last result and places again only the registrations an event
touched, together with the registrations sharing a member id with them (one member reached
through several registrations keeps one profile per inventory, so a change in such a *dedupe
group* can move the profile from one name to another). The caller says what an event touched
(:meth:`~InventoryState.set_registrations`, :meth:`~InventoryState.names_of`); a change of
the inventories or of this replica's share of the members calls
:meth:`~InventoryState.reset`, after which every name is placed again. Results equal the full
computation's (``tests/unit/manager/test_placement_state.py`` checks it on random sequences
of events).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

from cluster_inventory.manager.rules.inventory import DuplicateMember, Inventory, ProfileKey
from cluster_inventory.manager.rules.member_keys import MemberKey, member_key
from cluster_inventory.manager.rules.registration import Registration

__all__ = ["DeletedProfile", "InventoryState", "InventoryStep"]

Entry = tuple[Registration, Inventory]


@dataclass(frozen=True)
class DeletedProfile:
    """A profile of this manager that was deleted, and what it stood for.

    Attributes:
        key: The profile.
        entry: Its registration and inventory while it was desired; None for a stray (a
            profile no registration wanted).
    """

    key: ProfileKey
    entry: Entry | None


@dataclass(frozen=True, kw_only=True)
class InventoryStep:
    """What one pass decided for the names it placed.

    Attributes:
        create: Profiles to create, sorted.
        delete: Profiles of this manager to delete, sorted.
        dropped: Profiles desired before the pass and not after it, with what they were
            (their member left, moved to another replica, or its registration changed).
        changed: Desired profiles that are new, or whose registration or inventory changed.
        duplicates: Registrations of this replica left out of an inventory, sorted.
        stop: Member connections no registration of this replica needs any more, each with
            whether the member left the manager (True: nothing of it is held, and no replica
            needs it: the grants made on it go).
    """

    create: list[ProfileKey]
    delete: list[ProfileKey]
    dropped: dict[ProfileKey, Entry] = field(default_factory=dict)
    changed: list[ProfileKey] = field(default_factory=list)
    duplicates: list[DuplicateMember] = field(default_factory=list)
    stop: dict[MemberKey, bool] = field(default_factory=dict)


class InventoryState:
    """The desired profiles of one replica, and the indexes that place a name alone.

    Attributes:
        registrations: Every valid registration by name (this replica's or not).
        inventories: By namespace.
        held: Member names whose profiles are held (see :func:`.inventory.held_members`);
            None holds every deletion.
        desired: This replica's desired profiles (what :func:`.inventory.desired_profiles`
            gives over every registration with the member ids, kept for owned names).
        by_member: Desired profiles by member connection key.
        member_ids: Registration name -> member id, for the names some inventory selects.
        duplicates: Owned registration name -> the inventories it is left out of.
        held_keys: Profiles of this manager that only an invalid registration keeps.
    """

    def __init__(self) -> None:
        self.registrations: dict[str, Registration] = {}
        self.inventories: dict[str, Inventory] = {}
        self.held: frozenset[str] | None = frozenset()
        self.desired: dict[ProfileKey, Entry] = {}
        self.by_member: dict[MemberKey, set[ProfileKey]] = {}
        self.member_ids: dict[str, str] = {}
        self.duplicates: dict[str, list[DuplicateMember]] = {}
        self.held_keys: dict[str, set[ProfileKey]] = {}
        self._owns: Callable[[str], bool] = lambda _: True
        self._owned: set[str] = set()
        self._by_set: dict[str, list[Inventory]] = {}
        self._by_id: dict[str, set[str]] = {}
        self._by_conn: dict[MemberKey, set[str]] = {}
        self._conn: dict[str, MemberKey] = {}
        #: Name -> (member connection, desired keys) as last placed.
        self._placed: dict[str, tuple[MemberKey, set[ProfileKey]]] = {}
        #: Connections a registration change left or joined since the last pass.
        self._touched: set[MemberKey] = set()

    # -- inputs --------------------------------------------------------------------------
    def reset(
        self,
        registrations: Mapping[str, Registration],
        inventories: Mapping[str, Inventory],
        held: frozenset[str] | None,
        owns: Callable[[str], bool],
    ) -> set[str]:
        """Take new inventories, registrations and shard share; every name is to be placed.

        Returns:
            Every name known before or now (the caller adds the names of the profiles it
            has, so that strays are deleted too).
        """
        before = set(self.registrations) | set(self._placed) | set(self.held_keys)
        self._touched |= set(self._conn.values())
        self.inventories = dict(inventories)
        self._by_set = {}
        for inv in sorted(self.inventories.values(), key=lambda i: i.namespace):
            for clusterset in inv.clustersets:
                self._by_set.setdefault(clusterset, []).append(inv)
        self._owns = owns
        self._owned = set()
        self.registrations = {}
        self._by_conn, self._conn = {}, {}
        self.set_registrations(registrations, held)
        return before | set(self.registrations)

    def set_registrations(
        self, registrations: Mapping[str, Registration], held: frozenset[str] | None
    ) -> set[str]:
        """Take a new snapshot of the registrations; the names that changed, to be placed.

        A change of ``held`` between None and a set is a :meth:`reset` (every deletion was
        waiting, or now waits); between sets, the names that joined or left it changed.
        """
        changed = {
            name
            for name in self.registrations.keys() | registrations.keys()
            if self.registrations.get(name) is not registrations.get(name)
            and self.registrations.get(name) != registrations.get(name)
        }
        if (held is None) != (self.held is None):
            changed |= set(self.registrations) | set(registrations) | set(self.held_keys)
        elif held is not None and self.held is not None:
            changed |= held ^ self.held
        self.held = held
        for name in changed:
            old = self._conn.pop(name, None)
            if old is not None:
                self._touched.add(old)
                self._by_conn[old].discard(name)
                if not self._by_conn[old]:
                    del self._by_conn[old]
            self._owned.discard(name)
            reg = registrations.get(name)
            if reg is None:
                self.registrations.pop(name, None)
                continue
            self.registrations[name] = reg
            conn = self._conn[name] = member_key(reg.connection)
            self._by_conn.setdefault(conn, set()).add(name)
            self._touched.add(conn)
            if self._owns(name):
                self._owned.add(name)
        return changed

    @property
    def owned(self) -> int:
        """How many registrations this replica owns."""
        return len(self._owned)

    def owns(self, name: str) -> bool:
        """True if registration ``name`` exists and is this replica's."""
        return name in self._owned

    def names_of(self, conn: MemberKey) -> set[str]:
        """The registrations reaching a member through ``conn`` (a connection key)."""
        return set(self._by_conn.get(conn, ()))

    def connection_of(self, name: str) -> MemberKey | None:
        """The connection key of registration ``name``."""
        return self._conn.get(name)

    def inventories_of(self, name: str) -> list[Inventory]:
        """The inventories selecting registration ``name`` (by a shared cluster set)."""
        reg = self.registrations.get(name)
        if reg is None:
            return []
        found: dict[str, Inventory] = {}
        for clusterset in reg.clustersets:
            for inv in self._by_set.get(clusterset, ()):
                found[inv.namespace] = inv
        return list(found.values())

    def affects(self, key: ProfileKey, present: bool) -> bool:
        """True if this replica's profile ``key`` appearing (``present``) or going matters.

        One appearing where none is desired is a stray to delete (or to hold); one going
        where one is desired is to be created again, and a held one going is held no more.
        """
        if present:
            return key not in self.desired
        return key in self.desired or key in self.held_keys.get(key.name, ())

    def candidates(self, names: Iterable[str]) -> dict[ProfileKey, Registration]:
        """Profiles ``names`` of this replica may get, before any deduplication.

        Their members are connected before they are placed, so that registrations reaching
        one member are known as such the first time.
        """
        out: dict[ProfileKey, Registration] = {}
        for name in sorted(n for n in names if n in self._owned):
            for inv in self.inventories_of(name):
                out[ProfileKey(inv.namespace, name)] = self.registrations[name]
        return out

    # -- the pass ------------------------------------------------------------------------
    def place(
        self,
        names: Iterable[str],
        *,
        member_id: Callable[[str], str | None],
        pending: Callable[[str], bool],
        existing: Callable[[str], Collection[ProfileKey]],
        started: Collection[MemberKey] = (),
        holders: Callable[[str, str], Collection[str]] = lambda namespace, member_id: (),
    ) -> InventoryStep:
        """Place ``names`` again, with their dedupe groups; what to create, delete, stop.

        Args:
            names: The names an event touched (:meth:`set_registrations`, :meth:`names_of`,
                a profile's name, or all after :meth:`reset`).
            member_id: The member id a registration reaches, if known (this replica's: its
                member connection's; another's: read from that replica's profiles).
            pending: True while this replica's member connection for a name has not given
                a first verdict: its profiles are neither created nor deleted yet.
            existing: This replica's profiles of a name as the hub holds them.
            started: Member connections running now; those of ``names`` (and those a
                registration change left) that no owned registration needs are stopped.
            holders: ``(inventory, member id) -> names`` of the profiles there that carry
                that member id now. Of registrations reaching one member, one whose profile
                stands for it already keeps it (first by name among such); only when none
                does is the first by name kept: a newcomer claiming a member id never takes
                an existing profile over.
        """
        names = set(names)
        for name in list(names):
            mid = member_id(name) if self.inventories_of(name) else None
            old = self.member_ids.get(name)
            names |= self._by_id.get(old, set()) if old else set()
            if mid != old:
                self._move_id(name, old, mid)
            names |= self._by_id.get(mid, set()) if mid else set()
        touched = self._touched | {c for n in names if (c := self._conn.get(n)) is not None}
        touched |= {c for n in names if n in self._placed for c in (self._placed[n][0],)}
        previous = {c: set(self.by_member.get(c, ())) for c in touched}
        self._touched = set()
        create: list[ProfileKey] = []
        delete: list[ProfileKey] = []
        dropped: dict[ProfileKey, Entry] = {}
        changed: list[ProfileKey] = []
        duplicates: list[DuplicateMember] = []
        frozen = {ns for ns, inv in self.inventories.items() if inv.terminating}
        for name in names:
            entries, dups = self._desired_of(name, holders)
            duplicates += dups
            self.duplicates.pop(name, None)
            if dups:
                self.duplicates[name] = dups
            was_conn, was = self._placed.pop(name, (None, set()))
            if was_conn is not None:
                self.by_member[was_conn] -= was
                if not self.by_member[was_conn]:
                    del self.by_member[was_conn]
            for key in was - entries.keys():
                dropped[key] = self.desired.pop(key)
            for key, entry in entries.items():
                if self.desired.get(key) != entry:
                    changed.append(key)
                self.desired[key] = entry
            if entries:
                conn = self._conn[name]
                self._placed[name] = (conn, set(entries))
                self.by_member.setdefault(conn, set()).update(entries)
            have = set(existing(name))
            waiting = pending(name)
            create += [
                k for k in entries.keys() - have if k.namespace not in frozen and not waiting
            ]
            extra = [k for k in have - entries.keys() if k.namespace not in frozen]
            self.held_keys.pop(name, None)
            if extra and (self.held is None or name in self.held):
                self.held_keys[name] = set(extra)
            elif not waiting:
                delete += extra
        stop = {}
        for conn in touched:
            if conn in started and not self._needed(conn):
                kept = self.held is None or any(k.name in self.held for k in previous[conn])
                stop[conn] = not kept and not self._wanted(conn)
        return InventoryStep(
            create=sorted(create),
            delete=sorted(delete),
            dropped=dropped,
            changed=changed,
            duplicates=sorted(duplicates),
            stop=stop,
        )

    def reaching(self, member_id: str) -> set[str]:
        """Names of the registrations known to reach ``member_id``."""
        return set(self._by_id.get(member_id, ()))

    def _desired_of(
        self, name: str, holders: Callable[[str, str], Collection[str]]
    ) -> tuple[dict[ProfileKey, Entry], list[DuplicateMember]]:
        """The profiles of ``name`` after deduplication, and where it is left out."""
        if name not in self._owned:
            return {}, []
        reg = self.registrations[name]
        mid = self.member_ids.get(name)
        group = sorted(self._by_id.get(mid, ())) if mid else []
        entries: dict[ProfileKey, Entry] = {}
        dups: list[DuplicateMember] = []
        for inv in self.inventories_of(name):
            eligible = [
                s for s in group if inv.clustersets.intersection(self.registrations[s].clustersets)
            ]
            held = set(holders(inv.namespace, mid)) if mid and len(eligible) > 1 else set()
            kept = next((s for s in eligible if s in held), eligible[0] if eligible else name)
            if kept == name or mid is None:
                entries[ProfileKey(inv.namespace, name)] = (reg, inv)
            else:
                dups.append(
                    DuplicateMember(
                        inventory=inv.namespace, registration=name, kept=kept, member_id=mid
                    )
                )
        return entries, dups

    def _move_id(self, name: str, old: str | None, new: str | None) -> None:
        if old:
            self._by_id[old].discard(name)
            if not self._by_id[old]:
                del self._by_id[old]
        if new:
            self.member_ids[name] = new
            self._by_id.setdefault(new, set()).add(name)
        else:
            self.member_ids.pop(name, None)

    def _needed(self, conn: MemberKey) -> bool:
        """Some registration of this replica selected by an inventory uses ``conn``."""
        return any(n in self._owned and self.inventories_of(n) for n in self._by_conn.get(conn, ()))

    def _wanted(self, conn: MemberKey) -> bool:
        """Some registration selected by an inventory uses ``conn``, whichever replica's."""
        return any(self.inventories_of(n) for n in self._by_conn.get(conn, ()))

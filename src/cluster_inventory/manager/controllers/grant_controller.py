"""The grants controller: what the manager holds on each member follows what is needed.

Desired state, not events (controller-runtime's level-based reconcile): for a member
connection, what the manager holds there (its labelled ServiceAccounts and
ClusterRoleBindings, read with a LIST per kind on each connection) is compared with what the
member's inventories need now, and the rest is removed (:meth:`.accounts.ConsumerAccounts.sync`).
So a deleted inventory namespace, a refused role, a crash, a missed event or a restart while
a member was down leave nothing once the member is reached again (``docs/manager.md``). A
member connection is reconciled when it starts (also a takeover by a shard), when it is usable
again after a failure (then it is listed again), and after an inventory change; never at rest
(``docs/scale.md``).

What a member needs (:meth:`GrantController.needs`) is read from the placement state: every
inventory granted (:attr:`.placement.Inventory.granted`) that selects a registration reaching
the member, through this connection or through any other with the same member id (another
registration, another replica's), and the inventories of profiles held for an invalid
registration of that member. Nothing is removed while an invalid registration names no member.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import LABEL_INVENTORY_MEMBER_ID
from cluster_inventory.manager.members.pool import MemberPool
from cluster_inventory.manager.rules.grants import Needs
from cluster_inventory.manager.rules.inventory import Inventory, granted_roles
from cluster_inventory.manager.rules.inventory_state import PlacementState
from cluster_inventory.manager.rules.member_keys import MemberKey
from cluster_inventory.manager.rules.status import Observation

__all__ = ["GrantController"]

_log = logging.getLogger("cluster_inventory.manager")


class GrantController:
    """Reconciles the grants a cluster manager holds on each member, by connection key.

    Args:
        state: The placement state (registrations, inventories, who reaches which member).
        members: The member pool (each member's accounts).
        profiles: The hub cache of this manager's profiles (member ids of held profiles).
        queue: Adds a connection key to this controller's work queue.
    """

    def __init__(
        self,
        *,
        state: PlacementState,
        members: MemberPool,
        profiles: kube.NamespacedInformer,
        queue: Callable[[MemberKey], None],
    ) -> None:
        self.state = state
        self.members = members
        self.profiles = profiles
        self._queue = queue
        #: Whether each connection's member was usable (joined, healthy) when last heard of.
        self._usable: dict[MemberKey, bool] = {}
        #: Connections waiting until no member is starting (a cold start, a takeover).
        self._parked: set[MemberKey] = set()

    # -- what a member needs -------------------------------------------------------------
    def needs(self, conn: MemberKey, member_id: str | None) -> Needs:
        """What the member reached through ``conn`` (member id ``member_id``) needs now.

        Args:
            conn: A connection key.
            member_id: The member's id (``kube-system`` UID), None if not known yet.

        Returns:
            The granted inventories of every registration reaching it and their roles;
            ``complete`` is False while an invalid registration names no member.
        """
        state = self.state
        names = state.names_of(conn) | (state.reaching(member_id) if member_id else set())
        found: dict[str, Inventory] = {}
        for name in names:
            for inv in state.inventories_of(name):
                found[inv.namespace] = inv
        if member_id:
            for keys in state.held_keys.values():
                for key in keys:
                    profile = self.profiles.get(str(key))
                    held_id = objects.labels_of(profile or {}).get(LABEL_INVENTORY_MEMBER_ID)
                    if held_id == member_id and key.namespace in state.inventories:
                        found[key.namespace] = state.inventories[key.namespace]
        return Needs(roles=granted_roles(found.values()), complete=state.held is not None)

    # -- what queues a member ------------------------------------------------------------
    def member_changed(self, conn: MemberKey) -> None:
        """A member's observation changed: usable again after a failure, it is listed anew.

        A reconnect (the member answered again, its credential works again) may follow
        anything done on the member meanwhile, by us before a crash or by someone else.
        """
        member = self.members.get(conn)
        usable = member is not None and _usable(member.observation)
        before = self._usable.get(conn)
        self._usable[conn] = usable
        if usable and before is False and member is not None and member.accounts is not None:
            member.accounts.relist()
            self._queue(conn)

    def started(self, conn: MemberKey) -> None:
        """A member connection started (also a takeover): reconcile it (a first LIST)."""
        member = self.members.get(conn)
        self._usable[conn] = member is not None and _usable(member.observation)
        self._queue(conn)

    def touch_all(self) -> None:
        """Inventories changed: reconcile every member connection (no LIST: held is known)."""
        self._usable = {conn: seen for conn, seen in self._usable.items() if conn in self.members}
        for conn in self.members:
            self._queue(conn)

    def touch(self, conn: MemberKey) -> None:
        """A member's inventories may have changed (a profile of it was dropped)."""
        self._queue(conn)

    def release(self) -> None:
        """Queue the connections parked while members were starting (none start any more)."""
        parked, self._parked = self._parked, set()
        for conn in parked:
            self._queue(conn)

    # -- the reconcile -------------------------------------------------------------------
    async def reconcile(self, conn: MemberKey) -> float | None:
        """Remove what the member of ``conn`` holds of this manager and does not need.

        A member not usable now (not joined, not healthy) is left until it is again (then it
        is queued with a fresh LIST); while members start it waits (the LISTs of thousands
        of members would slow their first probes), and is queued once none does.

        Returns:
            None (event-driven).

        Raises:
            KubeError: The member cannot be read, or refused a delete (retried with backoff).
        """
        member = self.members.get(conn)
        if member is None or member.accounts is None or member.client is None or member.closed:
            return None
        if not _usable(member.observation):
            return None
        if self.members.starting:
            self._parked.add(conn)
            return None
        try:
            removed = await member.accounts.sync()
        except (kube.KubeError, RuntimeError):
            if member.closed:  # it left this replica while we worked (its client is closed)
                return None
            raise
        if removed:
            _log.info(
                "removed %d grant object(s) nothing needs", removed, extra={"cluster": member.label}
            )
        return None


def _usable(observation: Observation) -> bool:
    """True if the member's credential works and its API server answers (grants can change)."""
    return observation.joined.status == "True" and observation.healthy.status == "True"

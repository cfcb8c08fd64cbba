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

What a member needs is :func:`~cluster_inventory.manager.rules.grants.member_needs` (pure, over the
inventory state); nothing is removed while an invalid registration names no member. The member
pool's events (a start, a change, none starting any more) and the inventory controller's (a profile
deleted, the inventories changed) queue the members they touch: the cluster manager subscribes
:meth:`GrantController.member_changed` and the others to them.
"""

from __future__ import annotations

import logging

from cluster_inventory import kube
from cluster_inventory.controller import Controller, Result
from cluster_inventory.manager.controllers.hub import HubView
from cluster_inventory.manager.members.pool import MemberPool
from cluster_inventory.manager.rules.inventory_state import DeletedProfile
from cluster_inventory.manager.rules.member_keys import MemberKey, member_key, member_label
from cluster_inventory.manager.rules.status import Observation

__all__ = ["NAME", "GrantController"]

_log = logging.getLogger("cluster_inventory.manager")
#: The controller's name (its work queue and metrics).
NAME = "clustermanager-grants"


class GrantController:
    """Reconciles the grants a cluster manager holds on each member, by member key.

    Args:
        hub: The hub view (settings, metrics).
        members: The member pool (each member's accounts).

    Attributes:
        controller: The controller running :meth:`reconcile` (a quarter as many workers as
            the status controller: grants are few member requests, and only on a change).
    """

    def __init__(self, hub: HubView, members: MemberPool) -> None:
        self.members = members
        self.controller: Controller[MemberKey] = hub.controller(
            NAME,
            self.reconcile,
            workers=max(1, hub.config.workers // 4),
            describe=lambda conn: {"cluster": member_label(conn)},
        )
        self._queue = self.controller.queue.add
        #: Whether each connection's member was usable (joined, healthy) when last heard of.
        self._usable: dict[MemberKey, bool] = {}
        #: Connections waiting until no member is starting (a cold start, a takeover).
        self._parked: set[MemberKey] = set()

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

    def profile_deleted(self, gone: DeletedProfile) -> None:
        """A profile was deleted: its member may need one inventory less."""
        if gone.entry is not None:
            self._queue(member_key(gone.entry[0].connection))

    def release(self) -> None:
        """Queue the connections parked while members were starting (none start any more)."""
        parked, self._parked = self._parked, set()
        for conn in parked:
            self._queue(conn)

    # -- the reconcile -------------------------------------------------------------------
    async def reconcile(self, conn: MemberKey) -> Result | None:
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

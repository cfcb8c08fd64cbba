"""The status controller: one profile's labels and status, written only when they change.

A reconcile of a profile key reads what the key stands for (:mod:`.targets`: the stored
profile in the hub cache, its member's observation in the member pool), builds the status
(:func:`~cluster_inventory.manager.rules.status.build_status`, pure) and writes labels and
status through the one profile writer (:mod:`.profile_writer`) when they differ from what is
stored (KEP-4322: fewer than one write per 30 s per profile; at rest, none). Sharded, every
write is fenced (``docs/scale.md``). Each transition of a condition a write makes
(:mod:`~cluster_inventory.manager.rules.transitions`) is an Event on the profile naming the
member, through the hub client's one recorder (``kube.events``: client-go's aggregation and
spam filter), written only by the replica whose write made it. A reconcile of a joined
member's profile is sent on :attr:`StatusController.joined` (the token controller keeps its
Secret next).
"""

from __future__ import annotations

from typing import Any

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    LABEL_INVENTORY_MEMBER_ID,
    REPORTING_CONTROLLER_MANAGER,
)
from cluster_inventory.controller import Channel, Controller, Result
from cluster_inventory.kube.events import record_event
from cluster_inventory.kube.informer import DELETED
from cluster_inventory.manager.controllers.hub import PROFILES_BY_MEMBER_ID, HubView
from cluster_inventory.manager.controllers.profile_writer import FencedWrite, ProfileWriter
from cluster_inventory.manager.controllers.targets import ProfileTargets
from cluster_inventory.manager.members.agent_member import AgentMember
from cluster_inventory.manager.members.pool import Member
from cluster_inventory.manager.rules.inventory import ProfileKey, fallback_member_id
from cluster_inventory.manager.rules.member_keys import MemberKey
from cluster_inventory.manager.rules.registration import Registration
from cluster_inventory.manager.rules.status import access_provider, build_status
from cluster_inventory.manager.rules.transitions import condition_transitions

__all__ = ["NAME", "StatusController"]

#: The controller's name (its work queue and metrics).
NAME = "clustermanager"
#: Seconds before a profile whose member id another one carries is looked at again.
_CLAIMED_RETRY = 0.5
#: Seconds before a profile whose fenced write was refused is read again.
_FENCED_RETRY = 0.2


class StatusController:
    """Reconciles the labels and status of each profile this replica keeps, by profile key.

    Args:
        hub: The hub view (the profile cache, settings, clock, the fence once sharded).
        targets: What a profile key stands for.
        writer: The one profile writer.

    Attributes:
        controller: The controller running :meth:`reconcile` over the profile cache
            (``config.workers`` workers; the echo of our own write queues nothing).
        joined: Sends the key of each reconciled profile whose member has joined.
    """

    def __init__(self, hub: HubView, targets: ProfileTargets, writer: ProfileWriter) -> None:
        self.hub = hub
        self.targets = targets
        self.writer = writer
        self.joined: Channel[ProfileKey] = Channel("profile of a joined member reconciled")
        self.controller: Controller[ProfileKey] = hub.controller(
            NAME, self.reconcile, workers=hub.config.workers
        ).watch(hub.profiles, self.profile_keys)

    def __len__(self) -> int:
        """Profiles queued for a reconcile now (the token controller waits for none)."""
        return len(self.controller.queue)

    # -- what queues a profile -----------------------------------------------------------
    def profile_keys(
        self, event: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[ProfileKey]:
        """The key a profile event queues: a kept profile's, but not our own write's echo."""
        meta = objects.meta(obj)
        key = ProfileKey(str(meta.get("namespace")), str(meta.get("name")))
        if event == DELETED or key not in self.targets:
            return []
        # The echo of our own write carries nothing new; anything else is reconciled.
        return [] if self.writer.is_echo(key, meta.get("resourceVersion")) else [key]

    def member_changed(self, conn: MemberKey) -> None:
        """A member's observation changed: queue every profile of it."""
        for key in self.targets.state.by_member.get(conn, ()):
            self.controller.queue.add(key)

    def queue(self, key: ProfileKey) -> None:
        """Reconcile profile ``key`` (the inventory controller placed it anew)."""
        self.controller.queue.add(key)

    # -- the reconcile -------------------------------------------------------------------
    async def reconcile(self, key: ProfileKey) -> Result | None:
        """Apply one profile's labels and status if they changed; send it on :attr:`joined`.

        Returns:
            None, but a requeue while another replica still holds the profile, another
            profile carries its member id, or a fenced write was refused; a profile not
            created yet is queued by its ADDED event, a member not started yet by its first
            probe.

        Raises:
            KubeAPIError: A write to the hub failed (the key is retried).
        """
        target = self.targets.get(key)
        if target is None:
            return None
        reg, _, current, member = target
        if current is None or member is None or not member.observed:
            # Its creation (an ADDED event) or its member's first probe queues this key:
            # requeueing thousands of waiting keys every second cost a fifth of a replica.
            return None
        fence = self.hub.fence
        version: str | None = None  # sharded: every write is conditional on it (the fence)
        claim = False
        if fence is not None:
            holder, version = fence.holding(key, current)
            if fence.blocked_by(holder):
                # Its holder has not let it go yet (its view of the peers is behind ours);
                # its release is a profile update, which queues this key again.
                return Result(requeue_after=fence.membership.config.renew_interval)
            # Another replica's profile is cached trimmed (HubView._trim_profile): it holds
            # what a takeover keeps, so claiming it reads nothing more.
            claim = holder != fence.identity
        labels = objects.labels_of(current)
        member_id = member.observation.member_id or labels.get(LABEL_INVENTORY_MEMBER_ID)
        if member_id != labels.get(LABEL_INVENTORY_MEMBER_ID) and self._claimed(key, member_id):
            # Another profile of the inventory stands for that member (KEP-4322: one per
            # member id). The inventory controller keeps one and deletes the other; this one
            # takes the id (and a status from its member) only once it is the one left.
            return Result(requeue_after=_CLAIMED_RETRY)
        try:
            if (
                claim
                or labels.get(LABEL_INVENTORY_MEMBER_ID) != member_id
                or objects.spec(current).get("displayName") != reg.display_name
            ):
                label = member_id or fallback_member_id(self.hub.config.name, reg.name)
                version = await self.writer.apply_metadata(key, reg, label, current, version)
            await self._apply_status(key, reg, current, member, version)
        except FencedWrite:
            # Someone else wrote the profile since we read it (another replica took it, or
            # our cache is behind). Read again shortly; never overwrite.
            return Result(requeue_after=_FENCED_RETRY)
        return None

    def _claimed(self, key: ProfileKey, member_id: str | None) -> bool:
        """True if a profile of ``key``'s inventory other than ``key`` carries ``member_id``."""
        found = self.hub.profiles.by_index(PROFILES_BY_MEMBER_ID, f"{key.namespace}/{member_id}")
        return any(objects.meta(p).get("name") != key.name for p in found)

    async def _apply_status(
        self,
        key: ProfileKey,
        reg: Registration,
        current: dict[str, Any],
        member: Member,
        version: str | None,
    ) -> None:
        # An agent member is reached where its agent says (docs/agent.md), not by its key.
        reach = member.advertised if isinstance(member, AgentMember) else reg.connection
        provider = (
            access_provider(self.hub.config.access_provider, reach, key.name)
            if isinstance(reach, kube.ClusterConnection) and not reg.not_ready
            else None
        )
        obs = member.observation
        status = build_status(
            obs, provider, current.get("status"), self.hub.now(), source_properties=reg.properties
        )
        if await self.writer.apply_status(key, current, status, version):
            await self._report_transitions(key, reg, current, status)
        self.writer.count_health(key, obs.healthy.status)
        if obs.joined.status == "True":
            self.joined.send(key)

    async def _report_transitions(
        self, key: ProfileKey, reg: Registration, current: dict[str, Any], status: dict[str, Any]
    ) -> None:
        """An Event on profile ``key`` for each transition our write of ``status`` made.

        Best effort (``record_event`` never raises): the write is done, the Event tells it.
        """
        regarding = {
            "apiVersion": kube.CLUSTER_PROFILES.api_version,
            "kind": kube.CLUSTER_PROFILES.kind,
            "namespace": key.namespace,
            "name": key.name,
        }
        uid = objects.meta(current).get("uid")
        if uid:
            regarding["uid"] = str(uid)
        for change in condition_transitions(current.get("status"), status):
            await record_event(
                self.hub.client,
                regarding,
                reason=change.event_reason,
                note=change.note(reg.name),
                action="Observe",
                controller=REPORTING_CONTROLLER_MANAGER,
                instance=self.hub.identity,
                event_type=change.event_type,
                now=self.hub.now(),
            )

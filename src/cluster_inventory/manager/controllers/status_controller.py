"""The status controller: one profile's labels and status, written only when they change.

A reconcile of a profile key reads the stored profile (the hub cache) and its member's
observation (the :class:`~cluster_inventory.manager.pool.MemberPool`), builds the status
(:func:`~cluster_inventory.manager.status.build_status`, pure) and applies labels and status
with server-side apply when they differ from what is stored (KEP-4322: fewer than one write
per 30 s per profile; at rest, none). Sharded, every write is fenced (``docs/scale.md``).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING, Any

from cluster_inventory import kube
from cluster_inventory.api import check_storable, objects
from cluster_inventory.api.constants import (
    FIELD_MANAGER_CLUSTER_MANAGER,
    GROUP,
    LABEL_CLUSTER_MANAGER,
    LABEL_INVENTORY_MEMBER_ID,
    V1ALPHA1,
)
from cluster_inventory.manager.controllers.inventory_controller import PROFILES_BY_MEMBER_ID
from cluster_inventory.manager.members.agent_member import AgentMember
from cluster_inventory.manager.rules.inventory import Inventory, ProfileKey, fallback_member_id
from cluster_inventory.manager.rules.member_keys import member_key
from cluster_inventory.manager.rules.registration import Registration
from cluster_inventory.manager.rules.status import (
    Observation,
    access_provider,
    build_status,
    status_matches,
)

if TYPE_CHECKING:
    from cluster_inventory.manager.cluster_manager import ClusterManagerRunnable
    from cluster_inventory.manager.members.pool import Member

__all__ = ["StatusController"]

_log = logging.getLogger("cluster_inventory.manager")
#: Seconds before a profile whose member id another one carries is looked at again.
_CLAIMED_RETRY = 0.5


class StatusController:
    """Reconciles profile keys of one :class:`~cluster_inventory.manager.ClusterManagerRunnable`.

    Args:
        manager: The cluster manager whose cache, member pool, desired profiles and fence
            this controller reads (controller-runtime's reconcilers read the manager's cache
            and client the same way).
    """

    def __init__(self, manager: ClusterManagerRunnable) -> None:
        self.manager = manager
        #: The resourceVersion of our last status write per profile (its echo is skipped).
        self.written: dict[ProfileKey, str] = {}
        #: ControlPlaneHealthy of each kept profile, counted into the profiles gauge.
        self._health: dict[ProfileKey, str] = {}
        self._counts: Counter[tuple[str, str]] = Counter()

    def target(
        self, key: ProfileKey
    ) -> tuple[Registration, Inventory, dict[str, Any] | None, Member | None] | None:
        """What a reconcile of ``key`` works on, or None when the profile is not ours to keep.

        Its registration and inventory, the stored profile and the member connection (either
        of the last two None while it does not exist yet).
        """
        m = self.manager
        entry = m.desired.get(key)
        if entry is None or key in m.conflicts:
            return None
        reg, inv = entry
        return (
            reg,
            inv,
            m.profiles.get(str(key)),
            m.members.get(member_key(reg.connection)),
        )

    def profile_metadata(
        self, key: ProfileKey, reg: Registration, member_id: str, holder: str | None = None
    ) -> dict[str, Any]:
        """Labels and spec of a profile; sharded, the holder annotation too (ours by default).

        Every replica applies with the same field manager, so every apply carries every
        field (one left out would be removed).
        """
        m = self.manager
        body: dict[str, Any] = {
            "apiVersion": f"{GROUP}/{V1ALPHA1}",
            "kind": "ClusterProfile",
            "metadata": {
                "name": key.name,
                "namespace": key.namespace,
                "labels": {
                    LABEL_CLUSTER_MANAGER: m.config.name,
                    LABEL_INVENTORY_MEMBER_ID: member_id,
                },
            },
            "spec": {"displayName": reg.display_name, "clusterManager": {"name": m.config.name}},
        }
        if m.fence is not None:
            body["metadata"]["annotations"] = m.fence.annotations(holder)
        return body

    async def reconcile(self, key: ProfileKey) -> float | None:
        """Apply one profile's labels and status if they changed; queue its token Secret.

        Returns:
            None: a requeue delay is never needed (a profile not created yet is queued by
            its ADDED event, a member not started yet by its first probe).

        Raises:
            KubeAPIError: A write to the hub or the member failed (the key is retried).
        """
        m = self.manager
        target = self.target(key)
        if target is None:
            return None
        reg, _, current, member = target
        if current is None or member is None or not member.observed:
            # Its creation (an ADDED event) or its member's first probe queues this key:
            # requeueing thousands of waiting keys every second cost a fifth of a replica.
            return None
        version: str | None = None  # sharded: every write is conditional on it (the fence)
        claim = False
        if m.fence is not None:
            holder, version = m.fence.holding(key, current)
            if m.fence.blocked_by(holder):
                # Its holder has not let it go yet (its view of the peers is behind ours);
                # its release is a profile update, which queues this key again.
                return m.fence.membership.config.renew_interval
            # Another replica's profile is cached trimmed (ClusterManagerRunnable._trim_profile):
            # it holds what a takeover keeps, so claiming it reads nothing more.
            claim = holder != m.fence.identity
        obs = member.observation
        labels = objects.labels_of(current)
        spec = objects.spec(current)
        member_id = obs.member_id or labels.get(LABEL_INVENTORY_MEMBER_ID)
        if member_id != labels.get(LABEL_INVENTORY_MEMBER_ID) and self._claimed(key, member_id):
            # Another profile of the inventory stands for that member (KEP-4322: one per
            # member id). Placement keeps one and deletes the other; this one takes the id
            # (and a status from its member) only once it is the one left.
            return _CLAIMED_RETRY
        try:
            if (
                claim
                or labels.get(LABEL_INVENTORY_MEMBER_ID) != member_id
                or spec.get("displayName") != reg.display_name
            ):
                body = self.profile_metadata(
                    key, reg, member_id or fallback_member_id(m.config.name, reg.name)
                )
                if version is not None:
                    body["metadata"]["resourceVersion"] = version
                written = await kube.apply(
                    m.hub, kube.CLUSTER_PROFILES, body, field_manager=FIELD_MANAGER_CLUSTER_MANAGER
                )
                if m.fence is not None:
                    version = m.fence.wrote(key, current, written)
            # An agent member is reached where its agent says (docs/agent.md), not by its key.
            reach = (
                member.advertised
                if isinstance(member, AgentMember)
                else reg.connection
                if isinstance(reg.connection, kube.ClusterConnection)
                else None
            )
            return await self._apply_status(key, reg, current, obs, version, reach)
        except kube.ConflictError:
            if version is None:
                raise
            # Fenced: someone else wrote the profile since we read it (another replica took
            # it, or our cache is behind). Read again shortly; never overwrite.
            m.metrics.fenced_writes.inc()
            return 0.2

    def _claimed(self, key: ProfileKey, member_id: str | None) -> bool:
        """True if a profile of ``key``'s inventory other than ``key`` carries ``member_id``."""
        found = self.manager.profiles.by_index(
            PROFILES_BY_MEMBER_ID, f"{key.namespace}/{member_id}"
        )
        return any(objects.meta(p).get("name") != key.name for p in found)

    async def _apply_status(
        self,
        key: ProfileKey,
        reg: Registration,
        current: dict[str, Any],
        obs: Observation,
        version: str | None,
        reach: kube.ClusterConnection | None,
    ) -> float | None:
        m = self.manager
        provider = (
            None
            if reg.not_ready or reach is None
            else access_provider(m.config.access_provider, reach, key.name)
        )
        status = build_status(
            obs,
            provider,
            current.get("status"),
            m.now(),
            source_properties=reg.properties,
        )
        if not status_matches(status, current.get("status")):
            check_storable({"metadata": objects.meta(current), "status": status})
            meta: dict[str, Any] = {"name": key.name, "namespace": key.namespace}
            if version is not None:
                meta["resourceVersion"] = version
            written = await kube.apply(
                m.hub,
                kube.CLUSTER_PROFILES,
                {
                    "apiVersion": f"{GROUP}/{V1ALPHA1}",
                    "kind": "ClusterProfile",
                    "metadata": meta,
                    "status": status,
                },
                field_manager=FIELD_MANAGER_CLUSTER_MANAGER,
                subresource="status",
                # One member's change is one such write per inventory, all on the hub: no
                # second (strict) decoding of a body built from a dict (see kube.apply).
                field_validation="Ignore",
            )
            self.written[key] = str(objects.meta(written).get("resourceVersion"))
            if m.fence is not None:
                m.fence.wrote(key, current, written)
            m.metrics.status_writes.inc()
        self.count_health(key, obs.healthy.status)
        if obs.joined.status == "True":
            m.token_queue.add(key)
        return None

    def count_health(self, key: ProfileKey, status: str | None) -> None:
        """Record a profile's ControlPlaneHealthy (None: gone) in the profiles gauge."""
        before = self._health.get(key)
        if before == status:
            return
        # Counted as they change: a recount of every profile at each change was O(N) per
        # profile, 3.5% of a replica's CPU while it took 1,000 members over (py-spy).
        if before is not None:
            self._counts[key.namespace, before] -= 1
        if status is None:
            self._health.pop(key, None)
        else:
            self._health[key] = status
            self._counts[key.namespace, status] += 1
        gauge = self.manager.metrics.profiles
        for value in {"True", "False", "Unknown", before or "Unknown", status or "Unknown"}:
            gauge.labels(key.namespace, value).set(self._counts[key.namespace, value])

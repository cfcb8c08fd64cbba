"""The engagement half of the ClusterProfile provider: decisions over its caches, the reconcile.

A worker of :class:`~cluster_inventory.runtime.providers.ClusterProfileProvider` reconciles one
profile key: it reads the cached profile (decoded once, :meth:`ProfileEngagement._facts`),
decides readiness, access and which profile of a member holds it, asks
:func:`~cluster_inventory.runtime.engagement.plan_engagement` what to do and engages, rebuilds
or disengages through the fleet manager. The provider, which owns the informers, the queue
and the provider file, sets every attribute named here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from cluster_inventory import kube
from cluster_inventory.api.views import ProfileView
from cluster_inventory.controller import Result
from cluster_inventory.credentials import (
    AccessNotPublished,
    AccessResolutionError,
    ClusterAccess,
    ProviderConfig,
    resolve_access,
)
from cluster_inventory.kube.informer import Informer, lookup, object_key
from cluster_inventory.kube.workqueue import WorkQueue
from cluster_inventory.runtime.engagement import (
    Action,
    EngagementPolicy,
    control_plane_healthy,
    group_holder,
    plan_engagement,
)

if TYPE_CHECKING:
    from cluster_inventory.controller import ShardMembership
    from cluster_inventory.runtime.cluster import EngagedCluster
    from cluster_inventory.runtime.provider import ClusterAware

__all__ = ["MEMBER_INDEX", "ProfileEngagement", "Readiness"]

#: ``(profile as a decoded dict) -> bool``.
Readiness = Callable[[Mapping[str, Any]], bool]

#: The profiles' informer index by ``inventory-member-id``.
MEMBER_INDEX = "member-id"


class _Facts(NamedTuple):
    """What engagement reads of a profile: its member id and ``ControlPlaneHealthy``."""

    member_id: str | None
    healthy: bool


_log = logging.getLogger("cluster_inventory.runtime")


class ProfileEngagement:
    """Engage, rebuild or disengage the cluster of one profile (the provider's worker half)."""

    readiness: Readiness
    policy: EngagementPolicy
    queue: WorkQueue[str]
    placed: frozenset[str] | None
    shard: ShardMembership | None
    _profiles: kube.NamespacedInformer | None
    _providers: ProviderConfig
    _allow_insecure: bool
    _clock: Callable[[], float]
    _fleet: ClusterAware | None
    _engaged: dict[str, EngagedCluster]
    _engaging: set[str]
    _unhealthy_since: dict[str, float]
    _access_errors: dict[str, str]
    _decoded: dict[str, tuple[Mapping[str, Any], _Facts]]

    @property
    def informers(self) -> list[Informer]:
        """The ClusterProfile informers, one per watched namespace (none before start)."""
        return list(self._profiles.informers) if self._profiles is not None else []

    def _owned(self, key: str, profile: Mapping[str, Any]) -> bool:
        if self.shard is None:
            return True
        return self.shard.owns(self._facts(profile).member_id or key)

    def _facts(self, profile: Mapping[str, Any]) -> _Facts:
        """What engagement reads of ``profile``, decoded once per stored object.

        The informer hands the same dict to the member-id index, the event handler and the
        reconcile; the profile is decoded (:class:`ProfileView`) on the first of them and
        only the two facts are kept, for the object the informer stores now: keeping whole
        views for a fleet cost the process an extra full garbage collection per 1,000
        profiles (docs/benchmarks.md).
        """
        key = object_key(profile)
        cached = self._decoded.get(key)
        if cached is not None and cached[0] is profile:
            return cached[1]
        view = ProfileView.of(profile)
        facts = _Facts(view.member_id, view.healthy)
        if lookup(self.informers, key) is profile:
            self._decoded[key] = (profile, facts)
        return facts

    # -- decisions over the caches -----------------------------------------------------
    def _profile(self, key: str) -> dict[str, Any] | None:
        return lookup(self.informers, key)

    def _group(self, mid: str) -> set[str]:
        keys = {object_key(p) for inf in self.informers for p in inf.by_index(MEMBER_INDEX, mid)}
        keys.update(name for name, c in self._engaged.items() if c.member_id == mid)
        return keys

    def _ready(self, key: str, profile: Mapping[str, Any]) -> bool:
        if self.placed is not None and key not in self.placed:
            return False
        try:
            if self.readiness is control_plane_healthy:  # the default: from the decoded view
                return self._facts(profile).healthy
            return bool(self.readiness(profile))
        except Exception as exc:  # a faulty readiness function fails this profile only
            _log.error("readiness check raised: %s", exc, extra={"cluster": key}, exc_info=True)
            return False

    def _resolve(self, key: str, profile: Mapping[str, Any]) -> ClusterAccess | None:
        try:
            access = resolve_access(profile, self._providers, allow_insecure=self._allow_insecure)
        except AccessResolutionError as exc:
            message = str(exc)
            if self._access_errors.get(key) != message:  # log a changed reason once
                self._access_errors[key] = message
                # Not joined yet is a normal transient (the profile's update requeues it).
                level = logging.INFO if isinstance(exc, AccessNotPublished) else logging.WARNING
                _log.log(level, "cannot engage: %s", message, extra={"cluster": key})
            return None
        self._access_errors.pop(key, None)
        return access

    def _holder(self, key: str, mid: str | None) -> bool:
        if mid is None or not self.policy.dedupe_by_member_id:
            return True
        group = self._group(mid)
        eligible = [
            k
            for k in group
            if (p := self._profile(k)) is not None
            and self._ready(k, p)
            and self._resolve(k, p) is not None
        ]
        holder = group_holder(
            engaged=[k for k in group if k in self._engaged or k in self._engaging],
            eligible=eligible,
        )
        return holder in (None, key)

    # -- the engagement reconcile ------------------------------------------------------
    async def _reconcile_profile(self, key: str) -> Result | None:
        profile = self._profile(key)
        engaged = self._engaged.get(key)
        unplaced = self.placed is not None and key not in self.placed
        foreign = profile is not None and not self._owned(key, profile)
        if profile is None or unplaced or foreign:
            self._unhealthy_since.pop(key, None)
            self._access_errors.pop(key, None)
            if engaged is not None:
                reason = "deleted" if profile is None else "not-placed" if unplaced else "not-owned"
                await self._disengage(key, reason)
                self._requeue_siblings(engaged.member_id)
            self._report_owned()
            return None
        if engaged is not None:  # level-based: also an update seen while it was engaging
            engaged.profile = profile
        view = self._facts(profile)
        ready = self._ready(key, profile)
        if ready or engaged is None:
            self._unhealthy_since.pop(key, None)
        elif key not in self._unhealthy_since:
            self._unhealthy_since[key] = self._clock()
        access = self._resolve(key, profile) if ready else None
        plan = plan_engagement(
            exists=True,
            engaged=engaged is not None,
            ready=ready,
            holder=self._holder(key, view.member_id),
            access_ok=access is not None,
            same_access=engaged is not None and engaged.access == access,
            unhealthy_for=self._clock() - self._unhealthy_since.get(key, self._clock()),
            policy=self.policy,
        )
        if plan.action is Action.DISENGAGE or plan.action is Action.REBUILD:
            await self._disengage(key, plan.reason)
            self._unhealthy_since.pop(key, None)
            if plan.action is Action.DISENGAGE and engaged is not None:
                self._requeue_siblings(engaged.member_id)
        if (plan.action is Action.ENGAGE or plan.action is Action.REBUILD) and access is not None:
            await self._engage(key, profile, view.member_id, access)
        self._report_owned()
        if plan.recheck_after is not None:
            return Result(requeue_after=plan.recheck_after)
        return None

    def _report_owned(self) -> None:
        if self.shard is not None:
            self.shard.report_owned(len(self._engaged))

    def _requeue_siblings(self, mid: str | None) -> None:
        if mid is not None and self.policy.dedupe_by_member_id:
            for sibling in self._group(mid):
                self.queue.add(sibling)

    async def _engage(
        self, key: str, profile: dict[str, Any], mid: str | None, access: ClusterAccess
    ) -> None:
        assert self._fleet is not None
        # Marked before the first await: the member-id holder decision of a sibling that
        # runs meanwhile must see this engagement.
        self._engaging.add(key)
        try:
            self._engaged[key] = await self._fleet.engage(
                key, access, profile=profile, member_id=mid
            )
        finally:
            self._engaging.discard(key)

    async def _disengage(self, key: str, reason: str) -> None:
        assert self._fleet is not None
        if self._engaged.pop(key, None) is not None:
            await self._fleet.disengage(key, reason)

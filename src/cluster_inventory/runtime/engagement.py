"""Which ClusterProfiles to engage: pure decisions over plain data.

The ClusterProfile provider (:mod:`cluster_inventory.runtime.providers.clusterprofile`)
observes a profile, asks :func:`plan_engagement` what to do, and does it. Keeping the
decision pure lets every branch be tested without a server, and makes the rules easy to read
in one place:

- Readiness is judged on every change of the profile and re-checked periodically while it is
  false, also for a cluster already engaged (multicluster-runtime keeps an engaged cluster
  that turned unhealthy forever; here a policy decides).
- A cluster is rebuilt only when its access inputs change (the resolved
  :class:`~cluster_inventory.credentials.ClusterAccess`, which holds no credential), never for
  an unrelated status update such as a new property or version.
- With deduplication on, profiles sharing the ``multicluster.x-k8s.io/inventory-member-id``
  label (one member cluster listed in several inventories) engage once: the profile that
  already holds the member keeps it; otherwise the first eligible one by ``namespace/name``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cluster_inventory.api.views import ProfileView

__all__ = [
    "Action",
    "EngagementPlan",
    "EngagementPolicy",
    "control_plane_healthy",
    "group_holder",
    "member_id",
    "plan_engagement",
]


def control_plane_healthy(profile: Mapping[str, Any]) -> bool:
    """Default readiness: the profile's ``ControlPlaneHealthy`` condition is ``True``.

    This is the default of multicluster-runtime's cluster-inventory-api provider. Any
    callable taking the profile as a decoded dict and returning a bool can replace it. Read
    through :class:`~cluster_inventory.api.views.ProfileView`: a malformed profile is not
    ready.
    """
    return ProfileView.of(profile).healthy


def member_id(profile: Mapping[str, Any]) -> str | None:
    """The ``multicluster.x-k8s.io/inventory-member-id`` label, or None if absent or empty."""
    return ProfileView.of(profile).member_id


@dataclass(frozen=True, kw_only=True)
class EngagementPolicy:
    """When to engage and disengage.

    Attributes:
        disengage_unhealthy_after: Seconds an engaged cluster may stay not ready before it is
            disengaged; 0 disengages at once, None never (multicluster-runtime's behaviour).
        readiness_recheck: Seconds between re-checks of a profile that is not ready (10 s, as
            multicluster-runtime requeues), for readiness functions that look beyond the
            profile.
        dedupe_by_member_id: Engage profiles sharing an inventory member id only once.
        cache_sync_timeout: Seconds to wait for a cluster's caches to fill when engaging
            before giving up and retrying with backoff (multicluster-runtime's cluster helper
            uses 30 s; its inventory provider waits without bound).
    """

    disengage_unhealthy_after: float | None = 60.0
    readiness_recheck: float = 10.0
    dedupe_by_member_id: bool = False
    cache_sync_timeout: float = 30.0

    def __post_init__(self) -> None:
        if self.disengage_unhealthy_after is not None and self.disengage_unhealthy_after < 0:
            raise ValueError("disengage_unhealthy_after must be >= 0 seconds or None")
        if self.readiness_recheck <= 0:
            raise ValueError("readiness_recheck must be > 0 seconds")
        if self.cache_sync_timeout <= 0:
            raise ValueError("cache_sync_timeout must be > 0 seconds")


class Action(enum.StrEnum):
    """What to do with one profile."""

    ENGAGE = "engage"
    """Not engaged: build a client and caches, then engage."""
    KEEP = "keep"
    """Engaged: leave it as it is."""
    REBUILD = "rebuild"
    """Engaged with other access inputs: disengage, then engage with the new ones."""
    DISENGAGE = "disengage"
    """Engaged but must not be: stop its tasks and close its client."""
    IGNORE = "ignore"
    """Not engaged and must not be (yet)."""


@dataclass(frozen=True)
class EngagementPlan:
    """A decision: the action, why, and when to look again (seconds, or None)."""

    action: Action
    reason: str = ""
    recheck_after: float | None = None


def plan_engagement(
    *,
    exists: bool,
    engaged: bool,
    ready: bool,
    holder: bool = True,
    access_ok: bool = True,
    same_access: bool = False,
    unhealthy_for: float = 0.0,
    policy: EngagementPolicy,
) -> EngagementPlan:
    """Decide what to do with one profile.

    Args:
        exists: The profile is still on the hub.
        engaged: A cluster is engaged for it.
        ready: The readiness function said yes.
        holder: It holds its member id (always True without deduplication).
        access_ok: Its access settings resolve with this consumer's provider file.
        same_access: Engaged, and the resolved access equals the engaged cluster's.
        unhealthy_for: Seconds since an engaged cluster was first seen not ready.
        policy: The engagement policy.

    Returns:
        The plan. Reasons: ``deleted``, ``duplicate``, ``not-ready``, ``unhealthy``,
        ``no-access``, ``access-changed``.
    """
    if not exists:
        return EngagementPlan(Action.DISENGAGE if engaged else Action.IGNORE, "deleted")
    if not holder:
        return EngagementPlan(Action.DISENGAGE if engaged else Action.IGNORE, "duplicate")
    if not ready:
        if not engaged:
            return EngagementPlan(Action.IGNORE, "not-ready", policy.readiness_recheck)
        after = policy.disengage_unhealthy_after
        if after is None:
            return EngagementPlan(Action.KEEP, "unhealthy", policy.readiness_recheck)
        if unhealthy_for >= after:
            return EngagementPlan(Action.DISENGAGE, "unhealthy")
        return EngagementPlan(
            Action.KEEP, "unhealthy", min(after - unhealthy_for, policy.readiness_recheck)
        )
    if not access_ok:
        # A bad edit must not take down a working cluster: keep the access it was engaged with.
        return EngagementPlan(Action.KEEP if engaged else Action.IGNORE, "no-access")
    if engaged:
        return (
            EngagementPlan(Action.KEEP)
            if same_access
            else EngagementPlan(Action.REBUILD, "access-changed")
        )
    return EngagementPlan(Action.ENGAGE)


def group_holder(*, engaged: Iterable[str], eligible: Iterable[str]) -> str | None:
    """Which profile of one member-id group should be engaged.

    Args:
        engaged: Keys (``namespace/name``) of the group's profiles that are engaged now.
        eligible: Keys of the group's profiles that are ready and whose access resolves.

    Returns:
        The engaged one if any (stability: a holder keeps the member until its own plan
        disengages it), else the first eligible key in sorted order, else None.
    """
    holders = sorted(engaged)
    if holders:
        return holders[0]
    candidates = sorted(eligible)
    return candidates[0] if candidates else None

"""What a probe's outcome says about a member, and what it says only about us (pure).

A member probe that gets no answer in time, or a 429, is *busy*: the member may be
overloaded, or we may be (``docs/scale.md``, "Overload is not failure"). While we were
behind, it is no verdict at all; when the last verdict is old because of that, the status
keeps it and says why (:func:`behind_condition`).
"""

from __future__ import annotations

from cluster_inventory import kube
from cluster_inventory.manager.rules.status import ConditionState

__all__ = ["BEHIND_AFTER", "REASON_BEHIND", "behind_condition", "is_busy"]

#: Probe intervals without a verdict, because we were behind, before the status says so.
BEHIND_AFTER = 3
#: ``ControlPlaneHealthy`` reason while the last verdict stands because we are behind.
REASON_BEHIND = "ClusterManagerBehind"


def is_busy(exc: kube.KubeError) -> bool:
    """True if a request got no answer in time, or 429 (the server is up but overloaded).

    By type (:class:`~cluster_inventory.kube.RequestTimeoutError`), never by message: a
    reworded message once hid every timeout from this test, so no timeout was deferred
    while the replica was behind and a saturated 10,000-member run flipped thousands.
    """
    if isinstance(exc, kube.RequestTimeoutError):
        return True
    return isinstance(exc, kube.ServerUnavailableError) and exc.status == 429


def behind_condition(
    healthy: ConditionState, verdict_age: float | None, interval: float
) -> ConditionState | None:
    """The ControlPlaneHealthy to show after a deferred probe, or None to leave it as it is.

    Args:
        healthy: The condition as last decided.
        verdict_age: Seconds since the last probe that gave a verdict; None if none did (a
            member never probed has no verdict to keep: it stays unobserved).
        interval: The probe interval (seconds).

    Returns:
        The same status with reason :data:`REASON_BEHIND` once the verdict is older than
        :data:`BEHIND_AFTER` intervals (and does not say so yet); otherwise None.
    """
    if verdict_age is None or verdict_age <= BEHIND_AFTER * interval:
        return None
    if healthy.reason == REASON_BEHIND:
        return None
    return ConditionState(
        healthy.status,
        REASON_BEHIND,
        "the cluster manager is behind on its own work and could not probe this member in "
        f"time; the status is its last verdict (probed {verdict_age:.0f} s ago)",
    )

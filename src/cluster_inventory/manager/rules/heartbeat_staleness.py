"""When an agent member's heartbeat is stale, on this replica's clock (pure; times are given).

An agent renews its heartbeat Lease every ``leaseDurationSeconds``; the cluster manager calls
the heartbeat stale once ``limit = duration x agent_heartbeat_multiple`` seconds pass on its
own monotonic clock without a renewal seen (client-go's rule for Leases: the agent's clock is
never trusted; OCM's hub waits 5 lease durations). A replica that starts gives every agent
that much grace. The duration is the manager's too (:func:`counted_duration`): the Lease's
own only within the manager's bounds (``agent_lease_duration_min`` ..
``agent_lease_duration_max``), else the manager's ``agent_lease_duration``, so no agent
stays fresh longer than the manager allows by naming a long lease (the field holds up to
68 years of seconds).

Our own blindness is never evidence against an agent. While this replica cannot read the
Leases (its watch broken, relisting) it sees no renewal, and when the hub itself was down
the agents could not renew either. So:

- while the view is broken, no agent's silence grows: no heartbeat turns stale then (one
  already stale stays stale);
- when the view resumes after a gap of at least a lease duration, an agent that was fresh
  when the gap began gets the whole grace again from the resume, as at a replica's start
  (its renewal may be a retry behind the hub's return); after a shorter gap (a watch that
  reconnects at once) the gap alone does not count, so a watch that breaks often never keeps
  a dead agent fresh.

:class:`Heartbeats` holds when each renewal was seen and applies :func:`silence` and
:func:`after_gap`; the caller feeds it Lease events and the view's breaks and resumes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["Heartbeats", "after_gap", "counted_duration", "silence"]


def counted_duration(
    given: Any, *, configured: float, low: float, high: float
) -> tuple[float, bool]:
    """The lease duration an agent's grace is counted in, and whether the Lease's was ignored.

    Args:
        given: The Lease's ``leaseDurationSeconds`` (None when it names none).
        configured: The manager's ``agent_lease_duration`` (seconds).
        low: ``agent_lease_duration_min`` (seconds).
        high: ``agent_lease_duration_max`` (seconds).

    Returns:
        ``(given, False)`` when it is a number within ``low`` .. ``high``;
        ``(configured, False)`` when the Lease names none; ``(configured, True)`` otherwise.
    """
    if given is None:
        return configured, False
    try:
        value = float(given)
    except (TypeError, ValueError):
        return configured, True
    if math.isfinite(value) and low <= value <= high:
        return value, False
    return configured, True


def silence(seen_at: float, now: float, blind_since: float | None) -> float:
    """Seconds of an agent's silence that count against it: only those we could see.

    Args:
        seen_at: When its last renewal was seen (monotonic seconds; its grace's start).
        now: Monotonic seconds now.
        blind_since: When our view of the Leases broke, or None while it works.

    Returns:
        ``now - seen_at``, but stopped at ``blind_since`` while the view is broken; never
        negative.
    """
    end = now if blind_since is None else min(now, blind_since)
    return max(0.0, end - seen_at)


def after_gap(
    seen_at: float, *, blind_since: float, resumed_at: float, duration: float, limit: float
) -> float:
    """Where an agent's grace starts once our view of the Leases resumes after a gap.

    Args:
        seen_at: When its last renewal was seen (monotonic seconds).
        blind_since: When the view broke.
        resumed_at: When it works again.
        duration: The Lease's ``leaseDurationSeconds``.
        limit: Seconds of silence that make it stale.

    Returns:
        ``seen_at`` unchanged for an agent already stale when the gap began (our blindness
        did not cause that) or renewed since; ``resumed_at`` (the whole grace again) after
        a gap of at least ``duration``; ``seen_at`` moved by the gap after a shorter one.
    """
    if seen_at >= blind_since or blind_since - seen_at >= limit:
        return seen_at
    gap = max(0.0, resumed_at - blind_since)
    return resumed_at if gap >= duration else seen_at + gap


class Heartbeats:
    """When each agent's renewal was seen, and whether this replica could see at all.

    Args:
        multiple: ``agent_heartbeat_multiple`` (``limit = duration x multiple``).
        clock: Monotonic seconds.
    """

    def __init__(self, multiple: float, clock: Callable[[], float]) -> None:
        self.multiple = multiple
        self._clock = clock
        #: Lease name -> (renewTime as written, when our grace for it starts).
        self._seen: dict[str, tuple[Any, float]] = {}
        #: When our view of the Leases broke; None while it works.
        self.blind_since: float | None = None

    def renewed(self, name: str, renew_time: Any) -> None:
        """A Lease as cached now: a ``renewTime`` different from the last one is a renewal."""
        known = self._seen.get(name)
        if known is None or known[0] != renew_time:
            self._seen[name] = (renew_time, self._clock())

    def forget(self, name: str) -> None:
        """The Lease ``name`` was deleted."""
        self._seen.pop(name, None)

    def blinded(self) -> None:
        """Our view of the Leases broke (kept from the first break until it resumes)."""
        if self.blind_since is None:
            self.blind_since = self._clock()

    def resumed(self, durations: Callable[[str], float]) -> bool:
        """Our view works again: restart the grace as :func:`after_gap` says.

        Args:
            durations: A Lease's ``leaseDurationSeconds`` by name.

        Returns:
            True if the view had been broken (every agent should be looked at again).
        """
        blind_since, self.blind_since = self.blind_since, None
        if blind_since is None:
            return False
        now = self._clock()
        for name, (renew_time, seen_at) in list(self._seen.items()):
            duration = durations(name)
            start = after_gap(
                seen_at,
                blind_since=blind_since,
                resumed_at=now,
                duration=duration,
                limit=duration * self.multiple,
            )
            self._seen[name] = (renew_time, start)
        return True

    def verdict(self, name: str, renew_time: Any, duration: float) -> tuple[float, float | None]:
        """(seconds of silence that count, seconds until stale or None) for Lease ``name``.

        A Lease never seen before starts its grace now. The second value is None once it is
        stale, and while the view is broken (nothing turns stale then; the resume is the
        moment to look again).
        """
        if name not in self._seen:
            self._seen[name] = (renew_time, self._clock())
        limit = duration * self.multiple
        silent = silence(self._seen[name][1], self._clock(), self.blind_since)
        if silent >= limit or self.blind_since is not None:
            return silent, None
        return silent, limit - silent

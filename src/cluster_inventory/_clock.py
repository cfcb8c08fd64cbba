"""The one clock: wall-clock time in UTC and a monotonic clock, each injectable.

Every class that reads the time takes a ``now`` (wall clock: expiry, rotation,
``lastObservedTime``, Event times) or a ``clock`` (monotonic seconds: how long something took,
backoff, lateness) argument whose default is the function here, so a test drives time by
passing its own (kopf's habit, ``STYLE.md``). Wall-clock times are aware datetimes in UTC,
as the API server writes them (``metav1.Time``); durations come from the monotonic clock,
never from the difference of two wall-clock readings.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable

__all__ = ["MonotonicClock", "WallClock", "monotonic", "utcnow"]

#: A wall clock: returns an aware :class:`datetime.datetime` in UTC.
WallClock = Callable[[], dt.datetime]
#: A monotonic clock: returns seconds (float) from an arbitrary origin.
MonotonicClock = Callable[[], float]


def utcnow() -> dt.datetime:
    """The current time, an aware :class:`datetime.datetime` in UTC (``metav1.Time``'s zone)."""
    return dt.datetime.now(dt.UTC)


#: Seconds from an arbitrary origin that never go back (:func:`time.monotonic`).
monotonic: MonotonicClock = time.monotonic

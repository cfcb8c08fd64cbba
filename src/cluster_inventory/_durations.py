"""kubectl's durations: the AGE column and every "for how long" the product prints.

:func:`human_duration` is apimachinery's ``HumanDuration`` and :func:`age` kubectl's
``translateTimestampSince``, so the CLI's tables and the dashboard's "since" read as kubectl's
do. Only the standard library is imported: the CLI's table path stays cheap to start.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta, timezone

__all__ = ["age", "human_duration"]

_MINUTE = 60
_HOUR = 60 * _MINUTE
_DAY = 24 * _HOUR
_YEAR_DAYS = 365


def human_duration(seconds: float) -> str:
    """Render a duration the way kubectl's AGE column does.

    Follows ``HumanDuration`` of ``k8s.io/apimachinery/pkg/util/duration``: about two
    significant units, the fraction of a second truncated toward zero. A clock skew of up to
    one second into the future still reads ``0s``.

    ====================  ===================================
    duration              shown as
    ====================  ===================================
    below -1 s            ``<invalid>``
    (-2 s, 0 s)           ``0s``
    below 2 minutes       ``Ns`` (``119s``)
    below 10 minutes      ``NmSs``, ``Nm`` when S is 0
    below 3 hours         ``Nm`` (``179m``)
    below 8 hours         ``NhMm``, ``Nh`` when M is 0
    below 48 hours        ``Nh``
    below 8 days          ``NdHh``, ``Nd`` when H is 0
    below 2 years         ``Nd`` (a year is 365 days)
    below 8 years         ``NyDd``, ``Ny`` when D is 0
    otherwise             ``Ny``
    ====================  ===================================

    Args:
        seconds: The duration in seconds; negative when the timestamp is in the future.

    Returns:
        The short text, e.g. ``"5m30s"``, ``"3h"`` or ``"2y110d"``.

    Raises:
        ValueError: ``seconds`` is NaN or infinite.
    """
    if not math.isfinite(seconds):
        raise ValueError(f"duration must be finite, got {seconds!r}")
    whole = math.trunc(seconds)  # Go: int(d.Seconds()), which truncates toward zero
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 2 * _MINUTE:
        return f"{whole}s"
    minutes = whole // _MINUTE
    if minutes < 10:
        rest = whole % _MINUTE
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 3 * 60:
        return f"{minutes}m"
    hours = whole // _HOUR
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d" if rest == 0 else f"{days}d{rest}h"
    if hours < 24 * _YEAR_DAYS * 2:
        return f"{days}d"
    years = days // _YEAR_DAYS
    if hours < 24 * _YEAR_DAYS * 8:
        rest = days % _YEAR_DAYS
        return f"{years}y" if rest == 0 else f"{years}y{rest}d"
    return f"{years}y"


_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))",
    re.ASCII,
)
_GO_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)


def _parse_rfc3339(text: str) -> datetime | None:
    """Parse an RFC 3339 date-time (``metav1.Time`` / ``MicroTime``); ``None`` if it is not one.

    Args:
        text: E.g. ``"2026-11-23T10:00:00Z"`` or ``"2026-11-23T10:00:00.123456+02:00"``.

    Returns:
        An aware datetime, or ``None`` when ``text`` is not a valid RFC 3339 date-time.
    """
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.group(1, 2, 3, 4, 5, 6))
    micro = int((match.group(7) or "").ljust(6, "0")[:6])
    tz = UTC
    if match.group(8) is None:
        offset = timedelta(hours=int(match.group(10)), minutes=int(match.group(11)))
        try:
            tz = timezone(-offset if match.group(9) == "-" else offset)
        except ValueError:
            return None
    try:
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)
    except ValueError:
        return None


def age(timestamp: str | datetime | None, now: datetime | None = None) -> str:
    """Render the AGE of an object from its ``creationTimestamp``, as kubectl does.

    kubectl's ``translateTimestampSince`` prints ``<unknown>`` for a zero time and otherwise
    :func:`human_duration` of the time elapsed since.

    Args:
        timestamp: An RFC 3339 date-time such as ``"2026-11-23T10:00:00Z"`` (fractions and
            numeric offsets accepted); ``None``, ``""``, Go's zero time
            ``"0001-01-01T00:00:00Z"`` or anything unparsable gives ``<unknown>``. An aware
            datetime (a :class:`~cluster_inventory.api.views.ProfileView` time) is taken as is.
        now: The clock; defaults to the current time. A naive datetime is taken as UTC.

    Returns:
        E.g. ``"5m30s"``, ``"<invalid>"`` for a timestamp more than a second in the future,
        or ``"<unknown>"``.
    """
    if isinstance(timestamp, datetime):
        created: datetime | None = timestamp
    elif isinstance(timestamp, str):
        created = _parse_rfc3339(timestamp)
    else:
        return "<unknown>"
    if created is None or created == _GO_ZERO_TIME:
        return "<unknown>"
    current = now if now is not None else datetime.now(UTC)
    if current.tzinfo is None:
        current = current.replace(tzinfo=UTC)
    return human_duration((current - created).total_seconds())

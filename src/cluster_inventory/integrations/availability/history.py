"""A member's availability and outages, from the condition series Prometheus keeps (pure).

The input is what ``/api/v1/query_range`` returns for the kube-state-metrics-style series
``cluster_inventory_cluster_profile_condition{namespace,name,condition,status}`` (one point
per step for the status whose value is 1) and, when exported, the current reason of the
condition (``cluster_inventory_cluster_profile_condition_reason{...,reason}``). Each step of
the range counts once: observed when any status has a point there, available when it is
``true``. Availability is available over observed time, as the chart's recording rules
(``avg_over_time``) count it; time when nobody exported the profile counts for neither. An
outage is a run of observed steps that are not ``true``; its start is the first such step,
its length the steps in the run (so both are exact to one step).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AvailabilityReport",
    "MemberHistory",
    "Outage",
    "SeriesError",
    "TimeSeries",
    "decode_matrix",
    "parse_duration",
    "summarize",
]

_UNITS = {
    "ms": 0.001,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 604800.0,
    "y": 31536000.0,
}
_DURATION = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")
#: The statuses as kube-state-metrics spells them, and as conditions do.
_STATUS_WORDS = {"true": "True", "false": "False", "unknown": "Unknown"}


class SeriesError(ValueError):
    """Prometheus answered something that is not the series asked for.

    Attributes:
        query: The PromQL query whose answer it is.
        field: Where in the answer (``data.result[3].values[7]``).
        problem: What is wrong with it.
    """

    def __init__(self, query: str, field: str, problem: str) -> None:
        super().__init__(f"query {query!r}: {field}: {problem}")
        self.query, self.field, self.problem = query, field, problem


def parse_duration(text: str) -> float:
    """Seconds in a Prometheus duration (``7d``, ``1h30m``, ``90s``, ``250ms``).

    Raises:
        ValueError: ``text`` is not one, or is zero.
    """
    if not text or _DURATION.sub("", text) != "":
        raise ValueError(
            f"{text!r} is not a duration: use a number and a unit, e.g. 30m, 12h, 7d, 1h30m "
            "(units ms, s, m, h, d, w, y)"
        )
    seconds = sum(int(n) * _UNITS[unit] for n, unit in _DURATION.findall(text))
    if seconds <= 0:
        raise ValueError(f"duration {text!r} must be more than zero")
    return seconds


@dataclass(frozen=True, kw_only=True)
class TimeSeries:
    """One series of a range query: its labels and ``(unix seconds, value)`` points."""

    labels: Mapping[str, str]
    points: tuple[tuple[float, float], ...]


def decode_matrix(body: Any, *, query: str) -> list[TimeSeries]:
    """The series of a ``query_range`` answer, every field checked.

    Args:
        body: The decoded JSON answer (``{"status": "success", "data": {"resultType":
            "matrix", "result": [{"metric": {...}, "values": [[t, "v"], ...]}]}}``).
        query: The query, for error messages.

    Raises:
        SeriesError: ``status`` is not ``success``, the result is not a matrix, or a label,
            time or value is not what the API documents (naming the series and field).
    """
    if not isinstance(body, Mapping):
        raise SeriesError(query, "body", f"expected a JSON object, got {type(body).__name__}")
    if body.get("status") != "success":
        problem = body.get("error") or "no error message"
        raise SeriesError(query, "status", f"{body.get('status')!r} ({problem})")
    data = body.get("data")
    if not isinstance(data, Mapping) or data.get("resultType") != "matrix":
        got = data.get("resultType") if isinstance(data, Mapping) else data
        raise SeriesError(query, "data.resultType", f"expected 'matrix', got {got!r}")
    result = data.get("result")
    if not isinstance(result, list):
        raise SeriesError(query, "data.result", "expected a list")
    out = []
    for i, item in enumerate(result):
        where = f"data.result[{i}]"
        if not isinstance(item, Mapping):
            raise SeriesError(query, where, "expected an object")
        metric = item.get("metric")
        if not isinstance(metric, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metric.items()
        ):
            raise SeriesError(query, f"{where}.metric", "expected string labels")
        values = item.get("values")
        if not isinstance(values, list):
            raise SeriesError(query, f"{where}.values", "expected a list")
        points = []
        for j, pair in enumerate(values):
            if not (isinstance(pair, list) and len(pair) == 2):
                raise SeriesError(query, f"{where}.values[{j}]", "expected [time, value]")
            try:
                when, value = float(pair[0]), float(pair[1])
            except (TypeError, ValueError):
                raise SeriesError(
                    query, f"{where}.values[{j}]", f"not a time and a number: {pair!r}"
                ) from None
            if not math.isfinite(when):
                raise SeriesError(query, f"{where}.values[{j}]", f"time {pair[0]!r}")
            points.append((when, value))
        out.append(TimeSeries(labels=dict(metric), points=tuple(points)))
    return out


@dataclass(frozen=True, kw_only=True)
class Outage:
    """One run of steps when a member was observed and not available.

    Attributes:
        start: The first step it was down (UTC).
        end: The first step after the run (UTC); None if it was still down at the end.
        seconds: Its length: steps down times the step.
        status: ``False`` or ``Unknown`` (the condition's status when it began).
        reason: The condition's reason when it began; "" when no reason series was exported.
    """

    start: dt.datetime
    end: dt.datetime | None
    seconds: float
    status: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class MemberHistory:
    """One ClusterProfile's availability over the window.

    Attributes:
        namespace: The inventory namespace.
        name: The profile's name.
        observed_seconds: Time some replica exported the profile's condition.
        available_seconds: Of that, time it was ``true``.
        outages: In time order.
        states: ``(start, seconds, state)`` runs over the window (``up``, ``down`` or
            ``unobserved``), for a plot.
    """

    namespace: str
    name: str
    observed_seconds: float
    available_seconds: float
    outages: tuple[Outage, ...]
    states: tuple[tuple[dt.datetime, float, str], ...]

    @property
    def availability(self) -> float | None:
        """``available_seconds / observed_seconds``; None when never observed."""
        if self.observed_seconds <= 0:
            return None
        return self.available_seconds / self.observed_seconds


@dataclass(frozen=True, kw_only=True)
class AvailabilityReport:
    """Every member's history over one window.

    Attributes:
        start: The window's first step (UTC).
        end: Its last step (UTC).
        step: Seconds between steps: the precision of every figure.
        members: By namespace and name.
    """

    start: dt.datetime
    end: dt.datetime
    step: float
    members: tuple[MemberHistory, ...]


def _utc(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.UTC)


def _index(start: float, step: float, when: float) -> int:
    return round((when - start) / step)


def summarize(
    conditions: Sequence[TimeSeries],
    reasons: Sequence[TimeSeries] = (),
    *,
    start: float,
    end: float,
    step: float,
) -> AvailabilityReport:
    """Availability and outages of each profile the series name.

    Args:
        conditions: Range-query series of one condition, labelled ``namespace``, ``name`` and
            ``status`` (``true``, ``false``, ``unknown``); a point of value 1 says the status.
        reasons: Series of its reason, labelled ``namespace``, ``name`` and ``reason``.
        start: Unix seconds of the first step (the query's ``start``).
        end: Unix seconds of the last step (the query's ``end``).
        step: Seconds between steps (the query's ``step``).

    Returns:
        The report; a series without ``namespace`` or ``name`` is left out (not a profile's).

    Raises:
        ValueError: ``step`` is not positive or ``end`` is before ``start``.
    """
    if step <= 0 or end < start:
        raise ValueError(f"bad window: start {start}, end {end}, step {step}")
    steps = _index(start, step, end) + 1
    status: dict[tuple[str, str], list[str | None]] = defaultdict(lambda: [None] * steps)
    for series in conditions:
        key = (series.labels.get("namespace", ""), series.labels.get("name", ""))
        word = series.labels.get("status", "")
        if not all(key) or word not in _STATUS_WORDS:
            continue
        slots = status[key]
        for when, value in series.points:
            i = _index(start, step, when)
            if 0 <= i < steps and value == 1 and slots[i] != "true":
                slots[i] = word  # any replica saying true wins, as in the recording rules
    reason_at: dict[tuple[str, str], dict[int, str]] = defaultdict(dict)
    for series in reasons:
        key = (series.labels.get("namespace", ""), series.labels.get("name", ""))
        for when, value in series.points:
            if value == 1:
                reason_at[key][_index(start, step, when)] = series.labels.get("reason", "")
    members = tuple(
        _member(key, status[key], reason_at.get(key, {}), start=start, step=step)
        for key in sorted(status)
    )
    return AvailabilityReport(start=_utc(start), end=_utc(end), step=step, members=members)


def _member(
    key: tuple[str, str],
    slots: list[str | None],
    reasons: Mapping[int, str],
    *,
    start: float,
    step: float,
) -> MemberHistory:
    outages = []
    states: list[tuple[dt.datetime, float, str]] = []
    observed = sum(1 for s in slots if s is not None)
    available = sum(1 for s in slots if s == "true")
    for first, length, state in _runs(slots):
        states.append((_utc(start + first * step), length * step, state))
        if state != "down":
            continue
        last = first + length
        begun = slots[first] or "unknown"
        seen = [reasons[i] for i in range(first, last) if i in reasons]
        outages.append(
            Outage(
                start=_utc(start + first * step),
                end=_utc(start + last * step) if last < len(slots) else None,
                seconds=length * step,
                status=_STATUS_WORDS[begun],
                reason=reasons.get(first) or (Counter(seen).most_common(1)[0][0] if seen else ""),
            )
        )
    return MemberHistory(
        namespace=key[0],
        name=key[1],
        observed_seconds=observed * step,
        available_seconds=available * step,
        outages=tuple(outages),
        states=tuple(states),
    )


def _runs(slots: Iterable[str | None]) -> list[tuple[int, int, str]]:
    """``(first index, length, state)`` of each run of equal states."""
    runs: list[tuple[int, int, str]] = []
    for i, slot in enumerate(slots):
        state = "unobserved" if slot is None else "up" if slot == "true" else "down"
        if runs and runs[-1][2] == state:
            first, length, _ = runs[-1]
            runs[-1] = (first, length + 1, state)
        else:
            runs.append((i, 1, state))
    return runs

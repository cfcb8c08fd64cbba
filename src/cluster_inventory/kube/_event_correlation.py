"""What one report about an object becomes: client-go's ``EventCorrelator``, without I/O.

A member flapping every second must not write an Event every second. client-go's recorder
(``tools/record/events_cache.go``) keeps any object from flooding the API server in three
steps, each over an LRU of 4,096 keys, and so does :class:`EventCorrelator`:

1. **Aggregation**: reports alike but for their note (same reporter, object, type, reason
   and action) are remembered for 600 s after the last of them; from the 10th distinct note
   on, they all count towards one Event whose note says ``(combined from similar events)``.
2. **Counting**: a report equal to one seen before adds to that Event's count (the
   events.k8s.io/v1 ``series.count``) rather than making a new Event.
3. **Spam filter**: a token bucket per reporter + object + type, 25 tokens, one back every
   300 s. A report finding no token writes nothing; its count is kept and goes out with the
   next write.

The clock is monotonic seconds, injected, so the windows are tested without sleeping; the
recorder (:mod:`cluster_inventory.kube.events`) does the writes.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from cluster_inventory.kube.workqueue import BucketRateLimiter

__all__ = [
    "AGGREGATED_NOTE_PREFIX",
    "Correlation",
    "CorrelatorOptions",
    "EventCorrelator",
    "EventReport",
]

#: client-go's ``EventAggregatorByReasonMessageFunc`` prefix of an aggregated Event's note.
AGGREGATED_NOTE_PREFIX = "(combined from similar events): "

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
#: An Event's identity: reporter, object, type, reason, action and (unless aggregated) note.
EventKey = tuple[str, ...]


class _LRU(Generic[K, V]):
    """A dict that forgets its least recently used key past ``size`` (``golang-lru``)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


@dataclass(frozen=True, kw_only=True)
class CorrelatorOptions:
    """client-go's ``CorrelatorOptions``, with its defaults.

    Attributes:
        lru_size: Keys each cache holds (``maxLruCacheEntries``, 4,096).
        max_events: Distinct notes of alike reports before they aggregate (``maxEvents``, 10).
        max_interval: Seconds after the last alike report that they are forgotten
            (``maxIntervalInSeconds``, 600).
        burst: Writes one reporter may make about one object and type at once
            (``defaultSpamBurst``, 25).
        refill_interval: Seconds per token back (``defaultSpamQPS`` is 1/300).
    """

    lru_size: int = 4096
    max_events: int = 10
    max_interval: float = 600.0
    burst: int = 25
    refill_interval: float = 300.0

    def __post_init__(self) -> None:
        for name in ("lru_size", "max_events", "burst"):
            if getattr(self, name) < 1:
                raise ValueError(
                    f"CorrelatorOptions.{name} must be >= 1, not {getattr(self, name)}"
                )
        for name in ("max_interval", "refill_interval"):
            if getattr(self, name) <= 0:
                raise ValueError(
                    f"CorrelatorOptions.{name} must be > 0 s, not {getattr(self, name)}"
                )


@dataclass(frozen=True, kw_only=True)
class EventReport:
    """One thing a controller reports about an object (what makes an Event what it is).

    Attributes:
        regarding: ``{apiVersion, kind, name, namespace[, uid]}`` of the object.
        reason: CamelCase reason.
        note: The message.
        action: What the controller was doing.
        event_type: ``Warning`` or ``Normal``.
        controller: ``reportingController``.
        instance: ``reportingInstance``.
        dedupe: Stands in for the note when reports are compared (None: the note itself).
    """

    regarding: Mapping[str, str]
    reason: str
    note: str
    action: str
    event_type: str
    controller: str
    instance: str
    dedupe: str | None = None

    def _object(self) -> tuple[str, ...]:
        ref = self.regarding
        return tuple(
            str(ref.get(k) or "") for k in ("apiVersion", "kind", "namespace", "name", "uid")
        )

    @property
    def spam_key(self) -> tuple[str, ...]:
        """Reporter + object + type: client-go's ``getSpamKey``."""
        return (self.controller, self.instance, *self._object(), self.event_type)

    @property
    def aggregate_key(self) -> EventKey:
        """Everything but the note: client-go's ``EventAggregatorByReasonFunc``."""
        return (*self.spam_key, self.reason, self.action)

    @property
    def local_key(self) -> str:
        """What tells alike reports apart: the dedupe key, else the note."""
        return self.note if self.dedupe is None else self.dedupe

    @property
    def key(self) -> EventKey:
        """The Event this report is, unless aggregated."""
        return (*self.aggregate_key, self.local_key)


@dataclass(frozen=True, kw_only=True)
class Correlation:
    """What to do with one report.

    Attributes:
        key: The Event it counts towards (:attr:`EventReport.key`, or the aggregate key).
        aggregated: The Event stands for all alike reports of the object.
        note: The Event's note if it is created now.
        count: Occurrences of the Event, this one included: on the server as far as this
            correlator knows, plus those since (held back or not yet written). When
            ``known`` is False, only those since the Event was found on the server.
        known: ``count`` includes the server's count (False after a create found the Event
            already there, until :meth:`EventCorrelator.settle`): the writer reads the
            server's count and adds ``count`` to it.
        write: False when the spam filter holds this report back.
    """

    key: EventKey
    aggregated: bool
    note: str
    count: int
    known: bool
    write: bool


@dataclass
class _Alike:
    notes: dict[str, None] = field(default_factory=dict)  # insertion-ordered set
    last: float = 0.0


@dataclass
class _Seen:
    count: int = 0
    known: bool = True


class EventCorrelator:
    """Aggregation, counting and the spam filter over reports (client-go's correlator).

    Use from one event loop (no locks).

    Args:
        options: The limits (client-go's defaults).
        clock: Monotonic seconds.
    """

    def __init__(
        self,
        options: CorrelatorOptions | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.options = options or CorrelatorOptions()
        self._clock = clock
        size = self.options.lru_size
        self._alike: _LRU[EventKey, _Alike] = _LRU(size)
        self._seen: _LRU[EventKey, _Seen] = _LRU(size)
        self._buckets: _LRU[tuple[str, ...], BucketRateLimiter] = _LRU(size)

    def correlate(self, report: EventReport) -> Correlation:
        """Count ``report`` and say which Event it is and whether to write it now."""
        now = self._clock()
        key, aggregated, note = self._aggregate(report, now)
        seen = self._seen.get(key)
        if seen is None:
            seen = _Seen()
            self._seen.put(key, seen)
        seen.count += 1
        return Correlation(
            key=key,
            aggregated=aggregated,
            note=note,
            count=seen.count,
            known=seen.known,
            write=self._allow(report.spam_key),
        )

    def _aggregate(self, report: EventReport, now: float) -> tuple[EventKey, bool, str]:
        alike = self._alike.get(report.aggregate_key)
        if alike is None or now - alike.last > self.options.max_interval:
            alike = _Alike()
        alike.notes[report.local_key] = None
        alike.last = now
        self._alike.put(report.aggregate_key, alike)
        if len(alike.notes) < self.options.max_events:
            return report.key, False, report.note
        # The set stays below the limit, as client-go's PopAny keeps it: the oldest goes.
        del alike.notes[next(iter(alike.notes))]
        return report.aggregate_key, True, AGGREGATED_NOTE_PREFIX + report.note

    def _allow(self, spam_key: tuple[str, ...]) -> bool:
        bucket = self._buckets.get(spam_key)
        if bucket is None:
            bucket = BucketRateLimiter(
                rate=1.0 / self.options.refill_interval,
                burst=self.options.burst,
                clock=self._clock,
            )
            self._buckets.put(spam_key, bucket)
        return bucket.try_accept()

    def settle(self, key: EventKey, count: int) -> None:
        """The Event ``key`` now has ``count`` on the server (written, or read back)."""
        seen = self._seen.get(key)
        if seen is None:
            seen = _Seen()
            self._seen.put(key, seen)
        seen.count, seen.known = count, True

    def exists(self, key: EventKey) -> None:
        """A create of ``key`` found it on the server already, with a count not read yet.

        The report that found it is the one the server holds (a restarted replica reporting
        again adds nothing); the next write reads the server's count and adds what came
        since.
        """
        seen = self._seen.get(key)
        if seen is None:
            seen = _Seen()
            self._seen.put(key, seen)
        seen.count, seen.known = 0, False

"""A work queue with client-go semantics, for level-based reconcilers.

- A key waiting in the queue is not added twice (adds coalesce).
- A key being processed is never handed to a second worker; if it is added meanwhile, it
  is queued again when :meth:`WorkQueue.done` is called.
- :meth:`WorkQueue.add_after` delays an add; :meth:`WorkQueue.add_rate_limited` delays it by
  the larger of a per-key exponential backoff (5 ms doubling to 1000 s) and an overall token
  bucket (10 per second, burst 100): client-go's ``DefaultControllerRateLimiter``.
  :meth:`WorkQueue.forget` resets a key's backoff after a success.

The clock (``time.monotonic`` by default) is injectable, so rate-limit arithmetic is tested
without sleeping; delays themselves run on the event loop's timers.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from cluster_inventory.kube._metrics import collectors_for

__all__ = [
    "DURATION_BUCKETS",
    "BucketRateLimiter",
    "ItemExponentialRateLimiter",
    "QueueShutDown",
    "WorkQueue",
    "WorkQueueMetrics",
]

K = TypeVar("K", bound=Hashable)


class QueueShutDown(Exception):
    """Raised by :meth:`WorkQueue.get` once the queue is shut down and drained."""


class ItemExponentialRateLimiter(Generic[K]):
    """Per-key backoff: ``base * 2**failures``, capped (client-go defaults 5 ms, 1000 s)."""

    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        self.base = base
        self.cap = cap
        self._failures: dict[K, int] = {}

    def when(self, key: K) -> float:
        """Seconds to wait before retrying ``key``; counts one more failure."""
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        return float(min(self.base * (2**n), self.cap))

    def forget(self, key: K) -> None:
        """Reset ``key``'s failures."""
        self._failures.pop(key, None)

    def failures(self, key: K) -> int:
        """How many times ``key`` has been rate limited since its last forget."""
        return self._failures.get(key, 0)


class BucketRateLimiter:
    """An overall token bucket: ``rate`` per second with ``burst`` (client-go: 10, 100)."""

    def __init__(
        self, rate: float = 10.0, burst: int = 100, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
        self._last = now

    def when(self) -> float:
        """Seconds until a token is free (reserving it, as ``rate.Limiter.Reserve``)."""
        self._refill()
        self._tokens -= 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self.rate

    def try_accept(self) -> bool:
        """Take a token if one is free now, else take nothing (client-go's ``TryAccept``)."""
        self._refill()
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True


#: client-go's work-queue duration buckets: ``ExponentialBuckets(10e-9, 10, 12)`` (10 ns to
#: 1,000 s), in seconds.
DURATION_BUCKETS = tuple(10.0**exp for exp in range(-8, 4))


class WorkQueueMetrics:
    """client-go's work-queue metrics as controller-runtime registers them.

    ``workqueue_depth``, ``workqueue_adds_total``, ``workqueue_retries_total``,
    ``workqueue_queue_duration_seconds`` (from an add to the get that hands the key out) and
    ``workqueue_work_duration_seconds`` (from that get to its done), each labelled ``name``
    and ``controller`` (controller-runtime v0.24 ``pkg/metrics/workqueue.go``).
    """

    def __init__(self, registry: CollectorRegistry | None = REGISTRY) -> None:
        labels = ["name", "controller"]
        self.depth = Gauge(
            "workqueue_depth", "Current depth of workqueue", labels, registry=registry
        )
        self.adds = Counter(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            labels,
            registry=registry,
        )
        self.retries = Counter(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            labels,
            registry=registry,
        )
        self.queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            labels,
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            labels,
            buckets=DURATION_BUCKETS,
            registry=registry,
        )


class WorkQueue(Generic[K]):
    """The queue. Use from one event loop.

    Args:
        name: The ``name`` label of the metrics.
        controller: Their ``controller`` label (default: ``name``, as controller-runtime
            names a controller's queue after it).
        clock: Monotonic clock in seconds (the bucket limiter and the durations).
        metrics: Collectors; process-wide ones by default.
    """

    def __init__(
        self,
        name: str = "",
        *,
        controller: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        metrics: WorkQueueMetrics | None = None,
    ) -> None:
        self.name = name
        self.controller = name if controller is None else controller
        self._clock = clock
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._timers: dict[K, asyncio.TimerHandle] = {}
        self._shutdown = False
        self.item_limiter: ItemExponentialRateLimiter[K] = ItemExponentialRateLimiter()
        self.bucket = BucketRateLimiter(clock=clock)
        collectors = metrics or collectors_for(WorkQueueMetrics)
        labels = (self.name, self.controller)
        self._depth = collectors.depth.labels(*labels)
        self._adds = collectors.adds.labels(*labels)
        self._retries = collectors.retries.labels(*labels)
        self._queue_duration = collectors.queue_duration.labels(*labels)
        self._work_duration = collectors.work_duration.labels(*labels)
        # When each key was first added since it was last handed out, and when each key
        # being processed was handed out (client-go's addTimes, processingStartTimes).
        self._added: dict[K, float] = {}
        self._started: dict[K, float] = {}

    def __len__(self) -> int:
        return len(self._queue)

    def _wake(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def add(self, key: K) -> None:
        """Queue ``key`` unless it is already waiting (no-op after shutdown)."""
        if self._shutdown or key in self._dirty:
            return
        self._adds.inc()
        self._added.setdefault(key, self._clock())
        self._dirty.add(key)
        if key in self._processing:
            return
        self._queue.append(key)
        self._depth.set(len(self._queue))
        self._wake()

    def add_after(self, key: K, delay: float) -> None:
        """Add ``key`` after ``delay`` seconds; an earlier pending delay for it wins."""
        if self._shutdown:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        existing = self._timers.get(key)
        due = loop.time() + delay
        if existing is not None:
            if existing.when() <= due:
                return
            existing.cancel()

        def fire() -> None:
            self._timers.pop(key, None)
            self.add(key)

        self._timers[key] = loop.call_at(due, fire)

    def add_rate_limited(self, key: K) -> None:
        """Add ``key`` after its backoff (the max of the per-key and overall limiters)."""
        self._retries.inc()
        self.add_after(key, max(self.item_limiter.when(key), self.bucket.when()))

    def forget(self, key: K) -> None:
        """Reset ``key``'s backoff (call after it was processed successfully)."""
        self.item_limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        """Rate-limited adds of ``key`` since its last :meth:`forget`."""
        return self.item_limiter.failures(key)

    async def get(self) -> K:
        """Wait for the next key and mark it processing.

        Raises:
            QueueShutDown: The queue was shut down and is empty.
        """
        while not self._queue:
            if self._shutdown:
                raise QueueShutDown
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake()  # pass the wake-up on
                raise
        key = self._queue.popleft()
        self._depth.set(len(self._queue))
        self._dirty.discard(key)
        self._processing.add(key)
        now = self._clock()
        self._started[key] = now
        added = self._added.pop(key, None)
        if added is not None:
            self._queue_duration.observe(now - added)
        return key

    def done(self, key: K) -> None:
        """Mark ``key`` processed; if it was added meanwhile, queue it again."""
        self._processing.discard(key)
        started = self._started.pop(key, None)
        if started is not None:
            self._work_duration.observe(self._clock() - started)
        if key in self._dirty:
            self._queue.append(key)
            self._depth.set(len(self._queue))
            self._wake()

    def shut_down(self) -> None:
        """Stop accepting adds, cancel delayed adds and wake every waiter."""
        self._shutdown = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    @property
    def shutting_down(self) -> bool:
        """True after :meth:`shut_down`."""
        return self._shutdown

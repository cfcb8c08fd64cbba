"""Knowing when we are the slow party: event-loop lag, and a start-up pace that follows it.

A replica holding thousands of members does its I/O on one event loop. When that loop is
behind (more ready callbacks than it runs in time, or the process starved of CPU), every
request it makes takes longer, whatever the server on the other end does: a probe that times
out then says something about us, not about the member. Treating it as the member's failure
is what made a busy replica flip thousands of healthy members to unhealthy and back, which
queued more work and kept it behind (``docs/scale.md``). So:

- :class:`LoopLag` samples how late the loop wakes a sleeper (``asyncio.sleep(period)``
  returning late by the time other callbacks held the loop), keeps the last ``window``
  seconds of samples, and answers "were we behind since ``t``?": what a probe asks before a
  timeout may count against a member. It is exported as
  ``cluster_inventory_event_loop_lag_seconds``.
- :class:`AdaptiveLimit` is an additive-increase / multiplicative-decrease limit of work in
  flight (TCP's congestion window; Netflix's concurrency-limits): it grows while the work
  succeeds and the loop keeps up, and halves (at most once per ``cooldown``) on a sign of
  overload (our lag, a member's 429 or timeout). Member start-up runs under it instead of a
  fixed 64 at once.

- :class:`CpuPressure` reads Linux's CPU pressure (PSI, ``cpu.pressure`` of this process's
  cgroup, else ``/proc/pressure/cpu``): the share of each second in which a runnable task
  waited for a CPU. A replica starved of CPU by its limit or its node may still wake its
  sleepers nearly on time (the kernel shares the CPU out in slices) while every reply it
  waits for is read late; at 50% or more the replica counts as behind too
  (``cluster_inventory_cpu_pressure_ratio``).

All are bookkeeping around an injectable clock; only :meth:`LoopLag.start` runs a task.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from cluster_inventory import kube

__all__ = ["AdaptiveLimit", "CpuPressure", "LoopLag", "OverloadMetrics"]

#: Lag buckets (seconds): a loop keeping up is under 10 ms; a probe's timeout is 2 s.
_LAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)


@dataclass(frozen=True)
class OverloadMetrics(kube.PerRegistry):
    """How far behind this process is, and what it did not blame on members because of it.

    - ``cluster_inventory_event_loop_lag_seconds`` (histogram): how late the loop woke a
      sleeper, sampled every ``LoopLag.period`` seconds;
    - ``cluster_inventory_probes_deferred_total``: member probes that timed out while this
      process was behind, so gave no verdict and were probed again;
    - ``cluster_inventory_member_start_limit``: members started at once (the adaptive limit).
    """

    lag: Histogram = kube.metric(
        Histogram,
        "cluster_inventory_event_loop_lag_seconds",
        "Seconds the event loop woke a sleeper late",
        buckets=_LAG_BUCKETS,
    )
    probes_deferred: Counter = kube.metric(
        Counter,
        "cluster_inventory_probes_deferred",
        "Member probes that timed out while this process was behind (no verdict)",
    )
    start_limit: Gauge = kube.metric(
        Gauge,
        "cluster_inventory_member_start_limit",
        "Member connections started at once (adaptive)",
    )
    cpu_pressure: Gauge = kube.metric(
        Gauge,
        "cluster_inventory_cpu_pressure_ratio",
        "Share of the last second in which a runnable task of this process's cgroup "
        "(or machine) waited for a CPU (Linux PSI 'some')",
    )


class CpuPressure:
    """CPU pressure (Linux PSI ``some``) over the last sample, and when it was high.

    Args:
        path: A ``cpu.pressure`` file (see :meth:`for_process`).
        threshold: Share of wall time (0-1) stalled from which this process counts as behind.
        window: Seconds of high samples kept (at least a probe's timeout).

    The file's ``some ... total=`` is the microseconds some runnable task waited for a CPU;
    :meth:`sample` turns its growth since the previous sample into a share of wall time.
    """

    def __init__(self, path: Path, *, threshold: float = 0.5, window: float = 60.0) -> None:
        self.path = path
        self.threshold = threshold
        self.window = window
        self.share = 0.0
        self._previous: tuple[float, int] | None = None
        #: (when, share) of the samples at or above the threshold within ``window``.
        self._high: collections.deque[tuple[float, float]] = collections.deque()

    @classmethod
    def for_process(cls) -> CpuPressure | None:
        """This process's cgroup's ``cpu.pressure`` (cgroup v2), else the machine's, else None.

        None where the kernel has no PSI (not Linux, or built without it): only the event
        loop's lag then says whether we are behind.
        """
        candidates = []
        with contextlib.suppress(OSError):
            for line in Path("/proc/self/cgroup").read_text().splitlines():
                if line.startswith("0::"):
                    candidates.append(
                        Path("/sys/fs/cgroup") / line[3:].lstrip("/") / "cpu.pressure"
                    )
        candidates.append(Path("/proc/pressure/cpu"))
        for path in candidates:
            if _read_stall_us(path) is not None:
                return cls(path)
        return None

    def sample(self, now: float) -> float:
        """Read the file once (at monotonic ``now``); returns the share stalled since last time.

        An unreadable file gives 0.0 (no evidence that we are behind).
        """
        total = _read_stall_us(self.path)
        if total is None:
            return 0.0
        if self._previous is not None:
            then, before = self._previous
            if now > then:
                self.share = min(1.0, max(0.0, (total - before) / 1e6 / (now - then)))
                if self.share >= self.threshold:
                    self._high.append((now, self.share))
        self._previous = (now, total)
        while self._high and self._high[0][0] < now - self.window:
            self._high.popleft()
        return self.share

    def high_since(self, since: float) -> bool:
        """True if a sample taken after ``since`` (monotonic) was at or above the threshold."""
        return bool(self._high) and self._high[-1][0] >= since


def _read_stall_us(path: Path) -> int | None:
    """``total=`` of the ``some`` line of a PSI file (microseconds), or None if unreadable."""
    try:
        text = path.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("some "):
            for field in line.split()[1:]:
                name, _, value = field.partition("=")
                if name == "total" and value.isdigit():
                    return int(value)
    return None


class LoopLag:
    """Samples the running event loop's lag (seconds) and remembers the last ``window``.

    Args:
        period: Seconds between samples.
        window: Seconds of samples kept (at least a probe's timeout).
        threshold: Lag (seconds) from which the loop counts as behind.
        clock: Monotonic seconds.
        registry: Where ``cluster_inventory_event_loop_lag_seconds`` is registered.
        pressure: CPU pressure, sampled once a second with the lag: this process also
            counts as behind while it is at or above its threshold. None: lag only.
    """

    def __init__(
        self,
        *,
        period: float = 0.1,
        window: float = 60.0,
        threshold: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        registry: CollectorRegistry = REGISTRY,
        pressure: CpuPressure | None = None,
    ) -> None:
        self.period = period
        self.window = window
        self.threshold = threshold
        self.pressure = pressure
        self._clock = clock
        self._metrics = OverloadMetrics.for_registry(registry)
        #: (when the sample was taken, its lag): samples at or above the threshold only, and
        #: the newest sample; a loop keeping up stores nearly nothing.
        self._late: collections.deque[tuple[float, float]] = collections.deque()
        self._due: float | None = None
        self._last = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start sampling on the running loop (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._sample(), name="loop lag")

    async def stop(self) -> None:
        """Stop sampling."""
        await kube.cancel_and_wait(self._task)
        self._task = None

    def record(self, now: float, lag: float) -> None:
        """Take one sample: the loop ran something due at ``now - lag`` at ``now``."""
        self._last = lag
        self._metrics.lag.observe(lag)
        if lag >= self.threshold:
            self._late.append((now, lag))
        while self._late and self._late[0][0] < now - self.window:
            self._late.popleft()

    @property
    def current(self) -> float:
        """The lag of the newest sample, or how overdue the next one is if that is more."""
        overdue = 0.0 if self._due is None else max(0.0, self._clock() - self._due)
        return max(self._last, overdue)

    def max_since(self, since: float) -> float:
        """The largest lag (seconds) sampled from ``since`` (monotonic) until now."""
        worst = self.current
        for when, lag in reversed(self._late):
            # A sample taken at ``when`` covers the loop from ``when - lag``.
            if when < since:
                break
            worst = max(worst, lag)
        return worst

    def behind_since(self, since: float) -> bool:
        """True if we were behind at some point since ``since`` (monotonic).

        Behind: the loop lagged by ``threshold`` or more, or the CPU pressure was at or above
        its threshold in a sample taken since then.
        """
        if self.pressure is not None and self.pressure.high_since(since):
            return True
        return self.max_since(since) >= self.threshold

    async def _sample(self) -> None:
        next_pressure = self._clock()
        while True:
            self._due = self._clock() + self.period
            await asyncio.sleep(self.period)
            now = self._clock()
            self.record(now, max(0.0, now - self._due))
            if self.pressure is not None and now >= next_pressure:
                next_pressure = now + 1.0
                self._metrics.cpu_pressure.set(self.pressure.sample(now))


class AdaptiveLimit:
    """An additive-increase / multiplicative-decrease limit of work in flight.

    Starts at ``initial``; each success adds 1 while no overload was seen yet (slow start,
    doubling per round) and ``1 / limit`` after (one per round); an overload halves it, at
    most once per ``cooldown`` seconds (a burst of timeouts from one moment is one signal).
    Never below ``minimum`` nor above ``maximum``.

    Args:
        initial: Starting limit.
        minimum: Lowest limit.
        maximum: Highest limit.
        cooldown: Seconds between two decreases.
        clock: Monotonic seconds.
        on_change: Called with the new (integer) limit when it changes (a gauge).
    """

    def __init__(
        self,
        *,
        initial: int = 16,
        minimum: int = 2,
        maximum: int = 256,
        cooldown: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[int], None] | None = None,
    ) -> None:
        if not 1 <= minimum <= initial <= maximum:
            raise ValueError(f"need 1 <= minimum <= initial <= maximum, got {minimum}/{initial}")
        self.minimum = minimum
        self.maximum = maximum
        self.cooldown = cooldown
        self._clock = clock
        self._on_change = on_change
        self._limit = float(initial)
        self._slow_start = True
        self._decreased_at: float | None = None
        self._in_flight = 0
        #: Waiting for a slot, first come first served; a slot is handed to a waiter whole.
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        if on_change is not None:
            on_change(initial)

    @property
    def limit(self) -> int:
        """Work allowed in flight now."""
        return int(self._limit)

    @property
    def in_flight(self) -> int:
        """Work in flight now."""
        return self._in_flight

    def success(self) -> None:
        """One unit of work succeeded without a sign of overload."""
        before = self.limit
        step = 1.0 if self._slow_start else 1.0 / self._limit
        self._limit = min(float(self.maximum), self._limit + step)
        self._changed(before)

    def restart(self) -> None:
        """A new burst after a quiet spell: grow by doubling again until the next overload.

        What the limit learned in the last burst (a cold start, seconds or hours ago) says
        little of what the process can take now; TCP restarts its slow start after an idle
        spell for the same reason (RFC 5681, section 4.1). The limit itself is kept.
        """
        self._slow_start = True

    def overload(self) -> None:
        """A sign of overload: halve the limit (once per ``cooldown``)."""
        now = self._clock()
        self._slow_start = False
        if self._decreased_at is not None and now - self._decreased_at < self.cooldown:
            return
        before = self.limit
        self._decreased_at = now
        self._limit = max(float(self.minimum), self._limit / 2)
        self._changed(before)

    def _changed(self, before: int) -> None:
        if self.limit == before:
            return
        if self._on_change is not None:
            self._on_change(self.limit)
        self._hand_out()

    def _hand_out(self) -> None:
        """Give free slots to the first waiters (one wake-up each, never all of them)."""
        while self._waiters and self._in_flight < self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._in_flight += 1
                waiter.set_result(None)

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Wait for room under the limit, hold it for the ``async with`` body."""
        if self._waiters or self._in_flight >= self.limit:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._release()  # handed a slot just as we were cancelled
                else:
                    with contextlib.suppress(ValueError):
                        self._waiters.remove(waiter)
                raise
        else:
            self._in_flight += 1
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        self._in_flight -= 1
        self._hand_out()

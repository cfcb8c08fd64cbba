"""One backoff for every retry loop: growing delays, one warning, one line on recovery.

kopf's ``throttled(throttler=, delays=, logger=)`` in this project's terms: an activity
that fails (a write the hub does not take, a renewal, a join) is retried after a delay
that grows from ``first`` by ``factor`` up to ``cap`` seconds (client-go's
``wait.Backoff`` with ``Steps`` unbounded); the first failure of a streak is one warning,
the ones after it a debug line each, and the first success after it one info line saying
how long it failed. A person reading the log sees an outage once and its end once, however
long it lasted.

:class:`Backoff` is the delay rule (pure); :class:`Throttle` keeps one activity's streak
and writes its log lines; :meth:`Throttle.attempt` is the ``async with`` shape::

    throttle = Throttle("renew Lease ns/x", logger=log, backoff=Backoff(first=1, cap=60))
    while True:
        async with throttle.attempt(errors=(KubeError,)):
            await renew()
            break

The clock and ``sleep`` are injected, so tests drive it without waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Backoff", "Throttle"]


@dataclass(frozen=True, kw_only=True)
class Backoff:
    """Seconds to wait after the n-th failure of a streak: ``first x factor**(n-1)``, capped.

    Attributes:
        first: The delay after the first failure (seconds).
        cap: The longest delay (seconds).
        factor: Growth per failure (2: doubling).
        jitter: Share added at random, ``delay x (1 + jitter x rnd)`` (client-go's
            ``Jitter``; 0: none), so that a fleet failing together does not retry together.

    Raises:
        ValueError: ``first`` or ``cap`` is not positive, ``cap < first``, ``factor < 1`` or
            ``jitter`` is negative.
    """

    first: float
    cap: float
    factor: float = 2.0
    jitter: float = 0.0

    def __post_init__(self) -> None:
        if not (self.first > 0 and self.cap >= self.first):
            raise ValueError(
                f"backoff: first {self.first:g} s and cap {self.cap:g} s must be positive, "
                "first <= cap"
            )
        if self.factor < 1 or self.jitter < 0:
            raise ValueError(
                f"backoff: factor {self.factor:g} must be >= 1, jitter {self.jitter:g} >= 0"
            )

    def delay(self, failures: int, rnd: float = 0.0) -> float:
        """Seconds to wait after ``failures`` failures in a row (at least 1).

        Args:
            failures: Failures so far in this streak, counting the one just seen.
            rnd: A uniform random number in [0, 1) for the jitter.
        """
        steps = max(failures, 1) - 1
        # Capped before the power can overflow: a streak of years stays at the cap.
        base = self.cap if steps > 64 else min(self.cap, self.first * self.factor**steps)
        return base * (1 + self.jitter * rnd)


class Throttle:
    """One activity's failure streak: when to try again and what the log says about it.

    Args:
        what: The activity, as the log lines name it: ``cannot {what}``, e.g.
            ``renew Lease ns/x``.
        logger: Where the lines go.
        backoff: The delay rule.
        extra: ``extra`` of every log record (e.g. ``{"object": "ns/x"}``).
        sleep: Injectable ``asyncio.sleep``.
        clock: Monotonic clock (seconds), for how long a streak lasted.
        rnd: Uniform random numbers in [0, 1) (the jitter).

    Attributes:
        failures: Failures in the current streak (0: not failing).
        last_error: The latest failure of the streak (None: not failing).
    """

    def __init__(
        self,
        what: str,
        *,
        logger: logging.Logger,
        backoff: Backoff,
        extra: Mapping[str, Any] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        rnd: Callable[[], float] = random.random,
    ) -> None:
        self.what = what
        self.logger = logger
        self.backoff = backoff
        self.extra = dict(extra or {})
        self._sleep = sleep
        self._clock = clock
        self._rnd = rnd
        self.failures = 0
        self.last_error: BaseException | None = None
        self._since: float | None = None

    @property
    def failing(self) -> bool:
        """True from a failure until the next success."""
        return self.failures > 0

    def failed(self, error: BaseException, *, delay: float | None = None, note: str = "") -> float:
        """Count a failure; the first of a streak is one warning. Returns the delay.

        Args:
            error: What failed (its ``str`` goes in the line; it must carry no secret, as
                the project's error types do not).
            delay: Seconds to wait instead of the backoff's (a caller with its own
                schedule, e.g. a tenth of a certificate's remaining life).
            note: Words added to the warning, e.g. what the failure does not prove.
        """
        self.failures += 1
        self.last_error = error
        wait = self.backoff.delay(self.failures, self._rnd()) if delay is None else delay
        if self.failures == 1:
            self._since = self._clock()
            self.logger.warning(
                "cannot %s: %s%s; retrying with backoff (next try in %.1f s)",
                self.what,
                error,
                f" ({note})" if note else "",
                wait,
                extra=self.extra,
            )
        else:
            self.logger.debug(
                "cannot %s (failure %d): %s; next try in %.1f s",
                self.what,
                self.failures,
                error,
                wait,
                extra=self.extra,
            )
        return wait

    def succeeded(self) -> bool:
        """End a streak: one info line if there was one. True if it was failing."""
        if not self.failures:
            return False
        since = self._since if self._since is not None else self._clock()
        self.logger.info(
            "%s: succeeded again after %d failed tries (%.0f s)",
            self.what,
            self.failures,
            self._clock() - since,
            extra=self.extra,
        )
        self.failures = 0
        self.last_error = None
        self._since = None
        return True

    async def pause(
        self, error: BaseException, *, delay: float | None = None, note: str = ""
    ) -> None:
        """:meth:`failed`, then sleep for the delay it returned."""
        await self._sleep(self.failed(error, delay=delay, note=note))

    @contextlib.asynccontextmanager
    async def attempt(
        self, *, errors: tuple[type[BaseException], ...] = (Exception,)
    ) -> AsyncIterator[None]:
        """One try: an error of ``errors`` in the block is counted, slept on and swallowed.

        A block that ends without one ends the streak (:meth:`succeeded`). Other errors
        (and cancellation) pass through untouched.
        """
        try:
            yield
        except errors as exc:
            await self.pause(exc)
        else:
            self.succeeded()

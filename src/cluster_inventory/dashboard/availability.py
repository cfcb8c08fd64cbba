"""A member page's availability over time, asked of Prometheus: the dashboard's long-run store.

:class:`PrometheusAvailability` is the :class:`~.member.AvailabilitySource` that
``cluster-inventory dashboard --prometheus URL`` gives the page. It asks what
``cluster-inventory availability`` asks (``integrations.availability.read_availability``:
the ``ControlPlaneHealthy`` series the cluster manager's replicas export, ``max by`` profile
over every replica), narrowed to the member's first profile (every profile of one member
tells the same), once per window: 1 h, 1 d, 7 d and 30 d, each at the step that keeps it
within 10,000 points (1 s, 9 s, 61 s, 260 s: the precision of its figure), and the outages of
the last 7 days, newest first, each from the shortest window that holds its start (an outage
of the last hour to the second; a 10-second one a week ago may fall between 61-second steps).
The raw series rather than the chart's recording rules, so the figures are the command's and
a Prometheus without the rules answers too.

A page refreshes every few seconds: an answer is kept for ``ttl`` seconds per member, so an
open page costs Prometheus eight small range queries a minute, not a refresh. Prometheus
unreachable or answering nonsense is the slot's ``error`` (its URL without credentials),
never an empty history.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence

from cluster_inventory.dashboard.member import Availability
from cluster_inventory.dashboard.rows import MemberRow
from cluster_inventory.integrations.availability import (
    Outage,
    PrometheusError,
    parse_duration,
    read_availability,
    server_url,
)

__all__ = ["DEFAULT_WINDOWS", "PrometheusAvailability"]

#: The windows a member page shows, shortest first.
DEFAULT_WINDOWS = ("1h", "1d", "7d", "30d")


class PrometheusAvailability:
    """Each member's availability and outages from Prometheus's HTTP API.

    Args:
        url: Prometheus's base URL (``http://prometheus:9090``; a ``user:password@`` is sent
            as basic authentication and never shown).
        windows: Prometheus durations to show, shortest first.
        outages_window: The longest window whose outages the page lists (one of ``windows``).
        ttl: Seconds an answer is kept per member.
        timeout: Seconds per query.
        clock: Monotonic seconds (the ``ttl``).

    Raises:
        PrometheusError: ``url`` is not an ``http``/``https`` URL with a host.
        ValueError: A window is not a Prometheus duration, or ``outages_window`` is not one of
            ``windows``.
    """

    def __init__(
        self,
        url: str,
        *,
        windows: Sequence[str] = DEFAULT_WINDOWS,
        outages_window: str = "7d",
        ttl: float = 60.0,
        timeout: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self.source = server_url(url)
        self.windows = tuple((label, parse_duration(label)) for label in windows)
        if outages_window not in windows:
            raise ValueError(f"outages_window {outages_window!r} is not one of {list(windows)}")
        self.outages_window = outages_window
        self.ttl = ttl
        self.timeout = timeout
        self._clock = clock
        self._kept: dict[str, tuple[float, Availability]] = {}

    async def availability(self, member: MemberRow) -> Availability:
        """The member's availability per window and its outages (kept ``ttl`` seconds).

        Returns:
            The figures (None for a window in which no replica exported the profile), or
            an :class:`Availability` whose ``error`` says why Prometheus could not answer.
        """
        now = self._clock()
        kept = self._kept.get(member.ref)
        if kept is not None and now - kept[0] < self.ttl:
            return kept[1]
        answer = await self._ask(member.ref)
        self._kept = {ref: k for ref, k in self._kept.items() if now - k[0] < self.ttl}
        self._kept[member.ref] = (now, answer)
        return answer

    async def _ask(self, ref: str) -> Availability:
        namespace, _, name = ref.partition("/")
        figures: list[tuple[str, float | None]] = []
        outages: list[Outage] = []
        listing = True
        shorter_from: dt.datetime | None = None  # where the last (shorter) window began
        try:
            for label, seconds in self.windows:
                report = await read_availability(
                    self.url, since=seconds, namespace=namespace, name=name, timeout=self.timeout
                )
                found = next(
                    (m for m in report.members if (m.namespace, m.name) == (namespace, name)),
                    None,
                )
                figures.append((label, None if found is None else found.availability))
                if listing and found is not None:
                    # What a shorter window saw, it saw at a finer step: only older ones here.
                    outages.extend(
                        o for o in found.outages if shorter_from is None or o.start < shorter_from
                    )
                shorter_from = report.start
                listing = listing and label != self.outages_window
        except PrometheusError as exc:
            return Availability(source=self.source, error=str(exc))
        newest_first = tuple(sorted(outages, key=lambda o: o.start, reverse=True))
        return Availability(windows=tuple(figures), outages=newest_first, source=self.source)

"""Availability of each member and its outages, read back from Prometheus.

The product keeps no history of its own: each replica exports kube-state-metrics-style
series of the profiles it holds (``cluster_inventory_cluster_profile_condition``), Prometheus
keeps them, and this package asks Prometheus's HTTP API for a window of them
(:func:`read_availability`) and turns the answer into per-member availability and outages
(:mod:`~cluster_inventory.integrations.availability.history`, pure). ``cluster-inventory
availability`` prints it; docs/observability.md describes the series and the chart's
recording rules over them.
"""

from __future__ import annotations

import time

from cluster_inventory.api.constants import (
    CONDITION_CONTROL_PLANE_HEALTHY,
    METRIC_PROFILE_CONDITION,
    METRIC_PROFILE_CONDITION_REASON,
)
from cluster_inventory.integrations.availability._prometheus import (
    PrometheusError,
    query_range,
    server_url,
)
from cluster_inventory.integrations.availability.history import (
    AvailabilityReport,
    MemberHistory,
    Outage,
    SeriesError,
    TimeSeries,
    decode_matrix,
    parse_duration,
    summarize,
)

__all__ = [
    "MAX_POINTS",
    "AvailabilityReport",
    "MemberHistory",
    "Outage",
    "PrometheusError",
    "SeriesError",
    "TimeSeries",
    "condition_queries",
    "decode_matrix",
    "default_step",
    "parse_duration",
    "query_range",
    "read_availability",
    "server_url",
    "summarize",
]

#: Points per series a query asks for at most (Prometheus refuses more than 11,000).
MAX_POINTS = 10_000


def default_step(window: float) -> float:
    """Whole seconds between steps so that ``window`` takes at most :data:`MAX_POINTS`."""
    return float(max(1, -(-int(window) // MAX_POINTS)))


def _quoted(value: str) -> str:
    """``value`` as a PromQL string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def condition_queries(
    condition: str = CONDITION_CONTROL_PLANE_HEALTHY,
    namespace: str | None = None,
    name: str | None = None,
) -> tuple[str, str]:
    """The PromQL of one condition's statuses and of its reasons, one series per profile.

    ``max by`` merges what several replicas export (a failover, a sharded manager), as the
    recording rules do. ``namespace`` and ``name`` narrow it to an inventory, a profile.
    """
    matchers = f"condition={_quoted(condition)}"
    if namespace:
        matchers += f",namespace={_quoted(namespace)}"
    if name:
        matchers += f",name={_quoted(name)}"
    return (
        f"max by (namespace, name, status) ({METRIC_PROFILE_CONDITION}{{{matchers}}})",
        f"max by (namespace, name, reason) ({METRIC_PROFILE_CONDITION_REASON}{{{matchers}}})",
    )


async def read_availability(
    url: str,
    *,
    since: float,
    step: float | None = None,
    until: float | None = None,
    namespace: str | None = None,
    condition: str = CONDITION_CONTROL_PLANE_HEALTHY,
    timeout: float = 30.0,
    name: str | None = None,
) -> AvailabilityReport:
    """Each member's availability and outages over the last ``since`` seconds.

    Args:
        url: Prometheus's base URL.
        since: Seconds back from ``until``.
        step: Seconds between steps (default :func:`default_step`): the precision of every
            figure. Use the scrape interval or more.
        until: Unix seconds of the window's end (default: now).
        namespace: Only this inventory namespace.
        condition: The condition that means available (``ControlPlaneHealthy``).
        timeout: Seconds per query.
        name: Only profiles of this name (with ``namespace``: one profile).

    Returns:
        The report (no members when no profile was exported in the window).

    Raises:
        PrometheusError: Prometheus was not reached, refused a query or answered something
            else than the series.
        ValueError: ``since`` or ``step`` is not positive.
    """
    if since <= 0 or (step is not None and step <= 0):
        raise ValueError(f"since ({since}) and step ({step}) must be more than zero")
    end = time.time() if until is None else until
    step = step or default_step(since)
    if since / step > 11_000:
        raise ValueError(
            f"a step of {step:g}s over {since:g}s asks for more than 11,000 points per series "
            f"(Prometheus's limit): use a step of at least {default_step(since):g}s"
        )
    start = end - since
    statuses, reasons = condition_queries(condition, namespace, name)
    conditions = await query_range(url, statuses, start=start, end=end, step=step, timeout=timeout)
    why = await query_range(url, reasons, start=start, end=end, step=step, timeout=timeout)
    return summarize(conditions, why, start=start, end=end, step=step)

"""Events written for one member flapping every second: client-go's filter against none.

One ClusterProfile's member changes health every second: a ``Warning ControlPlaneUnhealthy``
report, then a ``Normal ControlPlaneHealthy`` one, and so on. Each report goes through
:class:`cluster_inventory.kube.events.EventRecorder` to a real kube-apiserver, twice in the
same run against the same server:

- **filtered**: the recorder as shipped (client-go's correlator: counting, aggregation and
  the spam filter, 25 at once then one per 300 s per object and type);
- **unfiltered** (the baseline): the same recorder with the spam filter opened wide (a burst
  and a refill no flapping reaches), so every report is a write (a create or a
  ``series.count`` patch).

Time is the recorder's injected clock, advanced one second per report, so the spam filter's
five-minute refill shows without waiting half an hour; every write is a real request. The
figures are Events written (creates plus series patches) per minute: the first minute, the
steady state (every later minute), and the ratio to the baseline. The hub's Events are read
back at the end: one per report kind, their ``series.count`` never above the reports made.

Usage: uv run python bench/events_flapping.py [--minutes 30]
       uv run python bench/events_flapping.py --smoke   (6 simulated minutes)
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import statistics
import time

from _common import SMOKE_HELP, require, require_times
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.kube.events import CorrelatorOptions, EventRecorder
from cluster_inventory.testing import ControlPlane

NAMESPACE = "default"
T0 = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
UNFILTERED = CorrelatorOptions(burst=10**9, refill_interval=1e-9)


class SimulatedClock:
    """Monotonic seconds the benchmark advances itself; ``wall()`` is the same instant."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def wall(self) -> dt.datetime:
        return T0 + dt.timedelta(seconds=self.now)


async def flap(
    client: kube.ApiClient, name: str, minutes: int, options: CorrelatorOptions | None
) -> tuple[list[int], float, list[dict[str, object]]]:
    """Writes per simulated minute, real seconds taken, and the Events left on the hub."""
    clock = SimulatedClock()
    recorder = EventRecorder(
        client, options=options, clock=clock, now=clock.wall, registry=CollectorRegistry()
    )
    ref = {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "namespace": NAMESPACE,
        "name": name,
        "uid": f"uid-{name}",
    }
    per_minute = [0] * minutes
    started = time.perf_counter()
    for second in range(minutes * 60):
        clock.now = float(second + 1)
        healthy = second % 2 == 1
        written = await recorder.record(
            ref,
            reason="ControlPlaneHealthy" if healthy else "ControlPlaneUnhealthy",
            note="/readyz ok" if healthy else "/readyz: [-]etcd failed: context deadline exceeded",
            action="Probe",
            controller="cluster-inventory.dev/manager",
            instance="bench-replica",
            event_type="Normal" if healthy else "Warning",
        )
        per_minute[second // 60] += written
    elapsed = time.perf_counter() - started
    listed = await kube.list_objects(
        client, kube.EVENTS, NAMESPACE, field_selector=f"regarding.name={name}"
    )
    return per_minute, elapsed, list(listed["items"])


def summary(label: str, per_minute: list[int]) -> tuple[float, float]:
    first, later = per_minute[0], per_minute[1:]
    steady = statistics.fmean(later) if later else 0.0
    print(
        f"{label:<11} first minute {first:>3} Events/min   steady state {steady:6.2f} Events/min"
        f"   total {sum(per_minute):>5} in {len(per_minute)} min"
    )
    return float(first), steady


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=int, default=30, help="simulated minutes of flapping")
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    minutes = 6 if args.smoke else args.minutes
    require(minutes >= 2, "--minutes must be at least 2")
    hub = ControlPlane("bench-events")
    await hub.start()
    try:
        async with await hub.client() as client:
            base, base_s, base_events = await flap(
                client, "flapping-unfiltered", minutes, UNFILTERED
            )
            kept, kept_s, kept_events = await flap(client, "flapping-filtered", minutes, None)
    finally:
        await hub.stop()
    reports = minutes * 60
    print(f"one member flapping every second, {reports} reports over {minutes} simulated minutes")
    _, base_steady = summary("unfiltered", base)
    first, steady = summary("filtered", kept)
    ratio = steady / base_steady if base_steady else float("nan")
    print(
        f"ratio filtered/unfiltered: steady state {ratio:.4f}, total "
        f"{sum(kept) / sum(base):.4f} (real time {kept_s:.1f}s vs {base_s:.1f}s)"
    )
    counts = {str(e["reason"]): int((e.get("series") or {}).get("count") or 1) for e in kept_events}
    print(f"hub's Events for the filtered member: {len(kept_events)}, series counts {counts}")
    require_times(filtered_s=kept_s, unfiltered_s=base_s)
    require(sum(base) == reports, f"unfiltered wrote {sum(base)} of {reports} reports")
    require(len(base_events) == 2 and len(kept_events) == 2, "one Event per report kind")
    require(first == 50, f"the burst is 25 per type: first minute {first}")
    require(sum(kept[1:5]) == 0, "no write between the burst and the first refill")
    require(sum(counts.values()) <= reports, "a series never counts more than was reported")


if __name__ == "__main__":
    asyncio.run(main())

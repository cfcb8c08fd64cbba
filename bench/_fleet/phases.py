"""The phases of a run that every (N, R) has: the spawn, the cold start, the token Secrets,
the rest and the property changes. Each returns its record (``record``)."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from _common import bounded, percentile, rss_mib

from cluster_inventory.kube.informer import Informer

from .live import LiveRun
from .meter import CpuMeter, open_fds
from .profiles import ProfileWatch, Waiter, full, holder, props, wait
from .record import ColdStart, CurvePoint, PropertyChanges, Rest, Tokens
from .replicas import replica_name
from .scrapes import hub_requests, hub_writes, member_rate, proxy_stats


@dataclass(frozen=True, kw_only=True)
class Spawned:
    """The replicas just spawned: the waiter for every profile at full status, and the CPU
    meter's, the proxies' and the hub's counters read just before."""

    all_full: Waiter
    cpu: dict[str, float]
    proxy: dict[str, float]
    hub: Counter[str]


async def spawn_replicas(live: LiveRun) -> Spawned:
    """Read the counters, then spawn the R replicas (``live.started`` is that moment)."""
    all_full = live.watch.waiter({live.vm.name(i) for i in range(live.n)}, lambda _, o: full(o))
    cpu = live.meter.snapshot()
    proxy = await asyncio.to_thread(proxy_stats, live.vm)
    hub = await hub_requests(live.hub, writes_only=False)
    live.started = time.perf_counter()
    for k in range(live.r):
        live.spawn(replica_name(live.names.run, k))
    return Spawned(all_full=all_full, cpu=cpu, proxy=proxy, hub=hub)


async def sample_curve(
    meter: CpuMeter,
    watch: ProfileWatch,
    tokens: Informer,
    started: float,
    out: list[CurvePoint],
    every: float = 2.0,
) -> None:
    """Every ``every`` s: profiles, full ones, token Secrets, and cores by process since the
    last sample (the cold start's curve: where a saturated machine spends its time)."""
    prev = meter.snapshot()
    while True:
        await asyncio.sleep(every)
        cur = meter.snapshot()
        out.append(
            {
                "t": round(cur["wall"] - started, 2),
                "profiles": len(watch.informer.keys()),
                "full": len(watch.full),
                "tokens": len(tokens.keys()),
                "cores": {k: round(v, 3) for k, v in CpuMeter.cores(prev, cur).items()},
            }
        )
        prev = cur


async def cold_start(live: LiveRun, spawned: Spawned) -> tuple[ColdStart, dict[str, float]]:
    """Until every profile has full status; and the CPU meter's snapshot at that moment.

    What it cost per member: hub requests by verb and resource (every client's, the
    benchmark's watch included), member requests through the proxy.

    Raises:
        RuntimeError: not every profile had full status after ``Settings.timeout``.
    """
    n = live.n
    await wait(spawned.all_full, live.s.timeout, f"N={n} R={live.r}: profiles at full status")
    at = spawned.all_full.at
    live.windows["cold"] = (live.started, at)
    first_profile = live.watch.first_event - live.started
    joined_after = {name: rep.joined_after() for name, rep in live.replicas.items()}
    cpu_full = live.meter.snapshot()
    spent = await hub_requests(live.hub, writes_only=False) - spawned.hub
    full_stats = await asyncio.to_thread(proxy_stats, live.vm)
    await live.scrape("cold")
    record = ColdStart(
        seconds=at - live.started,
        first_profile_s=first_profile,
        joined_after_s=joined_after,
        cores=CpuMeter.cores(spawned.cpu, cpu_full),
        hub_requests_per_member={k: round(v / n, 2) for k, v in spent.most_common(10)},
        member_requests_per_member=round(
            (full_stats["requests"] - spawned.proxy["requests"]) / n, 2
        ),
    )
    return record, cpu_full


async def token_secrets(live: LiveRun, spawned: Spawned, cpu_full: dict[str, float]) -> Tokens:
    """Until every consumer token Secret exists (the cold start's last step).

    Raises:
        RuntimeError: fewer than N token Secrets after ``Settings.timeout``.
    """
    deadline = time.perf_counter() + live.s.timeout
    while len(live.tokens.keys()) < live.n:
        if time.perf_counter() > deadline:
            raise RuntimeError(
                f"{len(live.tokens.keys())}/{live.n} token Secrets after {live.s.timeout} s"
            )
        await asyncio.sleep(0.1)
    seconds = time.perf_counter() - live.started
    cpu_tokens = live.meter.snapshot()
    stats = await asyncio.to_thread(proxy_stats, live.vm)
    return Tokens(
        seconds=seconds,
        member_requests=stats["requests"] - spawned.proxy["requests"],
        cores=CpuMeter.cores(cpu_full, cpu_tokens),
    )


async def rest(live: LiveRun) -> Rest:
    """``Settings.rest`` seconds at rest: member requests (mean and busiest second), cores,
    RSS, open files, hub writes by resource, and who holds how many profiles at its end."""
    writes_before = await hub_writes(live.hub)
    stats_a = await asyncio.to_thread(proxy_stats, live.vm)
    await live.scrape("rest_start")
    cpu_a = live.meter.snapshot()
    peak = 0.0
    last = stats_a
    while time.perf_counter() - cpu_a["wall"] < live.s.rest:
        await asyncio.sleep(min(1.0, live.s.rest - (time.perf_counter() - cpu_a["wall"])))
        now = await asyncio.to_thread(proxy_stats, live.vm)
        peak, last = max(peak, member_rate(last, now)), now
    cpu_b = live.meter.snapshot()
    live.windows["rest"] = (cpu_a["wall"], cpu_b["wall"])
    await live.scrape("rest_end")
    stats_b = await asyncio.to_thread(proxy_stats, live.vm)
    writes_after = await hub_writes(live.hub)
    wall = cpu_b["wall"] - cpu_a["wall"]
    delta = writes_after - writes_before
    return Rest(
        member_requests_per_s=member_rate(stats_a, stats_b),
        member_requests_peak_per_s=peak,
        proxy_open_connections=stats_b.get("openConnections"),
        cores=CpuMeter.cores(cpu_a, cpu_b),
        rss_mib={name: rss_mib(rep.proc.pid) for name, rep in live.replicas.items()},
        open_fds={label: sum(open_fds(p) for p in ps) for label, ps in live.pids.items()},
        hub_writes_per_s=sum(delta.values()) / wall,
        hub_writes_by_resource={k: v / wall for k, v in delta.most_common()},
        owned=dict(Counter(holder(p) for p in live.watch.informer.items())),
    )


def change_sample(n: int, changes: int) -> list[int]:
    """The members whose property is changed: ``changes`` of the N, evenly spread."""
    step = max(1, n // min(n, changes))
    return list(range(0, n, step))[:changes]


async def property_changes(live: LiveRun, sample: list[int], change: str) -> PropertyChanges:
    """Seconds from before each write on a member until its profile shows the value, one
    member at a time (property ``change.<member>``).

    Raises:
        RuntimeError: a change did not show within 30 s.
    """
    latencies = []
    for k, i in enumerate(sample):
        name, value = live.vm.name(i), f"v{k + 1}"
        prop = f"{change}.{name}"
        seen = live.watch.waiter({name}, _shows(prop, value))
        started = time.perf_counter()
        await live.vm.set_property(i, change, value)
        latencies.append(await wait(seen, 30, f"property change on {name}") - started)
        live.watch.waiters.remove(seen)
        await asyncio.sleep(0.05)
    return PropertyChanges(
        count=len(latencies),
        p50_s=statistics.median(latencies),
        p99_s=percentile(latencies, 0.99),
    )


def _shows(prop: str, value: str) -> Callable[[str, dict[str, Any]], bool]:
    """A waiter's test: the profile's property ``prop`` is ``value``."""
    return lambda _, o: props(o).get(prop) == value


async def write_sample(live: LiveRun, sample: list[int], change: str, value: str) -> None:
    """Set property ``change`` to ``value`` on every sample member (32 in flight)."""
    await bounded([live.vm.set_property(i, change, value) for i in sample], 32)

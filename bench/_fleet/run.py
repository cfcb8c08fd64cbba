"""One (N, R) run of the manager mode, phase by phase, into one :class:`record.Run`.

Set-up (namespaces, the floors, N registrations, the sample's property), the watches, the
spawn, then the phases (``phases``, ``overload``, ``takeover``); a phase that fails ends the
run with ``error`` and the figures so far. The teardown always counts what the watches saw
(before its own Lease deletions), stops the replicas and removes the run's objects.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections import Counter
from typing import Any

import yaml
from _common import bounded, percentile
from _cpu_limit import CpuLimit

from cluster_inventory import kube
from cluster_inventory.api.constants import LABEL_CLUSTER_MANAGER
from cluster_inventory.kube.informer import Informer
from cluster_inventory.manager import registration_secret
from cluster_inventory.testing import Fleet
from cluster_inventory_workshop.virtual_members import VirtualMembers

from . import overload, phases, takeover
from .leases import LeaseWatch
from .live import LiveRun
from .meter import CpuMeter
from .namespaces import cleanup, delete_collection, member_floor, namespaces_and_floor
from .profiles import ProfileWatch
from .record import CurvePoint, End, Run, RunSettings, SetUp, Watched
from .replicas import stop
from .settings import RunNames, Settings, commit


async def run_one(
    fleet: Fleet, vm: VirtualMembers, hub: kube.ApiClient, n: int, r: int, s: Settings
) -> Run:
    """N virtual members, R replicas: every phase the settings ask for, and the teardown.

    Raises:
        kube.KubeError: the set-up failed (a later phase's error is the record's ``error``).
    """
    names = RunNames.of(n, r, s)
    settings, limit = _settings(vm, n, r, s, names)
    setup = await set_up(vm, hub, names, n)
    sample = phases.change_sample(n, s.changes)
    change = f"change-{names.run}"
    # The property exists before the cold start, so each measured change is an update of a
    # watched object.
    await bounded([vm.set_property(i, change, "v0") for i in sample], 32)
    live = await watch(fleet, vm, hub, n, r, s, names, limit)
    spawned = await phases.spawn_replicas(live)
    curve: list[CurvePoint] = []
    figures: dict[str, Any] = {}  # Run's fields, each phase's record as it ends
    try:
        await _phases(live, spawned, sample, change, curve, figures)
    except Exception as exc:  # the figures so far are kept and printed with the error
        figures["error"] = f"{type(exc).__name__}: {exc}"
        figures["full_at_error"] = len(live.watch.full)
    finally:
        watched, end = await _teardown(live)
    return Run(
        settings=settings,
        setup=setup,
        cold_curve=curve,
        replica_scrapes=live.scrapes,
        watched=watched,
        end=end,
        **figures,
    )


def _settings(
    vm: VirtualMembers, n: int, r: int, s: Settings, names: RunNames
) -> tuple[RunSettings, CpuLimit | None]:
    """The run's settings and the machine's load now; the replicas' CPU limit, if any
    (``--cpu-quota`` from their start, or ``--squeeze`` later)."""
    loadavg, head = os.getloadavg()[0], commit()
    limit = CpuLimit(s.cpu_quota, f"fleet-scale-{names.run}") if s.cpu_quota or s.squeeze else None
    settings = RunSettings(
        n=n,
        r=r,
        cpu_quota=s.cpu_quota,
        squeeze=s.squeeze,
        squeeze_for=s.squeeze_for if s.squeeze else None,
        probe_interval=s.probe_interval,
        lease_duration=s.lease_duration,
        renew_interval=s.renew_interval,
        rest=s.rest,
        real_members=len(vm.clusters),
        proxies=len(vm.processes),
        loadavg_before=loadavg,
        commit=head,
        cpu_limit=limit.kind if limit else None,
    )
    return settings, limit


async def set_up(vm: VirtualMembers, hub: kube.ApiClient, names: RunNames, n: int) -> SetUp:
    """The run's namespaces and the floors, then one registration Secret per member (32 in
    flight, all in ``names.system``, for the one cluster set ``names.run``)."""
    floor = await namespaces_and_floor(
        hub, names.system, names.floor, names.inventory, names.run, n
    )
    await delete_collection(hub, kube.CLUSTER_PROFILES, names.floor)
    mfloor = await member_floor(vm, n)
    started = time.perf_counter()
    await bounded(
        [
            kube.apply(
                hub,
                kube.SECRETS,
                registration_secret(
                    vm.name(i), names.system, yaml.safe_dump(vm.kubeconfig(i)), [names.run]
                ),
                field_manager="bench",
            )
            for i in range(n)
        ],
        32,
    )
    return SetUp(
        floor_s=floor, member_floor_s=mfloor, registrations_s=time.perf_counter() - started
    )


async def watch(
    fleet: Fleet,
    vm: VirtualMembers,
    hub: kube.ApiClient,
    n: int,
    r: int,
    s: Settings,
    names: RunNames,
    limit: CpuLimit | None,
) -> LiveRun:
    """The run's three watches started and synced (profiles, shard Leases, token Secrets),
    before any replica, and the CPU meter over every process of the fleet."""
    profiles = ProfileWatch(hub, names.run, names.inventory)
    leases = LeaseWatch(hub, names.system, names.run, s.renew_interval)
    tokens = Informer(
        hub,
        kube.SECRETS,
        namespace=names.inventory,
        label_selector=f"{LABEL_CLUSTER_MANAGER}={names.run}",
        name="bench token Secrets",
        metadata_only=True,
    )
    for informer in (profiles.informer, leases.informer, tokens):
        await informer.__aenter__()
    for informer in (profiles.informer, leases.informer, tokens):
        await informer.wait_synced()
    pids: dict[str, list[int]] = {
        "hub apiserver": [fleet.hub.apiserver_process.pid],
        "member apiservers": [m.apiserver_process.pid for m in fleet.members.values()],
        "etcd": [fleet.etcd.process.pid],
        "proxy": [proc.pid for proc in vm.processes if proc.pid is not None],
        "bench": [os.getpid()],
    }
    return LiveRun(
        fleet=fleet,
        vm=vm,
        hub=hub,
        n=n,
        r=r,
        s=s,
        names=names,
        limit=limit,
        watch=profiles,
        leases=leases,
        tokens=tokens,
        pids=pids,
        meter=CpuMeter(pids),
    )


async def _phases(
    live: LiveRun,
    spawned: phases.Spawned,
    sample: list[int],
    change: str,
    curve: list[CurvePoint],
    figures: dict[str, Any],
) -> None:
    """Each phase in turn, its record into ``figures`` (``Run``'s fields) as it ends."""
    s = live.s
    sampler = asyncio.create_task(
        phases.sample_curve(live.meter, live.watch, live.tokens, live.started, curve)
    )
    try:
        figures["cold"], cpu_full = await phases.cold_start(live, spawned)
        figures["tokens"] = await phases.token_secrets(live, spawned, cpu_full)
    finally:
        sampler.cancel()
    await asyncio.sleep(min(5.0, s.rest / 5))  # the last writes' echoes
    figures["rest"] = await phases.rest(live)
    figures["property_changes"] = await phases.property_changes(live, sample, change)
    if s.squeeze and live.limit:
        figures["squeeze"] = await overload.squeeze(live, live.limit, sample)
        figures["drain"] = await overload.drain(live, sample)
    if live.r > 1:
        cpu_kill = live.meter.snapshot()
        figures["kill"], handover = await takeover.kill(live)
        figures["join"] = await takeover.join(live, handover)
        figures["kill_cores"] = CpuMeter.cores(cpu_kill, live.meter.snapshot())
        live.windows["kill_join"] = (live.killed, time.perf_counter())
    figures["count_end"] = len(live.watch.informer.keys())


async def _teardown(live: LiveRun) -> tuple[Watched, End]:
    """What the watches saw, counted before the teardown (whose Lease deletions the
    benchmark causes); the replicas' last metrics; then everything stopped and removed."""
    windows = live.windows
    windows["all"] = (live.started, time.perf_counter())
    if live.victim and "kill_join" not in windows:  # the join did not settle
        windows["kill_join"] = (live.killed, windows["all"][1])
    watched = _watched(live)
    live.leases.stop()
    replica_metrics = {name: rep.metrics() for name, rep in live.replicas.items()}
    throttled = live.limit.throttled() if live.limit else None
    await stop(live.replicas.values())
    tag = f"N={live.n} R={live.r}"
    if live.limit and (left := live.limit.remove()):
        print(f"{tag}: cgroups not removed: {left}", file=sys.stderr)
    for informer in (live.tokens, live.leases.informer, live.watch.informer):
        await informer.__aexit__()
    try:
        await cleanup(live.vm, live.hub, live.names.run, live.names.system, live.names.inventory)
    except kube.KubeError as exc:  # the next run has its own names; say it and go on
        print(f"{tag}: cleanup failed: {exc}", file=sys.stderr)
    end = End(
        replica_metrics=replica_metrics,
        cpu_throttled_s=throttled,
        deleted=live.watch.deleted,
        tracebacks=sum(rep.tracebacks() for rep in live.replicas.values()),
        exit_codes={name: rep.proc.returncode for name, rep in live.replicas.items()},
    )
    return watched, end


def _watched(live: LiveRun) -> Watched:
    """False health transitions, shard changes and renewal lateness in each phase window."""
    watch, leases, windows = live.watch, live.leases, live.windows
    changes = leases.unexpected(live.victim, live.killed)

    def within(t: float, window: tuple[float, float]) -> bool:
        return window[0] <= t <= window[1]

    late = {
        phase: [x for t, _, x in leases.lateness if within(t, window)]
        for phase, window in windows.items()
    }
    start = min(w[0] for w in windows.values())
    false = [x for x in watch.false_transitions if x[0] >= start]
    return Watched(
        false_transitions={
            phase: sum(1 for t, *_ in watch.false_transitions if within(t, window))
            for phase, window in windows.items()
        },
        shard_changes={
            phase: sum(1 for t, _, _ in changes if within(t, window))
            for phase, window in windows.items()
        },
        lease_lateness_max_s={phase: max(x) if x else None for phase, x in late.items()},
        lease_lateness_p99_s={
            phase: percentile(x, 0.99) if x else None for phase, x in late.items()
        },
        false_transition_profiles=len({name for _, name, _, _ in false}),
        false_transition_reasons=dict(Counter(reason for _, _, reason, _ in false)),
        false_transitions_at_handover=sum(1 for *_, moved in false if moved),
        shard_change_log=[
            [round(t - start, 2), who, what] for t, who, what in changes if t >= start
        ],
        windows={
            k: [round(a - live.started, 2), round(b - live.started, 2)]
            for k, (a, b) in windows.items()
        },
    )

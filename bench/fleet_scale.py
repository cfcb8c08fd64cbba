"""Cluster manager replicas over N distinct members: cold start, cost at rest, a kill, a join.

For each N in --sizes and R in --replicas, in one process against one local Fleet (hub + 2
real members) and one ``VirtualMembers`` proxy (``cluster_inventory.testing``: member ``n``
is ``https://127.0.0.1:PORT/members/<n>``, its own ``kube-system`` UID, every request
answered by a real kube-apiserver):

- **floor**: seconds to create N ClusterProfiles and write their status directly (16 in
  flight), on the same hub just before the run;
- **member floor**: seconds for a plain client (``cluster_inventory.kube``, not the manager)
  to do per member the fewest requests a push-mode manager must make: a new client, one GET
  ``/readyz``, one LIST of ClusterProperty, one WATCH of them opened (and closed), 64
  members in flight, all N members;
- N registration Secrets (one per virtual member), all in **one inventory** (one labelled
  namespace, one cluster set), then R ``cluster-inventory manager run --sharding`` processes
  (``POD_NAME`` = replica identity, own manager name per run): **cold start** = seconds from
  spawning them until every profile has full status (version, ControlPlaneHealthy=True,
  Joined=True, PropertiesSynced=True, properties, access provider), and its ratio to the
  floor, and to ``hub floor + member floor`` (the target: at most 2); then seconds until
  every consumer token Secret exists;
- **rest** over one probe interval (every member probed once whatever its phase; --rest to
  change, the target is 10 minutes) once every token Secret exists: CPU (cores, from
  /proc) and RSS per replica, and **hub writes per second at rest**, from the hub
  kube-apiserver's own ``apiserver_request_total`` (mutating verbs: POST, PUT, PATCH, APPLY,
  DELETE, DELETECOLLECTION) scraped before and after with the fleet's admin credentials, so
  it counts every writer (the replicas' Leases and status, the apiserver's own Leases);
  CPU of every other process too (hub and member apiservers, etcd, proxy, this process) to
  show where a 2-core machine saturates;
- **CPU by process group** in each phase (cold start, rest, kill and join): hub (its
  apiserver and the etcd the fleet shares), replicas (sum and busiest), simulated members
  (the virtual-member proxies and the member apiservers), this process;
- **false health transitions**: members never go down here, so every ControlPlaneHealthy
  change away from True that the profile watch sees, after that profile was True, is false;
  counted per phase;
- **shard membership changes** as seen from outside: a watch of the shard group's Leases
  counts a replica gone (Lease deleted, or its renewTime unchanged for longer than
  leaseDurationSeconds on this process's monotonic clock) or back, except the benchmark's
  own (a replica's first Lease, the victim gone once after the kill); and **Lease renewal
  lateness**, the gap between two renewTime changes of one Lease minus the renew interval
  (max and p99 per phase);
- the replicas' own view, where they export it (``-`` if not):
  ``cluster_inventory_member_health_transitions_total``,
  ``cluster_inventory_shard_membership_changes_total``,
  ``cluster_inventory_lease_renewal_lateness_seconds``,
  ``cluster_inventory_event_loop_lag_seconds`` (p99 and the bucket holding the maximum per
  replica), ``cluster_inventory_probes_deferred_total``;
- **property change** p50/p99 over --changes changes, each on a distinct member
  (``VirtualMembers.set_property``), from before the write on the member until this process's
  profile watch sees the value;
- R > 1 only: **kill**: SIGKILL the replica holding most profiles, at once change a property
  on each of its members, seconds until all of them show it, held by a live replica;
  **lost** = profiles deleted or missing (must be 0); **written by two replicas** = profiles
  whose holder annotation (``cluster-inventory.dev/shard-holder``) did anything but stay or
  move once from the victim to its rendezvous owner among the survivors, plus status
  changes carrying the victim as holder with a resourceVersion above a hub write made right
  after the kill (must be 0); then **join**: one more replica; profiles whose holder changed
  against the exact rendezvous prediction and ``N/(live+1)``.

Every watch event is seen by one informer started before the replicas, so a deletion or a
holder flip between two polls cannot be missed. Results are printed (one table row per
(N, R)) and merged into --json (default ``bench/results/fleet_scale.json``), and the plot of
cost against N is drawn from that file into --plot (default ``docs/images/fleet_scale.png``).

Overload: --cpu-quota CORES runs each replica under a CPU limit of CORES (a pod's
``limits.cpu``; ``_cpu_limit.py``) from its start; --squeeze CORES runs them unlimited and,
after the rest and the property changes, limits every one to CORES for --squeeze-for
seconds, then lifts the limit: **squeeze** = profiles saying ``ClusterManagerBehind``
(most at once, at the end), property changes that got through, false transitions, shard
changes and Lease lateness while past capacity; **drain** = seconds from lifting the limit
until a new property change shows on every sample member and no profile says behind. Both
are recorded apart from the unlimited runs.

``--mode agents`` measures pull-mode agent members instead (``bench/_agents.py``: N
simulated agents in one child process against the hub, the same floor, replicas, profile
watch, CPU meter and hub write counts); its records carry ``mode: agents`` in the same json,
its rows a table of their own. ``--smoke`` runs both modes.

Usage: uv run python bench/fleet_scale.py --sizes 1000 3000 10000 --replicas 1 3
           [--probe-interval 30] [--changes 100] [--rest SECONDS] [--cpu-quota CORES]
           [--squeeze CORES [--squeeze-for SECONDS]]
       uv run python bench/fleet_scale.py --plot-only   (table and plot from --json)
       uv run python bench/fleet_scale.py --mode agents --sizes 1000 10000 --replicas 1
           [--agent-lease 60] [--agent-heartbeat-multiple 5] [--agent-kill 20] [--changes 100]
       uv run python bench/fleet_scale.py --smoke   (N=12, R=1 and 3, short timings; then
           agents N=8, R=1, a 1 s lease)
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime as dt
import json
import os
import re
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from _common import SMOKE_HELP, bounded, cpu_seconds, percentile, require, require_times, rss_mib
from _cpu_limit import CpuLimit, limit_kind
from _prometheus import histogram_bounds, metric_delta, metric_total, parse_metrics, sample_of

from cluster_inventory import kube
from cluster_inventory.api.constants import (
    ANNOTATION_SHARD_HOLDER,
    LABEL_CLUSTER_MANAGER,
    LABEL_CLUSTER_SET,
)
from cluster_inventory.controller.sharding import LABEL_SHARD_GROUP, rendezvous_owner
from cluster_inventory.kube.informer import Informer, strip_managed_fields
from cluster_inventory.manager import registration_secret
from cluster_inventory.manager.verdicts import REASON_BEHIND
from cluster_inventory.testing import Fleet
from cluster_inventory_workshop.virtual_members import LABEL_VIRTUAL_MEMBER, VirtualMembers

CLI = Path(sys.executable).parent / "cluster-inventory"
ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "fleet_scale.json"
PLOT = ROOT / "docs" / "images" / "fleet_scale.png"
SHARED_PROPERTY = "region.example.com"
MUTATING = frozenset({"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"})
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Timings of one invocation (seconds), printed with the results."""

    probe_interval: float
    lease_duration: float
    renew_interval: float
    rest: float
    changes: int
    timeout: float
    cpu_quota: float | None = None
    squeeze: float | None = None
    squeeze_for: float = 150.0


# -- what the bench sees of the profiles ---------------------------------------------------
def conditions(profile: dict[str, Any]) -> dict[str, str]:
    """Condition type -> status."""
    return {c["type"]: c["status"] for c in (profile.get("status") or {}).get("conditions") or ()}


def full(profile: dict[str, Any]) -> bool:
    """Every status field the manager writes is there and good (as ``manager_scale.py``)."""
    status = profile.get("status") or {}
    conds = conditions(profile)
    return bool(
        (status.get("version") or {}).get("kubernetes")
        and conds.get("ControlPlaneHealthy") == "True"
        and conds.get("Joined") == "True"
        and conds.get("cluster-inventory.dev/PropertiesSynced") == "True"
        and status.get("properties")
        and status.get("accessProviders")
    )


def holder(profile: dict[str, Any]) -> str:
    return str((profile["metadata"].get("annotations") or {}).get(ANNOTATION_SHARD_HOLDER) or "")


def props(profile: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["value"] for p in (profile.get("status") or {}).get("properties") or ()}


class Waiter:
    """Set once ``test(name, profile)`` held for every name in ``names`` (from watch events)."""

    def __init__(self, names: set[str], test: Callable[[str, dict[str, Any]], bool]) -> None:
        self.pending = set(names)
        self.test = test
        self.done = asyncio.Event()
        self.at = 0.0
        self.times: list[float] = []  # when each name passed, in order

    def check(self, name: str, obj: dict[str, Any], now: float) -> None:
        if name in self.pending and self.test(name, obj):
            self.pending.discard(name)
            self.times.append(now)
            if not self.pending and not self.done.is_set():
                self.at = now
                self.done.set()


class ProfileWatch:
    """One run's profiles as one watch reports them, started before any replica.

    Keeps per profile the sequence of holders seen (with the time of each change), every
    event that changed a status (time, name, holder, resourceVersion), the deletions, the
    set of profiles at full status, and every ControlPlaneHealthy change away from True
    (time, name, the condition's reason, whether the holder changed since the profile was
    True): no member goes down in this benchmark, so each of those is false.
    """

    def __init__(self, hub: kube.ApiClient, manager: str, namespace: str) -> None:
        self.namespace = namespace
        self.informer = Informer(
            hub,
            kube.CLUSTER_PROFILES,
            namespace=namespace,
            label_selector=f"{LABEL_CLUSTER_MANAGER}={manager}",
            name="bench profiles",
            transform=strip_managed_fields,
        )
        self.full: set[str] = set()
        self.deleted = 0
        self.holders: dict[str, list[tuple[float, str]]] = {}
        self.status_changes: list[tuple[float, str, str, int]] = []
        self.first_event = 0.0
        self.waiters: list[Waiter] = []
        self.healthy: dict[str, tuple[str, str]] = {}
        self.false_transitions: list[tuple[float, str, str, bool]] = []
        #: Profiles whose ControlPlaneHealthy says the manager is behind (REASON_BEHIND), the
        #: most at once since :meth:`reset_behind`, and every profile that said so.
        self.behind: set[str] = set()
        self.behind_max = 0
        self.behind_ever: set[str] = set()
        self.informer.add_handler(self._on_event)

    def reset_behind(self) -> None:
        self.behind_max = len(self.behind)
        self.behind_ever = set(self.behind)

    def _on_event(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        now = time.perf_counter()
        self.first_event = self.first_event or now
        name = str(obj["metadata"]["name"])
        if event == "DELETED":
            self.deleted += 1
            self.full.discard(name)
            self.healthy.pop(name, None)
            self.behind.discard(name)
            return
        who = holder(obj)
        cond = next(
            (
                c
                for c in (obj.get("status") or {}).get("conditions") or ()
                if c["type"] == "ControlPlaneHealthy"
            ),
            {},
        )
        was, held_by = self.healthy.get(name, ("", ""))
        if was == "True" and cond.get("status") != "True":
            reason = f"{cond.get('status', 'absent')}/{cond.get('reason', '')}"
            self.false_transitions.append((now, name, reason, who != held_by))
        self.healthy[name] = (cond.get("status", ""), who)
        if cond.get("reason") == REASON_BEHIND:
            self.behind.add(name)
            self.behind_ever.add(name)
            self.behind_max = max(self.behind_max, len(self.behind))
        else:
            self.behind.discard(name)
        seen = self.holders.setdefault(name, [])
        if not seen or seen[-1][1] != who:
            seen.append((now, who))
        if (old or {}).get("status") != obj.get("status"):
            rv = int(obj["metadata"].get("resourceVersion") or 0)
            self.status_changes.append((now, name, who, rv))
        if full(obj):
            self.full.add(name)
        else:
            self.full.discard(name)
        for waiter in self.waiters:
            waiter.check(name, obj, now)

    def waiter(self, names: set[str], test: Callable[[str, dict[str, Any]], bool]) -> Waiter:
        """A :class:`Waiter` that also counts what already holds."""
        waiter = Waiter(names, test)
        now = time.perf_counter()
        for name in list(waiter.pending):
            obj = self.informer.get(f"{self.namespace}/{name}")
            if obj is not None:
                waiter.check(name, obj, now)
        self.waiters.append(waiter)
        return waiter

    def by_name(self) -> dict[str, dict[str, Any]]:
        return {str(p["metadata"]["name"]): p for p in self.informer.items()}

    def holders_after(self, since: float) -> dict[str, list[str]]:
        """Per profile: its holder at ``since`` followed by each different holder seen after.

        An empty holder (a replica releasing a profile it no longer owns, before the new
        owner claims it) is left out: a handover reads ``[old, new]`` either way.
        """
        out = {}
        for name, seen in self.holders.items():
            held = [who for t, who in seen if t <= since and who][-1:]
            for t, who in seen:
                if t > since and who and (not held or held[-1] != who):
                    held.append(who)
            out[name] = held
        return out


def _quantiles(times: list[float]) -> dict[str, float]:
    """The first, 50%, 90% and 99% of ``times`` (seconds, rounded), or {} if none."""
    times = sorted(times)
    return {
        str(q): round(times[min(len(times) - 1, int(q * len(times)))], 2)
        for q in (0.0, 0.5, 0.9, 0.99)
        if times
    }


async def wait(waiter: Waiter, timeout: float, what: str) -> float:
    """``waiter.at`` once it is done; raises naming how many are still pending."""
    try:
        await asyncio.wait_for(waiter.done.wait(), timeout)
    except TimeoutError:
        raise RuntimeError(
            f"{what}: {len(waiter.pending)} still pending after {timeout} s"
        ) from None
    return waiter.at


class LeaseWatch:
    """The shard group's Leases as one watch outside the replicas sees them.

    A replica (its Lease's holder) is live from a change of its Lease record (holder,
    renewTime) until ``leaseDurationSeconds`` later on this process's monotonic clock, or
    until its Lease is deleted: the replicas' own rule, timed by one delayed callback per
    Lease, not by polling. Keeps every change of the live set (time, replica, ``new``,
    ``gone`` or ``back``) and every renewal's lateness (time, replica, gap since the previous
    renewal minus the renew interval). Seen from here, so a late watch event on this side
    counts like a late renewal.
    """

    def __init__(
        self, hub: kube.ApiClient, namespace: str, group: str, renew_interval: float
    ) -> None:
        self.informer = Informer(
            hub,
            kube.LEASES,
            namespace=namespace,
            label_selector=f"{LABEL_SHARD_GROUP}={group}",
            name="bench shard Leases",
        )
        self.renew_interval = renew_interval
        self.records: dict[str, tuple[Any, Any]] = {}
        self.renewed_at: dict[str, float] = {}
        self.live: set[str] = set()
        self.timers: dict[str, asyncio.TimerHandle] = {}
        self.changes: list[tuple[float, str, str]] = []
        self.lateness: list[tuple[float, str, float]] = []
        self.informer.add_handler(self._on_event)

    def _on_event(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        now = time.perf_counter()
        spec = obj.get("spec") or {}
        who = str(spec.get("holderIdentity") or obj["metadata"]["name"])
        if event == "DELETED":
            self._gone(who, now)
            return
        record = (spec.get("holderIdentity"), spec.get("renewTime"))
        if self.records.get(who) == record:
            return
        self.records[who] = record
        if who in self.renewed_at:
            self.lateness.append((now, who, now - self.renewed_at[who] - self.renew_interval))
        if who not in self.live:
            self.changes.append((now, who, "back" if who in self.renewed_at else "new"))
            self.live.add(who)
        self.renewed_at[who] = now
        if who in self.timers:
            self.timers.pop(who).cancel()
        duration = float(spec.get("leaseDurationSeconds") or 0)
        self.timers[who] = asyncio.get_running_loop().call_later(duration, self._gone, who, None)

    def _gone(self, who: str, now: float | None) -> None:
        if who in self.timers:
            self.timers.pop(who).cancel()
        if who in self.live:
            self.live.discard(who)
            self.changes.append((now or time.perf_counter(), who, "gone"))

    def unexpected(self, victim: str | None, killed: float) -> list[tuple[float, str, str]]:
        """The changes the benchmark did not cause: all but each replica's first Lease and
        the victim's first ``gone`` after the kill."""
        excused = False
        out = []
        for t, who, what in self.changes:
            if what == "new":
                continue
            if what == "gone" and who == victim and t >= killed and not excused:
                excused = True
                continue
            out.append((t, who, what))
        return out

    def stop(self) -> None:
        for timer in self.timers.values():
            timer.cancel()
        self.timers.clear()


def in_phase(t: float, window: tuple[float, float]) -> bool:
    return window[0] <= t <= window[1]


def phase_figures(
    watch: ProfileWatch,
    leases: LeaseWatch,
    phases: dict[str, tuple[float, float]],
    victim: str | None,
    killed: float,
) -> dict[str, Any]:
    """False health transitions, shard changes and renewal lateness in each phase."""
    changes = leases.unexpected(victim, killed)
    out: dict[str, Any] = {
        "false_transitions": {},
        "shard_changes": {},
        "lease_lateness_max": {},
        "lease_lateness_p99": {},
    }
    for phase, window in phases.items():
        out["false_transitions"][phase] = sum(
            1 for t, *_ in watch.false_transitions if in_phase(t, window)
        )
        out["shard_changes"][phase] = sum(1 for t, _, _ in changes if in_phase(t, window))
        late = [x for t, _, x in leases.lateness if in_phase(t, window)]
        out["lease_lateness_max"][phase] = max(late) if late else None
        out["lease_lateness_p99"][phase] = percentile(late, 0.99) if late else None
    start = min(w[0] for w in phases.values())
    false = [x for x in watch.false_transitions if x[0] >= start]
    out["false_transition_profiles"] = len({name for _, name, _, _ in false})
    out["false_transition_reasons"] = dict(Counter(reason for _, _, reason, _ in false))
    out["false_transitions_at_handover"] = sum(1 for *_, moved in false if moved)
    out["shard_change_log"] = [
        [round(t - start, 2), who, what] for t, who, what in changes if t >= start
    ]
    return out


# -- the hub -----------------------------------------------------------------------------
SAMPLE_STATUS = {
    "version": {"kubernetes": "v1.36.3"},
    "conditions": [
        {
            "type": "ControlPlaneHealthy",
            "status": "True",
            "reason": "APIServerReady",
            "message": "ok",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ],
    "properties": [{"name": SHARED_PROPERTY, "value": "eu"}],
    "accessProviders": [
        {
            "name": "secretreader",
            "cluster": {
                "server": "https://127.0.0.1:1/members/0",
                "certificate-authority-data": base64.b64encode(b"x").decode(),
            },
        }
    ],
}


async def floor(hub: kube.ApiClient, ns: str, n: int) -> float:
    """Seconds to create ``n`` profiles and apply their status, 16 in flight."""
    started = time.perf_counter()

    async def one(i: int) -> None:
        body = {
            "metadata": {"name": f"f{i}", "namespace": ns},
            "spec": {"clusterManager": {"name": "floor"}},
        }
        await kube.create(hub, kube.CLUSTER_PROFILES, body)
        await kube.apply(
            hub,
            kube.CLUSTER_PROFILES,
            {**body, "status": SAMPLE_STATUS},
            field_manager="floor",
            subresource="status",
        )

    await bounded([one(i) for i in range(n)])
    return time.perf_counter() - started


async def member_floor(vm: VirtualMembers, n: int, limit: int = 64) -> float:
    """Seconds for a plain client to make, for each of ``n`` members, the requests a push-mode
    manager cannot do without: a new client, a probe (GET ``/readyz``), a LIST of
    ClusterProperty and a WATCH of them from that list's resourceVersion, opened (its 200
    answered) and closed; ``limit`` members in flight."""
    started = time.perf_counter()
    path = kube.CLUSTER_PROPERTIES.path()

    async def one(i: int) -> None:
        async with await vm.client(i) as member:
            status, _ = await kube.get_text(member, "/readyz")
            require(status == 200, f"member {i} /readyz answered {status}")
            listed = await kube.list_objects(member, kube.CLUSTER_PROPERTIES)
            query = {
                "watch": "true",
                "resourceVersion": listed["metadata"]["resourceVersion"],
                "timeoutSeconds": 60,
            }
            response = await member.call_api(
                path,
                "GET",
                query_params=list(query.items()),
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=30,
            )
            async with response:
                require(response.status == 200, f"member {i} watch answered {response.status}")

    await bounded([one(i) for i in range(n)], limit)
    return time.perf_counter() - started


async def delete_collection(
    client: kube.ApiClient, resource: kube.Resource, ns: str | None, selector: str = ""
) -> None:
    """One DELETECOLLECTION (the hub runs no namespace controller to empty a namespace)."""
    await kube.request(
        client,
        "DELETE",
        resource.path(ns),
        query={"labelSelector": selector} if selector else None,
        target=resource.describe(ns, None),
        timeout=300,  # 10,000 objects are deleted one by one behind one request
    )


async def hub_requests(hub: kube.ApiClient, *, writes_only: bool = True) -> Counter[str]:
    """Requests the hub kube-apiserver has served so far: mutating ones by resource, or
    (``writes_only=False``) every one by ``VERB resource[/subresource]``."""
    status, text = await kube.get_text(hub, "/metrics")
    require(status == 200, f"hub /metrics answered {status}")
    counts: Counter[str] = Counter()
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, _, value = line.rpartition("} ")
        labels = dict(_LABEL.findall(labels_text))
        if writes_only and labels.get("verb") not in MUTATING:
            continue
        what = labels.get("resource", "") + (
            f"/{labels['subresource']}" if labels.get("subresource") else ""
        )
        counts[what if writes_only else f"{labels.get('verb')} {what}"] += float(value)
    return counts


async def hub_writes(hub: kube.ApiClient) -> Counter[str]:
    """Mutating requests the hub kube-apiserver has served so far, by resource."""
    return await hub_requests(hub)


# -- processes ---------------------------------------------------------------------------
def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, from /proc/stat."""
    with open("/proc/stat") as handle:
        fields = [int(x) for x in handle.readline().split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]
    return (sum(fields) - idle) / hz, sum(fields) / hz


class CpuMeter:
    """CPU seconds of named processes (and the machine) between two snapshots, as cores.

    ``pids`` is read at each snapshot, so a process added to it later (a joining replica)
    is counted from then on."""

    def __init__(self, pids: dict[str, list[int]]) -> None:
        self.pids = pids

    def snapshot(self) -> dict[str, float]:
        out = {}
        for label, pids in list(self.pids.items()):
            total = 0.0
            for pid in pids:
                try:
                    total += cpu_seconds(pid)
                except (FileNotFoundError, ProcessLookupError):
                    pass
            out[label] = total
        out["wall"] = time.perf_counter()
        busy, total = machine_busy()
        out["machine busy"] = busy
        out["machine total"] = total
        return out

    @staticmethod
    def cores(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
        wall = b["wall"] - a["wall"]
        # A process started after ``a`` (a replica) counts from zero.
        out = {
            k: (b[k] - a.get(k, 0.0)) / wall
            for k in b
            if k not in ("wall", "machine busy", "machine total")
        }
        out["machine"] = (
            (os.cpu_count() or 1)
            * (b["machine busy"] - a["machine busy"])
            / max(1e-9, b["machine total"] - a["machine total"])
        )
        return out


def open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


async def sample_curve(
    meter: CpuMeter,
    watch: ProfileWatch,
    tokens: Informer,
    started: float,
    out: list[dict[str, Any]],
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


def proxy_stats(vm: VirtualMembers) -> dict[str, float]:
    """The virtual-member proxies' counters summed: member requests so far, open connections."""
    ctx = ssl.create_default_context(cadata=vm.ca_pem.decode())
    stats: Counter[str] = Counter()
    for i in range(len(vm.processes)):  # member i is served by proxy process i (mod count)
        url = f"{vm.base_url_of(i)}/stats"
        with urllib.request.urlopen(url, context=ctx, timeout=10) as response:
            stats.update(json.loads(response.read()))
    return {**stats, "t": time.perf_counter(), "proxies": len(vm.processes)}


def member_rate(a: dict[str, float], b: dict[str, float]) -> float:
    """Requests per second the member side (through the proxy) served between two stats."""
    return (b["requests"] - a["requests"]) / (b["t"] - a["t"])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Replica:
    """One ``manager run --sharding`` process."""

    name: str
    proc: subprocess.Popen[bytes]
    metrics_port: int
    log: Path
    spawned: float  # epoch seconds

    def joined_after(self) -> float:
        """Seconds from spawning to joining its shard group (its log's line), or -1."""
        for line in self.log.read_text(errors="replace").splitlines():
            if "joined as" in line and line.startswith("{"):
                ts = json.loads(line)["ts"]
                return dt.datetime.fromisoformat(ts).timestamp() - self.spawned
        return -1.0

    def metrics(self) -> dict[str, float]:
        """The wanted samples of its /metrics (empty if it is gone), see :func:`parse_metrics`."""
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5
            ) as response:
                return parse_metrics(response.read().decode(), WANTED_METRICS)
        except OSError:
            return {}


#: Metric families kept from a replica's /metrics; the last five come with the lead's
#: overload work and may be absent (their figures then read ``-``).
WANTED_METRICS = (
    "cluster_inventory_shard_owned_members",
    "cluster_inventory_shard_replicas",
    "cluster_inventory_shard_fenced_writes_total",
    "cluster_inventory_profile_status_writes_total",
    "cluster_inventory_member_health_transitions_total",
    "cluster_inventory_shard_membership_changes_total",
    "cluster_inventory_lease_renewal_lateness_seconds",
    "cluster_inventory_event_loop_lag_seconds",
    "cluster_inventory_probes_deferred_total",
    "cluster_inventory_placement_seconds",
    "cluster_inventory_gc_pause_seconds",
    "cluster_inventory_gc_cpu_seconds_total",
    "cluster_inventory_member_start_limit",
)


def spawn(
    name: str,
    manager: str,
    system: str,
    hub_kubeconfig: str,
    s: Settings,
    limit: CpuLimit | None = None,
    extra: list[str] | None = None,
) -> Replica:
    port = free_port()
    spawned = time.time()
    log = Path(tempfile.gettempdir()) / f"fleet-scale-{name}.log"
    argv = [
        str(CLI),
        "manager",
        "run",
        "--kubeconfig",
        hub_kubeconfig,
        "--name",
        manager,
        "--namespace",
        system,
        "--member-namespace",
        "fleet-scale",
        "--sharding",
        "--shard-lease-duration",
        str(s.lease_duration),
        "--shard-renew-interval",
        str(s.renew_interval),
        "--probe-interval",
        str(s.probe_interval),
        "--health-probe-bind-address",
        "0",
        "--metrics-bind-address",
        f"127.0.0.1:{port}",
        "--log-format",
        "json",
        *(extra or ()),
    ]
    proc = subprocess.Popen(
        limit.wrap(name, argv) if limit else argv,
        env={**os.environ, "POD_NAME": name},
        stdout=subprocess.DEVNULL,
        stderr=open(log, "wb"),
    )
    return Replica(name, proc, port, log, spawned)


# -- one (N, R) --------------------------------------------------------------------------
def _commit() -> str | None:
    """The checkout's commit (``+`` when it has uncommitted changes), or None outside git."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD"], check=False).returncode
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+" if dirty else "")


async def namespaces_and_floor(
    hub: kube.ApiClient, system: str, floor_ns: str, inventory: str, run: str, n: int
) -> float:
    """Make a run's namespaces (the manager's, the floor's, one inventory), then the floor, s.

    The inventory namespace is labelled with cluster set ``run``; the floor is measured after
    one warm-up profile (CRD validators are built on first use).
    """
    await bounded(
        [
            kube.apply(hub, kube.NAMESPACES, {"metadata": {"name": ns}}, field_manager="bench")
            for ns in (system, floor_ns, f"{floor_ns}-warm")
        ]
        + [
            kube.apply(
                hub,
                kube.NAMESPACES,
                {"metadata": {"name": inventory, "labels": {LABEL_CLUSTER_SET: run}}},
                field_manager="bench",
            )
        ]
    )
    await floor(hub, f"{floor_ns}-warm", 1)
    return await floor(hub, floor_ns, n)


async def run_one(
    fleet: Fleet, vm: VirtualMembers, hub: kube.ApiClient, n: int, r: int, s: Settings
) -> dict[str, Any]:
    run = (
        f"fs{n}r{r}"
        + (f"q{round(s.cpu_quota * 100)}" if s.cpu_quota else "")
        + (f"s{round(s.squeeze * 100)}" if s.squeeze else "")
    )
    system, inventory, floor_ns = f"{run}-system", f"{run}-inv", f"{run}-floor"
    res: dict[str, Any] = {
        "n": n,
        "r": r,
        "cpu_quota": s.cpu_quota,
        "squeeze": s.squeeze,
        "squeeze_for": s.squeeze_for if s.squeeze else None,
        "probe_interval": s.probe_interval,
        "lease_duration": s.lease_duration,
        "renew_interval": s.renew_interval,
        "rest": s.rest,
        "real_members": len(vm.clusters),
        "proxies": len(vm.processes),
        "loadavg_before": os.getloadavg()[0],
        "commit": _commit(),
    }
    limit = CpuLimit(s.cpu_quota, f"fleet-scale-{run}") if s.cpu_quota or s.squeeze else None
    res["cpu_limit"] = limit.kind if limit else None
    res["floor"] = await namespaces_and_floor(hub, system, floor_ns, inventory, run, n)
    await delete_collection(hub, kube.CLUSTER_PROFILES, floor_ns)
    res["member_floor"] = await member_floor(vm, n)

    started = time.perf_counter()
    await bounded(
        [
            kube.apply(
                hub,
                kube.SECRETS,
                registration_secret(vm.name(i), system, yaml.safe_dump(vm.kubeconfig(i)), [run]),
                field_manager="bench",
            )
            for i in range(n)
        ],
        32,
    )
    res["registrations"] = time.perf_counter() - started
    # Members whose property is changed later; the property exists before the cold start, so
    # each measured change is an update of a watched object.
    step = max(1, n // min(n, s.changes))
    sample = list(range(0, n, step))[: s.changes]
    change = f"change-{run}"
    await bounded([vm.set_property(i, change, "v0") for i in sample], 32)

    watch = ProfileWatch(hub, run, inventory)
    leases = LeaseWatch(hub, system, run, s.renew_interval)
    tokens = Informer(
        hub,
        kube.SECRETS,
        namespace=inventory,
        label_selector=f"{LABEL_CLUSTER_MANAGER}={run}",
        name="bench token Secrets",
        metadata_only=True,
    )
    for informer in (watch.informer, leases.informer, tokens):
        await informer.__aenter__()
    for informer in (watch.informer, leases.informer, tokens):
        await informer.wait_synced()
    kc = str(fleet.hub.kubeconfig_path)
    names = [f"{run}-{chr(ord('a') + k)}" for k in range(r)]
    pids: dict[str, list[int]] = {
        "hub apiserver": [fleet.hub.apiserver_process.pid],
        "member apiservers": [m.apiserver_process.pid for m in fleet.members.values()],
        "etcd": [fleet.etcd.process.pid],
        "proxy": [proc.pid for proc in vm.processes if proc.pid is not None],
        "bench": [os.getpid()],
    }
    all_full = watch.waiter({vm.name(i) for i in range(n)}, lambda _, o: full(o))
    meter = CpuMeter(pids)
    cpu_start = meter.snapshot()
    stats_start = await asyncio.to_thread(proxy_stats, vm)
    hub_start = await hub_requests(hub, writes_only=False)
    started = time.perf_counter()
    replicas = {name: spawn(name, run, system, kc, s, limit) for name in names}
    for rep in replicas.values():
        pids[f"replica {rep.name}"] = [rep.proc.pid]
    res["cold_curve"] = curve = []
    # Perf-counter windows of the phases; "all" runs from the spawn to the teardown.
    phases: dict[str, tuple[float, float]] = {}
    marks: dict[str, Any] = {"killed": float("inf"), "victim": None}
    scrapes: dict[str, dict[str, dict[str, float]]] = {}
    res["replica_scrapes"] = scrapes

    async def scrape(label: str) -> None:
        scrapes[label] = {
            name: await asyncio.to_thread(rep.metrics) for name, rep in replicas.items()
        }

    sampler = asyncio.create_task(sample_curve(meter, watch, tokens, started, curve))
    try:
        try:
            await wait(all_full, s.timeout, f"N={n} R={r}: profiles at full status")
            res["cold_start"] = all_full.at - started
            phases["cold"] = (started, all_full.at)
            res["first_profile"] = watch.first_event - started
            res["joined_after"] = {name: rep.joined_after() for name, rep in replicas.items()}
            cpu_full = meter.snapshot()
            res["cold_cores"] = CpuMeter.cores(cpu_start, cpu_full)
            # What the cold start cost per member: hub requests by verb and resource (every
            # client's, the benchmark's watch included), member requests through the proxy.
            spent = await hub_requests(hub, writes_only=False) - hub_start
            res["cold_hub_requests_per_member"] = {
                k: round(v / n, 2) for k, v in spent.most_common(10)
            }
            full_stats = await asyncio.to_thread(proxy_stats, vm)
            res["cold_member_requests_per_member"] = round(
                (full_stats["requests"] - stats_start["requests"]) / n, 2
            )
            await scrape("cold")
            deadline = time.perf_counter() + s.timeout
            while len(tokens.keys()) < n:
                if time.perf_counter() > deadline:
                    raise RuntimeError(
                        f"{len(tokens.keys())}/{n} token Secrets after {s.timeout} s"
                    )
                await asyncio.sleep(0.1)
            res["tokens"] = time.perf_counter() - started
            cpu_tokens = meter.snapshot()
            stats = await asyncio.to_thread(proxy_stats, vm)
            res["member_requests_cold"] = stats["requests"] - stats_start["requests"]
            res["token_cores"] = CpuMeter.cores(cpu_full, cpu_tokens)
        finally:
            sampler.cancel()
        await asyncio.sleep(min(5.0, s.rest / 5))  # the last writes' echoes

        writes_before = await hub_writes(hub)
        stats_a = await asyncio.to_thread(proxy_stats, vm)
        await scrape("rest_start")
        cpu_a = meter.snapshot()
        peak = 0.0
        last = stats_a
        while time.perf_counter() - cpu_a["wall"] < s.rest:
            await asyncio.sleep(min(1.0, s.rest - (time.perf_counter() - cpu_a["wall"])))
            now = await asyncio.to_thread(proxy_stats, vm)
            peak, last = max(peak, member_rate(last, now)), now
        res["member_requests_peak_per_s"] = peak
        cpu_b = meter.snapshot()
        phases["rest"] = (cpu_a["wall"], cpu_b["wall"])
        await scrape("rest_end")
        stats_b = await asyncio.to_thread(proxy_stats, vm)
        writes_after = await hub_writes(hub)
        res["member_requests_per_s"] = member_rate(stats_a, stats_b)
        res["proxy_open_connections"] = stats_b.get("openConnections")
        wall = cpu_b["wall"] - cpu_a["wall"]
        res["steady_cores"] = CpuMeter.cores(cpu_a, cpu_b)
        res["rss"] = {name: rss_mib(rep.proc.pid) for name, rep in replicas.items()}
        res["open_fds"] = {label: sum(open_fds(p) for p in ps) for label, ps in pids.items()}
        delta = writes_after - writes_before
        res["hub_writes_per_s"] = sum(delta.values()) / wall
        res["hub_writes_by_resource"] = {k: v / wall for k, v in delta.most_common()}
        res["owned_before_kill"] = dict(Counter(holder(p) for p in watch.informer.items()))

        lat = await property_changes(vm, watch, sample, change)
        res["changes"] = len(lat)
        res["p50"] = statistics.median(lat)
        res["p99"] = percentile(lat, 0.99)

        if s.squeeze and limit:
            await squeeze_and_drain(vm, watch, limit, s, res, phases, scrape, sample, run)
        if r > 1:
            cpu_kill = meter.snapshot()
            marks["hub_before"] = await hub_requests(hub, writes_only=False)
            marks["members_before"] = await asyncio.to_thread(proxy_stats, vm)
            await kill_and_join(
                vm, hub, watch, replicas, res, s, run, system, kc, limit, marks, pids
            )
            res["kill_cores"] = CpuMeter.cores(cpu_kill, meter.snapshot())
            phases["kill_join"] = (marks["killed"], time.perf_counter())
        res["count_end"] = len(watch.informer.keys())
    except Exception as exc:  # the figures so far are kept and printed with the error
        res["error"] = f"{type(exc).__name__}: {exc}"
        res["full_at_error"] = len(watch.full)
    finally:
        # Counted before the teardown, whose Lease deletions the benchmark causes.
        phases["all"] = (started, time.perf_counter())
        if marks["victim"] and "kill_join" not in phases:  # the join did not settle
            phases["kill_join"] = (marks["killed"], phases["all"][1])
        res["phases"] = {
            k: [round(a - started, 2), round(b - started, 2)] for k, (a, b) in phases.items()
        }
        res.update(phase_figures(watch, leases, phases, marks["victim"], marks["killed"]))
        leases.stop()
        res["replica_metrics"] = {name: rep.metrics() for name, rep in replicas.items()}
        if limit:
            res["cpu_throttled_s"] = limit.throttled()
        for rep in replicas.values():
            if rep.proc.poll() is None:
                rep.proc.send_signal(signal.SIGTERM)
        for rep in replicas.values():
            try:
                await asyncio.to_thread(rep.proc.wait, 60)
            except subprocess.TimeoutExpired:
                rep.proc.kill()
                await asyncio.to_thread(rep.proc.wait)
        if limit and (left := limit.remove()):
            print(f"N={n} R={r}: cgroups not removed: {left}", file=sys.stderr)
        for informer in (tokens, leases.informer, watch.informer):
            await informer.__aexit__()
        try:
            await cleanup(vm, hub, run, system, inventory)
        except kube.KubeError as exc:  # the next run has its own names; say it and go on
            print(f"N={n} R={r}: cleanup failed: {exc}", file=sys.stderr)
    res["deleted"] = watch.deleted
    res["tracebacks"] = sum(
        rep.log.read_text(errors="replace").count("Traceback") for rep in replicas.values()
    )
    res["exit_codes"] = {name: rep.proc.returncode for name, rep in replicas.items()}
    return res


async def squeeze_and_drain(
    vm: VirtualMembers,
    watch: ProfileWatch,
    limit: CpuLimit,
    s: Settings,
    res: dict[str, Any],
    phases: dict[str, tuple[float, float]],
    scrape: Callable[[str], Any],
    sample: list[int],
    run: str,
) -> None:
    """Past capacity and back: every replica limited to ``s.squeeze`` cores for
    ``s.squeeze_for`` s, then no limit until the backlog drained.

    During the squeeze: the profiles that said the manager is behind (most at once, at the
    end, ever), and how many of the sample's property changes, written when it began, got
    through. The drain: seconds from lifting the limit until no profile says behind and a
    second change on every sample member shows. False transitions, shard changes and Lease
    lateness of both phases come from :func:`phase_figures` (phases ``squeeze``, ``drain``).
    """
    names = {vm.name(i) for i in sample}
    stamp = f"squeeze-{run}"

    def stamped(value: str) -> Callable[[str, dict[str, Any]], bool]:
        return lambda name, o: props(o).get(f"{stamp}.{name}") == value

    await scrape("squeeze_start")
    throttled = limit.throttled()
    watch.reset_behind()
    started = time.perf_counter()
    limit.set(s.squeeze)
    during = watch.waiter(names, stamped("during"))
    await bounded([vm.set_property(i, stamp, "during") for i in sample], 32)
    await asyncio.sleep(max(0.0, s.squeeze_for - (time.perf_counter() - started)))
    res["squeeze_behind_max"] = watch.behind_max
    res["squeeze_behind_end"] = len(watch.behind)
    res["squeeze_behind_ever"] = len(watch.behind_ever)
    res["squeeze_changes_through"] = len(names) - len(during.pending)
    res["squeeze_changes"] = len(names)
    watch.waiters.remove(during)
    lifted = time.perf_counter()
    limit.set(None)
    phases["squeeze"] = (started, lifted)
    res["squeeze_throttled_s"] = {
        k: round(v - throttled.get(k, 0.0), 2) for k, v in limit.throttled().items()
    }
    await scrape("squeeze_end")
    after = watch.waiter(names, stamped("after"))
    calm = watch.waiter(set(watch.by_name()), lambda _, o: not _behind(o))
    await bounded([vm.set_property(i, stamp, "after") for i in sample], 32)
    fresh_at = await wait(after, s.timeout, "property changes after the squeeze")
    calm_at = await wait(calm, s.timeout, "profiles no longer saying the manager is behind")
    for waiter in (after, calm):
        watch.waiters.remove(waiter)
    res["drain_fresh"] = fresh_at - lifted
    res["drain_behind_end"] = len(watch.behind)
    res["drain_calm"] = calm_at - lifted
    phases["drain"] = (lifted, max(fresh_at, calm_at))


def _behind(profile: dict[str, Any]) -> bool:
    return any(
        c["type"] == "ControlPlaneHealthy" and c.get("reason") == REASON_BEHIND
        for c in (profile.get("status") or {}).get("conditions") or ()
    )


async def property_changes(
    vm: VirtualMembers, watch: ProfileWatch, sample: list[int], change: str
) -> list[float]:
    """Seconds from before each write on a member until its profile shows the value."""
    latencies = []
    for k, i in enumerate(sample):
        name, value = vm.name(i), f"v{k + 1}"
        prop = f"{change}.{name}"
        seen = watch.waiter({name}, lambda _, o, p=prop, v=value: props(o).get(p) == v)
        started = time.perf_counter()
        await vm.set_property(i, change, value)
        latencies.append(await wait(seen, 30, f"property change on {name}") - started)
        watch.waiters.remove(seen)
        await asyncio.sleep(0.05)
    return latencies


def _index(name: str) -> int:
    return int(name.rsplit("-", 1)[1])


async def kill_and_join(
    vm: VirtualMembers,
    hub: kube.ApiClient,
    watch: ProfileWatch,
    replicas: dict[str, Replica],
    res: dict[str, Any],
    s: Settings,
    run: str,
    system: str,
    kc: str,
    limit: CpuLimit | None,
    marks: dict[str, Any],
    pids: dict[str, list[int]],
) -> None:
    """SIGKILL the replica holding most profiles, change its members, then add a replica.

    ``marks`` gets the victim and the perf-counter time of the kill (its Lease going is the
    benchmark's doing); the newcomer's PID goes into ``pids`` (the CPU meter's)."""
    profiles = watch.by_name()
    held = {name: holder(p) for name, p in profiles.items()}
    live = sorted(replicas)
    astray = [m for m in held if held[m] != rendezvous_owner(m, live)]
    if astray:
        raise RuntimeError(f"before the kill {len(astray)} profiles are not held by their owner")
    counts = Counter(held.values())
    victim = max(counts, key=lambda x: counts[x])
    theirs = sorted(m for m, h in held.items() if h == victim)
    res["victim_members"] = len(theirs)
    replicas[victim].proc.send_signal(signal.SIGKILL)
    killed = time.perf_counter()
    marks.update(victim=victim, killed=killed)
    live.remove(victim)
    # A hub write right after the kill: its resourceVersion (etcd's revision, shared by
    # every object of this fleet) orders any later write against the kill.
    marker = await kube.apply(
        hub,
        kube.CONFIG_MAPS,
        {"metadata": {"name": "kill-marker", "namespace": system}, "data": {"t": str(killed)}},
        field_manager="bench",
    )
    fence_rv = int(marker["metadata"]["resourceVersion"])
    stamp = f"stamp-{run}"
    fresh = watch.waiter(
        set(theirs),
        lambda name, o: (
            props(o).get(f"{stamp}.{name}") == "after-kill" and holder(o) not in ("", victim)
        ),
    )
    await bounded([vm.set_property(_index(m), stamp, "after-kill") for m in theirs], 32)
    res["kill_writes_done"] = time.perf_counter() - killed
    res["kill_fresh"] = (
        await wait(fresh, max(60.0, s.timeout / 2), "killed replica's members") - killed
    )
    # How the takeover spreads: the first, half, 90% and 99% of the victim's members claimed
    # by a live replica (its holder annotation), and fresh.
    claimed = sorted(
        min((t for t, who in watch.holders.get(m, ()) if t > killed and who != victim), default=0)
        for m in theirs
    )
    res["kill_claimed_quantiles"] = _quantiles([t - killed for t in claimed if t])
    res["kill_fresh_quantiles"] = _quantiles([t - killed for t in fresh.times])
    # What the takeover cost, per member taken over: hub requests by verb and resource (the
    # benchmark's own property writes go to the members), member requests through the proxy.
    hub_after = await hub_requests(hub, writes_only=False)
    members_after = await asyncio.to_thread(proxy_stats, vm)
    spent = hub_after - marks["hub_before"]
    res["kill_hub_requests_per_member"] = {
        k: round(v / len(theirs), 2) for k, v in spent.most_common(8)
    }
    res["kill_member_requests_per_member"] = round(
        (members_after["requests"] - marks["members_before"]["requests"]) / len(theirs), 2
    )
    await asyncio.sleep(min(3.0, s.lease_duration))  # anything late would show now
    after = watch.holders_after(killed)
    res["kill_bad_holders"] = sum(
        1
        for m, seq in after.items()
        if not (
            seq == [held[m]] or (held[m] == victim and seq == [victim, rendezvous_owner(m, live)])
        )
    )
    res["kill_victim_writes"] = sum(
        1
        for t, _, who, rv in watch.status_changes
        if t > killed and who == victim and rv > fence_rv
    )
    res["kill_lost"] = watch.deleted + (res["n"] - len(watch.informer.keys()))

    newcomer = f"{run}-{chr(ord('a') + len(replicas))}"
    before = {m: rendezvous_owner(m, live) for m in held}
    live.append(newcomer)
    after_join = {m: rendezvous_owner(m, live) for m in held}
    res["join_expected_moves"] = sum(1 for m in held if before[m] != after_join[m])
    res["join_naive_moves"] = res["n"] / len(live)
    res["join_live_after"] = len(live)
    settled = watch.waiter(set(held), lambda m, o: holder(o) == after_join[m] and full(o))
    joined = time.perf_counter()
    replicas[newcomer] = spawn(newcomer, run, system, kc, s, limit)
    pids[f"replica {newcomer}"] = [replicas[newcomer].proc.pid]
    res["join_settled"] = (
        await wait(settled, s.timeout, "join: profiles with their new holder") - joined
    )
    seqs = watch.holders_after(joined)
    res["join_moved"] = sum(1 for seq in seqs.values() if len(seq) > 1)
    res["join_bad_holders"] = sum(
        1
        for m, seq in seqs.items()
        if not (
            (seq == [before[m]] and after_join[m] == before[m])
            or (seq == [before[m], newcomer] and after_join[m] == newcomer)
        )
    )
    res["victim"] = victim
    res["newcomer"] = newcomer


async def cleanup(
    vm: VirtualMembers, hub: kube.ApiClient, run: str, system: str, inventory: str
) -> None:
    """Remove the run's hub objects and the per-member properties it wrote."""
    await delete_collection(hub, kube.CLUSTER_PROFILES, inventory)
    await delete_collection(hub, kube.SECRETS, inventory)
    await delete_collection(hub, kube.SECRETS, system)
    for cp in vm.clusters:
        async with await cp.client() as admin:
            await delete_collection(
                admin, kube.CLUSTER_PROPERTIES, None, f"{LABEL_VIRTUAL_MEMBER}!=all"
            )


# -- output ------------------------------------------------------------------------------
GROUPS = ("hub", "replicas", "members", "bench")


def groups(cores: dict[str, float]) -> dict[str, float]:
    """Cores by process group: hub (its apiserver and the shared etcd), replicas (sum and
    busiest), simulated members (proxies and member apiservers), this benchmark."""
    replicas = [v for k, v in cores.items() if k.startswith("replica ")]
    return {
        "hub": cores.get("hub apiserver", 0.0) + cores.get("etcd", 0.0),
        "replicas": sum(replicas),
        "replica max": max(replicas, default=0.0),
        "members": cores.get("member apiservers", 0.0) + cores.get("proxy", 0.0),
        "bench": cores.get("bench", 0.0),
        "machine": cores.get("machine", 0.0),
    }


def scraped(res: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The replicas' own figures per phase (``cold``: from the start; ``rest``: gained over
    the rest window; ``end``: the replicas running at the end, whole run); a figure no
    replica exports is None."""
    scrapes = res.get("replica_scrapes") or {}
    per_phase = {"cold": scrapes.get("cold"), "end": res.get("replica_metrics")}
    for phase in ("rest", "squeeze"):
        if f"{phase}_start" in scrapes and f"{phase}_end" in scrapes:
            per_phase[phase] = {
                name: metric_delta(scrapes[f"{phase}_start"].get(name, {}), m)
                for name, m in scrapes[f"{phase}_end"].items()
            }
    out: dict[str, dict[str, Any]] = {}
    for phase, by_replica in per_phase.items():
        if not by_replica:
            continue

        def total(
            name: str, by: dict[str, dict[str, float]] = by_replica, **labels: str
        ) -> float | None:
            values = [metric_total(m, name, **labels) for m in by.values()]
            return (
                sum(v for v in values if v is not None)
                if any(v is not None for v in values)
                else None
            )

        health = "cluster_inventory_member_health_transitions_total"
        statuses = sorted(
            {
                sample_of(k)[1].get("status", "")
                for m in by_replica.values()
                for k in m
                if sample_of(k)[0] == health
            }
        )
        out[phase] = {
            "health_transitions": {st: total(health, status=st) for st in statuses} or None,
            "shard_changes": total("cluster_inventory_shard_membership_changes_total"),
            "probes_deferred": total("cluster_inventory_probes_deferred_total"),
            "loop_lag": {
                name: b
                for name, m in by_replica.items()
                if (b := histogram_bounds(m, "cluster_inventory_event_loop_lag_seconds"))
            }
            or None,
            "renewal_lateness": {
                name: b
                for name, m in by_replica.items()
                if (b := histogram_bounds(m, "cluster_inventory_lease_renewal_lateness_seconds"))
            }
            or None,
            "gc_pause": {
                name: b
                for name, m in by_replica.items()
                if (b := histogram_bounds(m, "cluster_inventory_gc_pause_seconds"))
            }
            or None,
            "gc_cpu_s": total("cluster_inventory_gc_cpu_seconds_total"),
        }
    return out


def summary(res: dict[str, Any]) -> dict[str, Any]:
    """The derived figures of the table and the plot (only those the record allows)."""
    out: dict[str, Any] = {}
    if "cold_start" in res:
        out["ratio"] = res["cold_start"] / res["floor"]
        if "member_floor" in res:
            out["ratio_floors"] = res["cold_start"] / (res["floor"] + res["member_floor"])
    for phase in ("cold", "steady", "kill"):
        if f"{phase}_cores" in res:
            out[f"{phase}_groups"] = groups(res[f"{phase}_cores"])
    if "steady_cores" in res:
        steady = [res["steady_cores"].get(f"replica {name}", 0.0) for name in res["rss"]]
        out["cores_max"] = max(steady)
        out["cores_sum"] = sum(steady)
        out["cores_per_1k"] = 1000 * sum(steady) / res["n"]
        out["rss_max"] = max(res["rss"].values())
        out["rss_per_1k"] = 1000 * sum(res["rss"].values()) / res["n"]
        held = res.get("owned_before_kill") or {}
        per_held = [
            1000 * res["steady_cores"].get(f"replica {name}", 0.0) / held[name]
            for name in res["rss"]
            if held.get(name)
        ]
        if per_held:
            out["cores_per_1k_held"] = max(per_held)
    lag = (scraped(res).get("rest") or {}).get("loop_lag")
    if lag:
        out["lag_p99_rest"] = max(p99 for p99, _ in lag.values())
    return out


HEADER = (
    f"{'N':>6} {'R':>2} {'quota':>6} {'floor s':>8} {'mfloor s':>8} {'cold s':>7} {'ratio':>6} "
    f"{'c/(h+m)':>7} {'tokens s':>8} {'core/rep':>8} {'cores/1k':>8} {'c/1k held':>9} "
    f"{'cold h/r/m/b':>19} {'rest h/r/m/b':>19} {'MiB/rep':>7} {'hub w/s':>7} "
    f"{'p50 ms':>6} {'p99 ms':>6} {'false c/r/k':>11} {'shard c/r/k':>11} "
    f"{'late p99/max s':>14} {'lag p99 s':>9} "
    f"{'kill s':>6} {'lost':>4} {'2-wr':>4} {'moved/exp/N/k':>15}"
)


def _cell(value: float | None, width: int, fmt: str) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}{fmt}}"


def _slash(values: list[Any], width: int, fmt: str) -> str:
    """``a/b/c``, ``-`` for each missing one (and for the whole when all are)."""
    if all(v is None for v in values):
        return f"{'-':>{width}}"
    return f"{'/'.join('-' if v is None else f'{v:{fmt}}' for v in values):>{width}}"


def row(res: dict[str, Any]) -> str:
    """One table line; ``-`` where the run did not get that far (its error is printed)."""
    x, g = summary(res), res.get
    ms = {k: g(k) * 1000 if g(k) is not None else None for k in ("p50", "p99")}
    two = (
        g("kill_bad_holders", 0) + g("kill_victim_writes", 0) + g("join_bad_holders", 0)
        if "join_moved" in res
        else None
    )
    moves = (
        f"{res['join_moved']}/{res['join_expected_moves']}/{res['join_naive_moves']:.0f}"
        if "join_moved" in res
        else "-"
    )
    phases = (
        ("cold", "rest", "squeeze", "kill_join") if g("squeeze") else ("cold", "rest", "kill_join")
    )
    false, shard = g("false_transitions") or {}, g("shard_changes") or {}
    late_p99, late_max = g("lease_lateness_p99") or {}, g("lease_lateness_max") or {}
    cold_g, rest_g = x.get("cold_groups") or {}, x.get("steady_groups") or {}
    return " ".join(
        [
            f"{res['n']:6d} {res['r']:2d}",
            f"{'s' + format(g('squeeze'), 'g'):>6}"
            if g("squeeze")
            else _cell(g("cpu_quota"), 6, "g"),
            _cell(g("floor"), 8, ".2f"),
            _cell(g("member_floor"), 8, ".2f"),
            _cell(g("cold_start"), 7, ".2f"),
            _cell(x.get("ratio"), 6, ".2f"),
            _cell(x.get("ratio_floors"), 7, ".2f"),
            _cell(g("tokens"), 8, ".2f"),
            _cell(x.get("cores_max"), 8, ".3f"),
            _cell(x.get("cores_per_1k"), 8, ".3f"),
            _cell(x.get("cores_per_1k_held"), 9, ".3f"),
            _slash([cold_g.get(k) for k in GROUPS], 19, ".2f"),
            _slash([rest_g.get(k) for k in GROUPS], 19, ".2f"),
            _cell(x.get("rss_max"), 7, ".0f"),
            _cell(g("hub_writes_per_s"), 7, ".1f"),
            _cell(ms["p50"], 6, ".0f"),
            _cell(ms["p99"], 6, ".0f"),
            _slash([false.get(p) for p in phases], 11, "d"),
            _slash([shard.get(p) for p in phases], 11, "d"),
            _slash([late_p99.get("all"), late_max.get("all")], 14, ".2f"),
            _cell(x.get("lag_p99_rest"), 9, ".3f"),
            _cell(g("kill_fresh"), 6, ".1f"),
            _cell(g("kill_lost"), 4, "d"),
            _cell(two, 4, "d"),
            f"{moves:>15}",
        ]
    ) + ("  (error)" if "error" in res else "")


def details(res: dict[str, Any]) -> list[str]:
    """The lines behind a table row: settings, phases, CPU by process, kill and join."""
    n, r, g = res["n"], res["r"], res.get
    tag = (
        f"N={n} R={r}"
        + (f" quota {res['cpu_quota']:g}" if g("cpu_quota") else "")
        + (f" squeeze {res['squeeze']:g}" if g("squeeze") else "")
        + ":"
    )
    lines = [
        f"{tag} commit {g('commit') or '-'}",
        f"{tag} probe interval {res['probe_interval']:g} s = {n / res['probe_interval']:.0f} "
        f"member probes/s (3 requests each) over {res['real_members']} real apiservers; "
        f"shard Lease {res['lease_duration']:g} s, renewed every {res['renew_interval']:g} s; "
        f"load average before {res['loadavg_before']:.1f}",
        f"{tag} {n} registrations written in {res['registrations']:.1f} s",
    ]
    if g("cpu_quota"):
        throttled = ", ".join(f"{k} {v:.1f}" for k, v in (g("cpu_throttled_s") or {}).items())
        lines.append(
            f"{tag} each replica limited to {res['cpu_quota']:g} cores ({res['cpu_limit']}); "
            f"seconds throttled: {throttled or '-'}"
        )
    if "member_floor" in res:
        lines.append(
            f"{tag} member floor (new client, GET /readyz, LIST and WATCH ClusterProperty, 64 "
            f"in flight) {res['member_floor']:.2f} s; hub floor {res['floor']:.2f} s"
        )
    if "joined_after" in res:
        joined = ", ".join(f"{v:.1f}" for v in res["joined_after"].values())
        lines.append(
            f"{tag} replicas joined their shard group {joined} s and the first profile "
            f"appeared {res['first_profile']:.1f} s after they were spawned"
        )
    x = summary(res)
    for phase, label in (
        ("cold", "cold start"),
        ("token", "token Secrets"),
        ("steady", "rest"),
        ("kill", "kill and join"),
    ):
        if f"{phase}_cores" in res:
            cores = res[f"{phase}_cores"]
            parts = ", ".join(f"{k} {v:.2f}" for k, v in cores.items() if k != "machine")
            lines.append(
                f"{tag} cores during {label}: machine {cores['machine']:.2f} of "
                f"{os.cpu_count()}; {parts}"
            )
            grouped = groups(cores)
            lines.append(
                f"{tag} cores during {label} by group: "
                + ", ".join(f"{k} {v:.2f}" for k, v in grouped.items() if k != "machine")
            )
    if "cores_per_1k_held" in x:
        lines.append(
            f"{tag} at rest the busiest replica per 1,000 members it holds: "
            f"{x['cores_per_1k_held']:.3f} cores"
        )
    if "hub_writes_by_resource" in res:
        top = ", ".join(f"{k} {v:.2f}" for k, v in list(res["hub_writes_by_resource"].items())[:5])
        lines.append(f"{tag} hub writes/s at rest by resource: {top or 'none'}")
        lines.append(
            f"{tag} member requests (through {res['proxies']} proxy processes): {res['member_requests_cold']:.0f} until "
            f"every token Secret existed, {res['member_requests_per_s']:.0f}/s at rest (busiest "
            f"second {res['member_requests_peak_per_s']:.0f}/s); proxy "
            f"connections open {res['proxy_open_connections']}"
        )
        lines.append(
            f"{tag} RSS MiB per replica: "
            + ", ".join(f"{k} {v:.0f}" for k, v in res["rss"].items())
            + "; open fds: "
            + ", ".join(f"{k} {v}" for k, v in res["open_fds"].items())
        )
    if "false_transitions" in res:
        lines.append(
            f"{tag} false ControlPlaneHealthy transitions (away from True) by phase: "
            + ", ".join(f"{k} {v}" for k, v in res["false_transitions"].items())
            + f"; profiles concerned {res['false_transition_profiles']}; by status/reason "
            + (
                ", ".join(f"{k} {v}" for k, v in res.get("false_transition_reasons", {}).items())
                or "-"
            )
            + f"; by a new holder {res.get('false_transitions_at_handover', '-')}"
        )
        lines.append(
            f"{tag} shard membership changes not caused by the benchmark, by phase: "
            + ", ".join(f"{k} {v}" for k, v in res["shard_changes"].items())
            + (f" ({res['shard_change_log'][:10]})" if res["shard_change_log"] else "")
        )
        lines.append(
            f"{tag} Lease renewal lateness p99/max s by phase: "
            + ", ".join(
                f"{k} {_slash([res['lease_lateness_p99'][k], v], 1, '.2f').strip()}"
                for k, v in res["lease_lateness_max"].items()
            )
        )
    for phase, figures in scraped(res).items():
        parts = []
        for key, value in figures.items():
            if isinstance(value, dict):
                value = ", ".join(
                    f"{k} {'/'.join(f'{b:g}' for b in v)}"
                    if isinstance(v, tuple | list)
                    else f"{k} {v:g}"
                    for k, v in value.items()
                )
            parts.append(f"{key} {'-' if value is None else value}")
        lines.append(f"{tag} replica metrics ({phase}): " + "; ".join(parts))
    if "cold_hub_requests_per_member" in res:
        top = ", ".join(f"{k} {v:g}" for k, v in res["cold_hub_requests_per_member"].items())
        lines.append(
            f"{tag} the cold start per member: hub requests {top}; member requests "
            f"{res['cold_member_requests_per_member']:g}"
        )
    if "kill_hub_requests_per_member" in res:
        top = ", ".join(f"{k} {v:g}" for k, v in res["kill_hub_requests_per_member"].items())
        lines.append(
            f"{tag} the takeover per member taken over: hub requests {top}; member requests "
            f"{res['kill_member_requests_per_member']:g} (every member's, probes at rest "
            "included, over the members taken over; the benchmark's own property write is one)"
        )
    if "kill_fresh" in res:
        lines.append(
            f"{tag} SIGKILLed {res['victim']} holding {res['victim_members']} profiles: its "
            f"members changed within {res['kill_writes_done']:.1f} s, all fresh on live replicas "
            f"{res['kill_fresh']:.1f} s after the kill (target <= 20 s; first/50%/90%/99% "
            f"claimed {'/'.join(map(str, res.get('kill_claimed_quantiles', {}).values())) or '-'}"
            f" s, fresh {'/'.join(map(str, res.get('kill_fresh_quantiles', {}).values())) or '-'}"
            " s); "
            f"lost {res['kill_lost']}; "
            f"holder not victim->rendezvous owner {res['kill_bad_holders']}; status writes "
            f"as the victim after the kill {res['kill_victim_writes']}"
        )
    if "squeeze_behind_max" in res:
        throttled = ", ".join(f"{k} {v:.1f}" for k, v in res["squeeze_throttled_s"].items())
        lines.append(
            f"{tag} squeezed every replica to {res['squeeze']:g} cores for "
            f"{res['squeeze_for']:g} s (throttled s: {throttled or '-'}): profiles saying "
            f"{REASON_BEHIND} at most {res['squeeze_behind_max']} at once, "
            f"{res['squeeze_behind_end']} at the end, {res['squeeze_behind_ever']} ever; "
            f"property changes through {res['squeeze_changes_through']}/"
            f"{res['squeeze_changes']}; false transitions "
            f"{(g('false_transitions') or {}).get('squeeze')}, shard changes "
            f"{(g('shard_changes') or {}).get('squeeze')}, Lease lateness max "
            f"{_cell((g('lease_lateness_max') or {}).get('squeeze'), 1, '.2f').strip()} s"
        )
    if "drain_fresh" in res:
        lines.append(
            f"{tag} limit lifted: a property change on every sample member shown after "
            f"{res['drain_fresh']:.1f} s, no profile saying {REASON_BEHIND} after "
            f"{res['drain_calm']:.1f} s ({res['drain_behind_end']} again at the end); false "
            f"transitions {(g('false_transitions') or {}).get('drain')}, shard changes "
            f"{(g('shard_changes') or {}).get('drain')}"
        )
    if "join_moved" in res:
        lines.append(
            f"{tag} {res['newcomer']} joined: {res['join_moved']} profiles changed holder "
            f"(rendezvous predicts {res['join_expected_moves']}, N/{res['join_live_after']} = "
            f"{res['join_naive_moves']:.0f}), all settled in {res['join_settled']:.1f} s; "
            f"other holder changes {res['join_bad_holders']}"
        )
    fenced = sum(
        metric_total(m, "cluster_inventory_shard_fenced_writes_total") or 0
        for m in g("replica_metrics", {}).values()
    )
    lines.append(
        f"{tag} fenced (409) writes counted by the replicas running at the end: {fenced:.0f}"
    )
    if "error" in res:
        lines.append(
            f"{tag} ERROR {res['error']} ({res['full_at_error']}/{n} profiles at full status then)"
        )
    return lines


def check(res: dict[str, Any]) -> None:
    """Sanity of a record (exit code 1 when it fails)."""
    tag = f"N={res['n']} R={res['r']}"
    require("error" not in res, f"{tag}: {res.get('error')}")
    x = summary(res)
    require_times(
        floor=res["floor"],
        member_floor=res["member_floor"],
        ratio_floors=x["ratio_floors"],
        cold_start=res["cold_start"],
        tokens=res["tokens"],
        p50=res["p50"],
        p99=res["p99"],
        hub_writes=res["hub_writes_per_s"],
        cores_per_1k_held=x["cores_per_1k_held"],
        **{f"rss_{k}": v for k, v in res["rss"].items()},
        **{f"{p} {k}": v for p in ("cold", "steady") for k, v in x[f"{p}_groups"].items()},
    )
    require(res["member_floor"] > 0, f"{tag}: member floor > 0")
    require(x["steady_groups"]["replicas"] > 0, f"{tag}: the replicas used CPU at rest")
    phases = ["cold", "rest", "all"] + (["kill_join"] if res["r"] > 1 else [])
    for figure in ("false_transitions", "shard_changes"):
        counts = res[figure]
        require(
            all(isinstance(counts[p], int) and counts[p] >= 0 for p in phases),
            f"{tag}: {figure} counted per phase: {counts}",
        )
    require(
        res["false_transitions"]["all"]
        >= sum(res["false_transitions"][p] for p in ("cold", "rest")),
        f"{tag}: the whole run holds the phases' false transitions",
    )
    late = res["lease_lateness_max"]["all"]
    require(
        late is not None and -res["renew_interval"] < late < res["phases"]["all"][1],
        f"{tag}: Lease renewals seen, lateness {late}",
    )
    require(
        res["tokens"] >= res["cold_start"] >= res["first_profile"] >= 0, f"{tag}: phases in order"
    )
    require(res["p99"] >= res["p50"], f"{tag}: p99 >= p50")
    require(len(res["owned_before_kill"]) == res["r"], f"{tag}: every replica holds profiles")
    require(sum(res["owned_before_kill"].values()) == res["n"], f"{tag}: N profiles held")
    require(res["deleted"] == 0 and res["count_end"] == res["n"], f"{tag}: no profile lost")
    require(res["tracebacks"] == 0, f"{tag}: no traceback in the replicas' logs")
    if res.get("squeeze"):
        require(
            res["phases"]["drain"][1] >= res["phases"]["squeeze"][1] > res["phases"]["squeeze"][0],
            f"{tag}: squeeze then drain, in order",
        )
        require(
            0 <= res["squeeze_changes_through"] <= res["squeeze_changes"],
            f"{tag}: squeeze changes counted",
        )
    if res["r"] > 1:
        require(res["kill_lost"] == 0, f"{tag}: kill lost no profile")
        require(
            res["kill_bad_holders"] == res["kill_victim_writes"] == res["join_bad_holders"] == 0,
            f"{tag}: no profile written by two replicas",
        )
        require(
            res["join_moved"] == res["join_expected_moves"],
            f"{tag}: the join moved what rendezvous says",
        )


def _key(res: dict[str, Any]) -> tuple[int, int, float, float]:
    """A record's place: (N, R, CPU quota or 0, squeeze or 0); a quota or squeeze run does
    not replace a free one."""
    return res["n"], res["r"], res.get("cpu_quota") or 0.0, res.get("squeeze") or 0.0


def merge(path: Path, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Results in ``path`` with these replacing the same (mode, N, R, quota); written back,
    sorted (the manager mode's records first)."""
    old = json.loads(path.read_text()) if path.exists() else []

    def key(x: dict[str, Any]) -> tuple[str, int, int, float, float]:
        return (x.get("mode") or "", *_key(x))

    new = {key(x): x for x in old}
    new.update({key(x): x for x in results})
    merged = [new[k] for k in sorted(new)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")
    return merged


def _series(results: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(label, runs by N) per (R, quota, squeeze)."""
    out = []
    for _, r, quota, squeeze in sorted({(0, *_key(x)[1:]) for x in results}):
        runs = sorted((x for x in results if _key(x)[1:] == (r, quota, squeeze)), key=_key)
        label = (
            f"R={r}"
            + (f" at {quota:g} cores" if quota else "")
            + (f" squeezed to {squeeze:g}" if squeeze else "")
        )
        out.append((label, runs))
    return out


def plot(results: list[dict[str, Any]], path: Path) -> None:
    """Against N: CPU, RSS, cold start and its floors, CPU by group, false health
    transitions, shard changes, Lease renewal lateness; and the curve of any cold start
    that did not finish."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stuck = [x for x in results if "cold_start" not in x and x.get("cold_curve")]
    cols = max(5, len(stuck))
    fig, grid = plt.subplots(
        2 + bool(stuck), cols, figsize=(5 * cols, 4.5 * (2 + bool(stuck))), squeeze=False
    )
    axes = list(grid[0][:5]) + list(grid[1][:5])
    curves = list(grid[2][: len(stuck)]) if stuck else []
    for ax in [a for line in grid for a in line if a not in axes and a not in curves]:
        ax.set_visible(False)
    for ax, res in zip(curves, stuck, strict=True):
        curve = res["cold_curve"]
        ts = [p["t"] for p in curve]
        ax.plot(ts, [p["full"] for p in curve], "k-", label="profiles at full status")
        ax.plot(ts, [p["profiles"] for p in curve], "k--", label="profiles")
        ax.set_ylabel("profiles")
        cores = ax.twinx()
        for label in ("hub apiserver", "member apiservers", "proxy", "etcd"):
            cores.plot(ts, [p["cores"][label] for p in curve], label=label, alpha=0.7)
        cores.plot(
            ts,
            [sum(v for k, v in p["cores"].items() if k.startswith("replica")) for p in curve],
            label="replicas",
            alpha=0.7,
        )
        cores.plot(ts, [p["cores"]["machine"] for p in curve], ":", label="machine")
        cores.set_ylabel("cores")
        cores.set_ylim(0, (os.cpu_count() or 2) * 1.05)
        cores.legend(fontsize=7, loc="center right")
        ax.set_title(f"N={res['n']} R={res['r']}: cold start did not finish")
        ax.set_xlabel("seconds after spawning the replicas")
    group_colour = dict(zip(GROUPS, ("C0", "C1", "C2", "C3"), strict=True))
    for k, (label, runs) in enumerate(_series(results)):
        style = ("o-", "s--", "^:", "d-.")[k % 4]
        cold = [x for x in runs if "cold_start" in x]
        steady = [x for x in runs if "steady_cores" in x]
        ns = [x["n"] for x in steady]
        axes[0].plot(ns, [summary(x)["cores_per_1k"] for x in steady], style, label=label)
        axes[1].plot(ns, [summary(x)["rss_max"] for x in steady], style, label=label)
        ns = [x["n"] for x in cold]
        axes[2].plot(ns, [x["cold_start"] for x in cold], style, label=f"cold start, {label}")
        both = [x for x in cold if "member_floor" in x]
        axes[2].plot(
            [x["n"] for x in both],
            [2 * (x["floor"] + x["member_floor"]) for x in both],
            "x:",
            label=f"2 x (hub + member floor), {label}",
        )
        axes[3].plot(
            ns, [summary(x)["ratio"] for x in cold], style, alpha=0.4, label=f"/ hub floor, {label}"
        )
        axes[3].plot(
            [x["n"] for x in both],
            [summary(x)["ratio_floors"] for x in both],
            style,
            label=f"/ (hub + member floor), {label}",
        )
        floors = [x for x in runs if "member_floor" in x]
        axes[4].plot(
            [x["n"] for x in floors],
            [x["member_floor"] for x in floors],
            style,
            label=f"member, {label}",
        )
        hub = [x for x in runs if "floor" in x]
        axes[4].plot(
            [x["n"] for x in hub],
            [x["floor"] for x in hub],
            style,
            alpha=0.4,
            label=f"hub, {label}",
        )
        for ax, phase in ((axes[5], "cold_groups"), (axes[6], "steady_groups")):
            runs_g = [x for x in runs if phase in summary(x)]
            for group in GROUPS:
                ax.plot(
                    [x["n"] for x in runs_g],
                    [summary(x)[phase][group] for x in runs_g],
                    style,
                    color=group_colour[group],
                    label=f"{group}, {label}",
                )
        for ax, figure in ((axes[7], "false_transitions"), (axes[8], "shard_changes")):
            counted = [x for x in runs if figure in x]
            for phase in ("cold", "rest", "kill_join"):
                has = [x for x in counted if phase in x[figure]]
                if has:
                    ax.plot(
                        [x["n"] for x in has],
                        [x[figure][phase] for x in has],
                        style,
                        label=f"{phase}, {label}",
                    )
        late = [x for x in runs if (x.get("lease_lateness_max") or {}).get("all") is not None]
        axes[9].plot(
            [x["n"] for x in late],
            [x["lease_lateness_max"]["all"] for x in late],
            style,
            label=f"max, {label}",
        )
        axes[9].plot(
            [x["n"] for x in late],
            [x["lease_lateness_p99"]["all"] for x in late],
            style,
            alpha=0.4,
            label=f"p99, {label}",
        )
    titles = (
        ("Rest CPU per 1,000 members (all replicas)", "cores"),
        ("RSS of the largest replica", "MiB"),
        ("Cold start to every profile at full status", "seconds"),
        ("Cold start / floors", "ratio"),
        ("Floors: hub writes, member requests", "seconds"),
        ("CPU by process group, cold start", "cores"),
        ("CPU by process group, at rest", "cores"),
        ("False health transitions", "count"),
        ("Shard membership changes (not the benchmark's)", "count"),
        ("Lease renewal lateness, whole run", "seconds"),
    )
    for ax, (title, unit) in zip(axes, titles, strict=True):
        ax.set_title(title)
        ax.set_ylabel(unit)
    axes[1].axhline(400, color="grey", linestyle=":", label="target 400 MiB (10,000 over 3)")
    axes[2].axhline(180, color="grey", linestyle=":", label="target 180 s (10,000)")
    axes[3].axhline(2, color="grey", linestyle=":", label="target 2x")
    probe = ", ".join(sorted({f"{x['probe_interval']:g}" for x in results}))
    for ax in axes:
        if ax.has_data():
            ax.set_xscale("log")
        ax.set_xlabel("distinct members N")
    for ax in axes + curves:
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper left" if ax in curves else None)
    fig.suptitle(
        f"bench/fleet_scale.py: cluster manager replicas (probe interval {probe} s, 2 cores)"
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def manager_mode(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of the manager mode (``--mode agents`` records carry ``mode``)."""
    return [x for x in results if not x.get("mode")]


def report(results: list[dict[str, Any]], *, markdown: bool = False) -> None:
    """The table, as printed after a run or (``markdown``) for ``docs/scale.md``."""
    results = manager_mode(results)
    if not markdown:
        print(HEADER)
        for res in results:
            print(row(res))
        return
    head = ["N", "R", "quota", "floor s", "mfloor s", "cold s", "ratio", "c/(h+m)", "tokens s"]
    head += ["core/rep", "cores/1k", "c/1k held", "cold h/r/m/b", "rest h/r/m/b", "MiB/rep"]
    head += ["hub w/s", "p50 ms", "p99 ms", "false c/r/k", "shard c/r/k", "late p99/max s"]
    head += ["lag p99 s", "kill s", "lost", "2-wr", "moved/exp/N/k"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---:|" * len(head))
    for res in results:
        cells = row(res).replace("  (error)", " (error)").split()
        print("| " + " | ".join(cells) + " |")


COLUMNS = (
    "columns: quota = CPU limit per replica (cores; sX = squeezed to X cores after the rest, "
    "--squeeze); floor = N profiles created + status "
    "written directly; mfloor = a plain client's GET /readyz + LIST + WATCH ClusterProperty "
    "per member; cold = spawn to all full; ratio = cold/floor; c/(h+m) = cold/(floor+mfloor), "
    "target <= 2; core/rep = rest cores of the busiest replica; cores/1k = all replicas' rest "
    "cores per 1,000 members; c/1k held = the busiest replica's rest cores per 1,000 members it "
    "holds; h/r/m/b = cores of hub (apiserver + etcd) / replicas / simulated members (proxies + "
    "member apiservers) / this bench; hub w/s = mutating requests/s on the hub at rest; "
    "false c/r/k = ControlPlaneHealthy True->not True in cold start / rest / kill+join (a "
    "squeeze run: c/r/s/k, s = squeezed); shard "
    "c/r/k = replicas gone or back not caused by the bench, same phases; late = Lease renewal "
    "gap minus renew interval, whole run; lag = replicas' event-loop lag p99 at rest (their "
    "metric); kill s = SIGKILL to the victim's members fresh; 2-wr = profiles written by two "
    "replicas; moved/exp/N/k = holders changed by the join / rendezvous prediction / N over the "
    "replicas after it"
)


async def main(
    sizes: list[int],
    replica_counts: list[int],
    s: Settings,
    out: Path,
    png: Path,
    agents: Any = None,
) -> None:
    """Every (N, R) of the manager mode; then, given ``agents`` (``_agents.AgentSettings``,
    the smoke), one agent-mode run of N=8, R=1 on the same fleet."""
    results = []
    async with Fleet(2) as fleet, VirtualMembers(fleet, max(sizes)) as vm:
        await vm.set_shared_property(SHARED_PROPERTY, "eu")
        async with await fleet.hub.client() as hub:
            for n in sorted(sizes):
                for r in replica_counts:  # in the order given: the likelier to finish first
                    res = await run_one(fleet, vm, hub, n, r, s)
                    for line in details(res):
                        print(line, flush=True)
                    print(row(res), flush=True)
                    results.append(res)
            if agents is not None:
                import _agents

                res = await _agents.run_one(fleet, hub, 8, 1, agents, s)
                for line in _agents.details(res):
                    print(line, flush=True)
                results.append(res)
    merged = merge(out, results)
    plot(manager_mode(merged), png)
    print(f"settings: {s}")
    report(results)
    print(COLUMNS)
    if agents is not None:
        _agents.report(results)
    print(f"results merged into {out}; plot {png}")
    for res in manager_mode(results):
        check(res)
    if agents is not None:
        for res in results:
            if res.get("mode") == "agents":
                _agents.check(res)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000])
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--probe-interval", type=float, default=30.0, help="seconds (every N)")
    parser.add_argument("--changes", type=int, default=100)
    parser.add_argument(
        "--rest", type=float, help="window at rest, seconds (default: one probe interval)"
    )
    parser.add_argument(
        "--cpu-quota",
        type=float,
        metavar="CORES",
        help="run each replica under a CPU limit of CORES (cgroup; overload mode)",
    )
    parser.add_argument(
        "--squeeze",
        type=float,
        metavar="CORES",
        help="after the rest, limit every replica to CORES (cgroup) for --squeeze-for s, "
        "then lift it and time the drain (overload mode)",
    )
    parser.add_argument("--squeeze-for", type=float, default=150.0, help="seconds")
    parser.add_argument("--lease-duration", type=float, default=10.0)
    parser.add_argument("--renew-interval", type=float, default=2.0)
    parser.add_argument("--timeout", type=float, default=600.0, help="per phase, seconds")
    parser.add_argument("--json", type=Path, default=RESULTS, help="results merged into this file")
    parser.add_argument("--plot", type=Path, default=PLOT, help="PNG drawn from --json")
    parser.add_argument("--plot-only", action="store_true", help="table and plot from --json only")
    parser.add_argument(
        "--markdown", action="store_true", help="with --plot-only: a markdown table"
    )
    parser.add_argument(
        "--mode",
        choices=("manager", "agents"),
        default="manager",
        help="manager: probed virtual members (above); agents: pull-mode agent members "
        "(bench/_agents.py)",
    )
    parser.add_argument(
        "--agent-lease", type=float, default=60.0, help="agents: Lease duration, s (OCM's 60)"
    )
    parser.add_argument(
        "--agent-heartbeat-multiple",
        type=float,
        default=5.0,
        help="agents: Unknown after this many lease durations without a renewal (OCM's 5)",
    )
    parser.add_argument(
        "--agent-kill", type=int, default=20, help="agents: how many agents are stopped"
    )
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    if args.plot_only:
        merged = json.loads(args.json.read_text())
        plot(manager_mode(merged), args.plot)
        report(merged, markdown=args.markdown)
        import _agents

        _agents.report(merged, markdown=args.markdown)
        sys.exit(0)
    if args.smoke:
        args.sizes, args.replicas, args.changes = [12], [1, 3], 5
        args.probe_interval, args.lease_duration, args.renew_interval = 2.0, 3.0, 1.0
        args.timeout = 90.0
        try:  # the squeeze too, where this machine can limit CPU (root and cgroups)
            limit_kind()
            args.squeeze, args.squeeze_for = 0.01, 4.0
        except SystemExit as exc:
            print(f"smoke: no squeeze phase here: {exc}")
        args.agent_lease, args.agent_heartbeat_multiple, args.agent_kill = 1.0, 2.0, 2
        if args.mode == "agents":
            args.sizes, args.replicas = [8], [1]
        scratch = Path(tempfile.mkdtemp(prefix="fleet-scale-smoke-"))
        args.json, args.plot = scratch / "fleet_scale.json", scratch / "fleet_scale.png"
    settings = Settings(
        probe_interval=args.probe_interval,
        lease_duration=args.lease_duration,
        renew_interval=args.renew_interval,
        rest=args.rest or args.probe_interval,
        changes=args.changes,
        timeout=args.timeout,
        cpu_quota=args.cpu_quota,
        squeeze=args.squeeze,
        squeeze_for=args.squeeze_for,
    )
    if args.mode == "agents" or args.smoke:
        import _agents

        agent_settings = _agents.AgentSettings(
            lease=args.agent_lease,
            multiple=args.agent_heartbeat_multiple,
            rest=args.rest or args.agent_lease,
            changes=args.changes,
            kill=args.agent_kill,
            timeout=args.timeout,
        )
    if args.mode == "agents":
        asyncio.run(_agents.main(args.sizes, args.replicas, agent_settings, settings, args.json))
        if args.smoke:
            shutil.rmtree(args.json.parent)
        sys.exit(0)
    asyncio.run(
        main(
            args.sizes,
            args.replicas,
            settings,
            args.json,
            args.plot,
            agent_settings if args.smoke else None,
        )
    )
    if args.smoke:
        require(args.plot.stat().st_size > 10_000, "the plot was drawn")
        shutil.rmtree(args.plot.parent)

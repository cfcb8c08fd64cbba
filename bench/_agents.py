"""``fleet_scale.py --mode agents``: N pull-mode agent members against one hub (issue 33).

For each N in --sizes and R in --replicas, against the local Fleet's hub
(``cluster_inventory.testing``):

- **floor**: ``_fleet.namespaces.floor``, N ClusterProfiles created and their status written
  directly (16 in flight), on the same hub just before the run;
- **setup, not timed against a target**: N members accepted with the real
  ``cluster_inventory.manager.admin.agents.accept`` (registration Secret, Role, RoleBinding, Lease,
  MemberReport; 64 in flight), N agent identities minted from the hub's client CA (a real
  agent joins by a CSR round trip, not measured here), then N simulated agents started in
  ONE child process (``_agent_swarm.py``: each its own client certificate, hub client, Lease
  renewed by the real ``Heartbeat``, MemberReport written by the real
  ``MemberReporter.flush``; no member cluster per agent, the member side is in-process);
  ``idle``: cores of the hub's apiserver and etcd before the agents start;
- **cold start**: with every agent reporting, R ``cluster-inventory manager run --sharding``
  replicas spawned by ``_fleet.replicas.spawn`` (``--agent-heartbeat-multiple``), seconds
  until every profile has full status (ControlPlaneHealthy and Joined True, version,
  properties, an access provider), and its ratio to the floor (target <= 2);
- **rest** over --rest seconds (default one lease duration, so every agent renews about once):
  hub writes/s by resource from the hub apiserver's own ``apiserver_request_total`` (mutating
  verbs) against N / lease duration; cores of the hub apiserver, etcd, the replicas (target
  <= 0.05 core), the agents process and this one; RSS of each;
- **kill and change**, together: --kill agents stopped at once (no more renewals or
  reports, their connections dropped, like a SIGKILL), seconds until each profile says
  Unknown ``AgentHeartbeatStale``, against lease x multiple + 2 s; meanwhile --changes
  property changes, one at a time on distinct live members, from the order to the agent
  until the profile watch sees the value (p50, p99; target p99 <= 1 s; it includes the
  reporter's 0.2 s coalescing); ControlPlaneHealthy changes away from True on the other
  profiles over the whole run are false (must be 0).

Records carry ``mode: agents`` and are merged into the same json as the manager mode's.
Objects of a run are left on the hub (the run's own namespaces; nothing writes them once
its agents and replicas stop): the hub runs no namespace controller, and deleting N x 6
objects one by one would take longer than the run.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import bounded, percentile, require, require_times, rss_mib
from _fleet.meter import CpuMeter
from _fleet.namespaces import namespaces_and_floor
from _fleet.profiles import ProfileWatch, full, props, quantiles, wait
from _fleet.replicas import Replica, replica_name, spawn, stop
from _fleet.results import merge
from _fleet.scrapes import hub_refused, hub_writes
from _fleet.settings import Settings, commit

from cluster_inventory import kube
from cluster_inventory.manager.admin.agents import accept
from cluster_inventory.testing import Fleet

SWARM = Path(__file__).resolve().parent / "_agent_swarm.py"
STALE = "AgentHeartbeatStale"


@dataclass(frozen=True, kw_only=True)
class AgentSettings:
    """Timings of the agent mode (seconds) and sample sizes, printed with the results."""

    lease: float
    multiple: float
    rest: float
    changes: int
    kill: int
    timeout: float


def agent_full(profile: dict[str, Any]) -> bool:
    """Full status of an agent member's profile: ``_fleet.profiles.full`` without the
    PropertiesSynced condition, which only a probed member's ClusterProperty watch sets."""
    return full(profile, properties_synced=False)


def stale(profile: dict[str, Any]) -> bool:
    return any(
        c["type"] == "ControlPlaneHealthy" and c["status"] == "Unknown" and c["reason"] == STALE
        for c in (profile.get("status") or {}).get("conditions") or ()
    )


class Swarm:
    """The agents' child process and its line protocol (``_agent_swarm.py``)."""

    def __init__(self, proc: asyncio.subprocess.Process, log: Path) -> None:
        self.proc = proc
        self.log = log
        self.lock = asyncio.Lock()

    @classmethod
    async def start(cls, spec: dict[str, Any], run: str) -> Swarm:
        fd, path = tempfile.mkstemp(prefix=f"{run}-agents-", suffix=".json")
        with os.fdopen(fd, "w") as handle:  # 0600: it holds the agents' keys (a test CA)
            json.dump(spec, handle)
        log = Path(tempfile.gettempdir()) / f"fleet-scale-{run}-agents.log"
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(SWARM),
            path,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=open(log, "wb"),
            cwd=SWARM.parent,
        )
        return cls(proc, log)

    async def read(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        if not line:
            tail = self.log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the agents process ended ({self.proc.returncode}): {tail}")
        return dict(json.loads(line))

    async def ask(self, cmd: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]:
        assert self.proc.stdin is not None
        async with self.lock:
            self.proc.stdin.write((json.dumps(cmd) + "\n").encode())
            await self.proc.stdin.drain()
            return await self.read(timeout)

    async def stop(self) -> None:
        if self.proc.returncode is None:
            try:
                await self.ask({"op": "stop"}, 10)
            except (RuntimeError, TimeoutError, OSError):
                pass
            try:
                await asyncio.wait_for(self.proc.wait(), 60)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


async def run_one(
    fleet: Fleet, hub: kube.ApiClient, n: int, r: int, a: AgentSettings, s: Settings
) -> dict[str, Any]:
    """One (N, R) run of the agent mode; the figures (and ``error`` if it failed)."""
    run = f"ag{n}r{r}"
    system, inventory, floor_ns = f"{run}-system", f"{run}-inv", f"{run}-floor"
    names = [f"agent-{i}" for i in range(n)]
    res: dict[str, Any] = {
        "mode": "agents",
        "n": n,
        "r": r,
        "agent_lease": a.lease,
        "agent_heartbeat_multiple": a.multiple,
        "rest": a.rest,
        "loadavg_before": os.getloadavg()[0],
        "commit": commit(),
    }
    res["floor"] = await namespaces_and_floor(hub, system, floor_ns, inventory, run, n)

    started = time.perf_counter()
    acceptances = await bounded(
        [accept(hub, system, name, [run], lease_duration=max(1, round(a.lease))) for name in names],
        64,
    )
    res["accept_s"] = time.perf_counter() - started
    started = time.perf_counter()
    agents = []
    for acceptance in acceptances:
        name = acceptance.name
        conn = fleet.hub.connection(acceptance.agent_user, list(acceptance.agent_groups))
        assert conn.client_cert_data and conn.client_key_data
        agents.append(
            {
                "name": name,
                "cert": conn.client_cert_data.decode(),
                "key": conn.client_key_data.decode(),
            }
        )
    res["identities_s"] = time.perf_counter() - started

    hub_pids = {
        "hub apiserver": [fleet.hub.apiserver_process.pid],
        "etcd": [fleet.etcd.process.pid],
    }
    meter = CpuMeter(hub_pids)
    idle_w = await hub_writes(hub)
    idle_a = meter.snapshot()
    await asyncio.sleep(min(5.0, a.lease))
    idle_b = meter.snapshot()
    res["idle_cores"] = CpuMeter.cores(idle_a, idle_b)
    wall = idle_b["wall"] - idle_a["wall"]
    res["idle_writes_per_s"] = sum((await hub_writes(hub) - idle_w).values()) / wall

    spec = {
        "server": fleet.hub.server,
        "ca": fleet.hub.ca_pem.decode(),
        "namespace": system,
        "lease": a.lease,
        "concurrency": 32,
        "agents": agents,
    }
    del agents
    refused = {"before": await hub_refused(hub)}
    started = time.perf_counter()
    swarm = await Swarm.start(spec, run)
    del spec
    replicas: dict[str, Replica] = {}
    watch = ProfileWatch(hub, run, inventory)
    try:
        ready = await swarm.read(a.timeout)
        res["agents_start_s"] = time.perf_counter() - started
        res["agents_ready"] = ready["agents"]
        res["agents_rss_ready"] = ready["rss_mib"]
        res["agents_start_retries"] = ready["start_retries"]
        require(ready["agents"] == n, f"N={n}: {ready['agents']} agents started")
        refused["agents started"] = await hub_refused(hub)
        await _measure(
            fleet, hub, n, r, a, s, run, system, names, swarm, watch, replicas, res, refused
        )
    except Exception as exc:  # the figures so far are kept and printed with the error
        res["error"] = f"{type(exc).__name__}: {exc}"
        res["full_at_error"] = len([p for p in watch.informer.items() if agent_full(p)])
    finally:
        await stop(replicas.values())
        await swarm.stop()
        await watch.informer.__aexit__()
    res["tracebacks"] = sum(rep.tracebacks() for rep in replicas.values()) + swarm.log.read_text(
        errors="replace"
    ).count("Traceback")
    res["exit_codes"] = {name: rep.proc.returncode for name, rep in replicas.items()}
    return res


async def _measure(
    fleet: Fleet,
    hub: kube.ApiClient,
    n: int,
    r: int,
    a: AgentSettings,
    s: Settings,
    run: str,
    system: str,
    names: list[str],
    swarm: Swarm,
    watch: ProfileWatch,
    replicas: dict[str, Replica],
    res: dict[str, Any],
    refused: dict[str, float],
) -> None:
    """The cold start, the rest, the kill and the changes; ``refused`` gets the hub's 429
    count at the end of each."""
    await watch.informer.__aenter__()
    await watch.informer.wait_synced()
    pids: dict[str, list[int]] = {
        "hub apiserver": [fleet.hub.apiserver_process.pid],
        "etcd": [fleet.etcd.process.pid],
        "agents": [swarm.proc.pid],
        "bench": [os.getpid()],
    }
    meter = CpuMeter(pids)
    everyone = set(names)
    all_full = watch.waiter(everyone, lambda _, o: agent_full(o))
    created = watch.waiter(everyone, lambda _, o: True)
    kc = str(fleet.hub.kubeconfig_path)
    cpu_start = meter.snapshot()
    started = time.perf_counter()
    # The manager counts an agent's own lease duration only within its bounds (docs/agent.md).
    extra = [
        "--agent-heartbeat-multiple",
        str(a.multiple),
        "--agent-lease-duration-min",
        str(min(a.lease, 10.0)),
    ]
    for k in range(r):
        name = replica_name(run, k)
        replicas[name] = spawn(name, run, system, kc, s, extra=extra)
        pids[f"replica {name}"] = [replicas[name].proc.pid]
    await wait(all_full, a.timeout, f"N={n} R={r}: agent profiles at full status")
    res["cold_start"] = all_full.at - started
    res["first_profile"] = watch.first_event - started
    res["all_profiles"] = created.at - started
    res["cold_cores"] = CpuMeter.cores(cpu_start, meter.snapshot())
    watch.waiters.remove(all_full)
    watch.waiters.remove(created)
    refused["cold"] = await hub_refused(hub)

    await asyncio.sleep(min(5.0, a.rest / 5))  # the last writes' echoes
    t0 = time.perf_counter()
    before = await hub_writes(hub)
    t0 = (t0 + time.perf_counter()) / 2  # the scrape's middle: a short window stays fair
    agents_a = await swarm.ask({"op": "stats"})
    cpu_a = meter.snapshot()
    await asyncio.sleep(a.rest)
    cpu_b = meter.snapshot()
    agents_b = await swarm.ask({"op": "stats"})
    t1 = time.perf_counter()
    after = await hub_writes(hub)
    t1 = (t1 + time.perf_counter()) / 2
    refused["rest"] = await hub_refused(hub)
    wall = cpu_b["wall"] - cpu_a["wall"]
    delta = after - before
    res["rest_s"] = wall
    res["hub_writes_per_s"] = sum(delta.values()) / (t1 - t0)
    res["hub_writes_by_resource"] = {k: round(v / (t1 - t0), 3) for k, v in delta.most_common()}
    res["agent_renewals_per_s"] = (agents_b["renewals"] - agents_a["renewals"]) / wall
    # Each replica renews its shard Lease every renew interval.
    res["replica_lease_writes_per_s"] = r / s.renew_interval
    res["agent_report_writes_rest"] = agents_b["writes"] - agents_a["writes"]
    res["steady_cores"] = rest = CpuMeter.cores(cpu_a, cpu_b)
    idle = res["idle_cores"]
    # What the hub's apiserver and etcd spend per write at rest, beyond their idle cost.
    extra = sum(rest[k] - idle[k] for k in ("hub apiserver", "etcd"))
    res["hub_core_ms_per_write"] = 1000 * extra / max(1e-9, res["hub_writes_per_s"])
    res["rss"] = {
        label: round(rss_mib(*ps), 1) for label, ps in pids.items() if label != "etcd"
    } | {"etcd": round(rss_mib(fleet.etcd.process.pid), 1)}
    res["agents_open_fds"] = agents_b["open_fds"]
    res["agents_ended"] = agents_b["ended"]

    # Kill a sample and change properties on others, at once: the stale wait overlaps.
    step = max(1, n // max(1, a.kill))
    victims = names[::step][: a.kill]
    live = [x for x in names if x not in set(victims)]
    step = max(1, len(live) // max(1, a.changes))
    sample = live[::step][: a.changes]
    went_stale = watch.waiter(set(victims), lambda _, o: stale(o))
    cpu_k = meter.snapshot()
    killed = time.perf_counter()
    await swarm.ask({"op": "kill", "names": victims})
    res["killed"] = len(victims)
    lat = await property_changes(swarm, watch, sample, run)
    res["changes"] = len(lat)
    res["p50"] = statistics.median(lat)
    res["p99"] = percentile(lat, 0.99)
    res["change_latencies"] = [round(x, 3) for x in lat]
    limit = a.lease * a.multiple + 2
    await wait(went_stale, limit + 30, f"N={n}: killed agents' profiles Unknown")
    res["kill_unknown_quantiles"] = quantiles([t - killed for t in went_stale.times])
    res["kill_unknown_max"] = went_stale.at - killed
    res["kill_limit"] = limit
    res["kill_cores"] = CpuMeter.cores(cpu_k, meter.snapshot())
    dead = set(victims)
    false = [x for x in watch.false_transitions if x[1] not in dead]
    res["false_transitions"] = len(false)
    res["false_transition_reasons"] = sorted({reason for _, _, reason, _ in false})
    res["killed_other_reasons"] = sorted(
        {reason for _, name, reason, _ in watch.false_transitions if name in dead}
        - {f"Unknown/{STALE}"}
    )
    res["deleted"] = watch.deleted
    res["count_end"] = len(watch.informer.keys())
    res["agents_write_failures"] = (await swarm.ask({"op": "stats"}))["write_failures"]
    refused["kill"] = await hub_refused(hub)
    # Requests the hub refused (429) in each phase: the agents' start, the cold start, the
    # rest (from the cold start's end), the kill and the changes.
    marks = list(refused.items())
    res["hub_429"] = {b[0]: b[1] - a[1] for a, b in itertools.pairwise(marks)}


async def property_changes(
    swarm: Swarm, watch: ProfileWatch, sample: list[str], run: str
) -> list[float]:
    """Seconds from ordering each change to its agent until its profile shows the value."""
    latencies = []
    prop = f"change-{run}.example.com"
    for k, name in enumerate(sample):
        value = f"v{k}"
        seen = watch.waiter({name}, lambda _, o, v=value: props(o).get(prop) == v)
        started = time.perf_counter()
        await swarm.ask({"op": "change", "name": name, "prop": prop, "value": value})
        latencies.append(await wait(seen, 30, f"property change on {name}") - started)
        watch.waiters.remove(seen)
    return latencies


# -- output ------------------------------------------------------------------------------
HEADER = (
    f"{'mode':>6} {'N':>6} {'R':>2} {'lease':>8} {'floor':>7} {'cold':>7} {'ratio':>5} "
    f"{'hub w/s':>8} {'N/L':>7} {'l/r/p w/s':>16} {'hub c':>6} {'idle':>5} "
    f"{'mgr c':>6} {'agt c':>6} {'MiB m/a/h':>16} {'p50 ms':>6} {'p99 ms':>6} "
    f"{'kill s':>11} {'false':>5}"
)

COLUMNS = (
    "agents columns: lease = agent Lease duration s x heartbeat multiple; floor = N profiles "
    "created + status written directly, s; cold = manager spawn to every profile at full "
    "status, s; ratio = cold/floor (target <= 2); hub w/s = mutating requests/s on the hub at "
    "rest (every writer), N/L = N / lease duration; l/r/p = of which leases / memberreports / "
    "clusterprofiles; hub c = cores of hub apiserver + etcd at rest, idle = the same before the "
    "agents started; mgr c = cores of all replicas at rest (target <= 0.05); agt c = the agents "
    "process; MiB m/a/h = RSS of the replicas / agents process / hub apiserver; p50/p99 = "
    "property change, ordered to the agent until the profile shows it (target p99 <= 1000); "
    "kill s = last killed agent's profile Unknown AgentHeartbeatStale / lease x multiple + 2; "
    "false = ControlPlaneHealthy True -> not True on the other profiles"
)


def row(res: dict[str, Any]) -> str:
    def f(key: str, fmt: str = ".1f") -> str:
        v = res.get(key)
        return "-" if v is None else format(v, fmt)

    by = res.get("hub_writes_by_resource") or {}
    lrp = "/".join(
        format(by.get(k, 0.0), ".1f")
        for k in ("leases", "memberreports/status", "clusterprofiles/status")
    )
    rest = res.get("steady_cores") or {}
    idle = res.get("idle_cores") or {}
    hub_c = rest.get("hub apiserver", 0.0) + rest.get("etcd", 0.0) if rest else None
    idle_c = idle.get("hub apiserver", 0.0) + idle.get("etcd", 0.0) if idle else None
    mgr = sum(v for k, v in rest.items() if k.startswith("replica ")) if rest else None
    rss = res.get("rss") or {}
    mib = "/".join(
        format(x, ".0f")
        for x in (
            sum(v for k, v in rss.items() if k.startswith("replica ")),
            rss.get("agents", 0.0),
            rss.get("hub apiserver", 0.0),
        )
    )
    n_over_l = res["n"] / res["agent_lease"]
    lease = f"{res['agent_lease']:g}x{res['agent_heartbeat_multiple']:g}"
    kill = f"{f('kill_unknown_max')}/{f('kill_limit', 'g')}"
    ms = {k: "-" if res.get(k) is None else f"{1000 * res[k]:.0f}" for k in ("p50", "p99")}
    out = (
        f"{'agents':>6} {res['n']:>6} {res['r']:>2} {lease:>8} {f('floor'):>7} "
        f"{f('cold_start'):>7} {_ratio(res):>5} {f('hub_writes_per_s'):>8} {n_over_l:>7.1f} "
        f"{lrp:>16} {_num(hub_c, '.3f'):>6} {_num(idle_c, '.2f'):>5} {_num(mgr, '.3f'):>6} "
        f"{_num(rest.get('agents'), '.3f'):>6} {mib:>16} {ms['p50']:>6} {ms['p99']:>6} "
        f"{kill:>11} {f('false_transitions', 'd'):>5}"
    )
    return out + ("  (error)" if "error" in res else "")


def _num(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def _ratio(res: dict[str, Any]) -> str:
    if res.get("cold_start") is None or not res.get("floor"):
        return "-"
    return f"{res['cold_start'] / res['floor']:.2f}"


def targets(res: dict[str, Any]) -> dict[str, bool | None]:
    """Issue 33's targets for this record: met (True), missed (False), not measured (None)."""
    rest = res.get("steady_cores") or {}
    mgr = sum(v for k, v in rest.items() if k.startswith("replica ")) if rest else None
    cold, floor = res.get("cold_start"), res.get("floor")
    writes = res.get("hub_writes_per_s")
    by = res.get("hub_writes_by_resource") or {}
    changes = by.get("memberreports/status", 0.0) + by.get("clusterprofiles/status", 0.0)
    # The hub's own writes before the agents (its apiserver's Leases) and each replica's
    # shard Lease are writes too; what the agents add is measured against N / lease.
    # Renewals come every lease x (1 +/- 0.25), N / lease per second on average; a window of
    # one lease counts them with a few percent of sampling noise, hence the 5%.
    budget = (
        1.05 * res["n"] / res["agent_lease"]
        + changes
        + res.get("idle_writes_per_s", 0.0)
        + res.get("replica_lease_writes_per_s", 0.0)
    )
    return {
        "cold <= 2 x floor": None if cold is None or not floor else cold <= 2 * floor,
        "manager <= 0.05 core at rest": None if mgr is None else mgr <= 0.05,
        "hub writes <= N/lease (+ changes)": None if writes is None else writes <= budget,
        "killed -> Unknown <= lease x multiple + 2 s": (
            None
            if res.get("kill_unknown_max") is None
            else res["kill_unknown_max"] <= res["kill_limit"]
        ),
        "property change p99 <= 1 s": None if res.get("p99") is None else res["p99"] <= 1.0,
        "no false transition": (
            None if res.get("false_transitions") is None else res["false_transitions"] == 0
        ),
    }


def details(res: dict[str, Any]) -> list[str]:
    tag = f"agents N={res['n']} R={res['r']}"
    out = [
        f"{tag}: setup accept {res.get('accept_s', 0):.1f} s, identities "
        f"{res.get('identities_s', 0):.1f} s, agents started {res.get('agents_start_s', 0):.1f} s "
        f"(RSS {res.get('agents_rss_ready', 0):.0f} MiB), floor {res.get('floor', 0):.1f} s",
        f"{tag}: hub writes at rest by resource /s: {res.get('hub_writes_by_resource')}; "
        f"agents' renewals {res.get('agent_renewals_per_s', 0):.2f}/s, replicas' shard Leases "
        f"{res.get('replica_lease_writes_per_s', 0):.2f}/s, before the agents "
        f"{res.get('idle_writes_per_s', 0):.2f}/s",
        f"{tag}: cold start: first profile {res.get('first_profile', 0):.1f} s, all profiles "
        f"{res.get('all_profiles', 0):.1f} s, all full {res.get('cold_start', 0):.1f} s; hub "
        f"apiserver + etcd per write at rest beyond idle "
        f"{res.get('hub_core_ms_per_write', 0):.2f} core-ms",
        f"{tag}: cores at rest: "
        + ", ".join(f"{k} {v:.3f}" for k, v in (res.get("steady_cores") or {}).items()),
        f"{tag}: cores cold: "
        + ", ".join(f"{k} {v:.3f}" for k, v in (res.get("cold_cores") or {}).items()),
        f"{tag}: RSS MiB {res.get('rss')}; agents open fds {res.get('agents_open_fds')}",
        f"{tag}: hub 429s by phase {res.get('hub_429')}; agents' start retries "
        f"{res.get('agents_start_retries')}",
        f"{tag}: killed {res.get('killed')} -> Unknown quantiles "
        f"{res.get('kill_unknown_quantiles')}; other reasons {res.get('killed_other_reasons')}",
        f"{tag}: targets {targets(res)}",
    ]
    if "error" in res:
        out.append(f"{tag}: ERROR {res['error']}")
    return out


def check(res: dict[str, Any]) -> None:
    """Sanity of an agent-mode record (exit code 1 when it fails)."""
    tag = f"agents N={res['n']} R={res['r']}"
    require("error" not in res, f"{tag}: {res.get('error')}")
    require_times(
        floor=res["floor"],
        cold_start=res["cold_start"],
        p50=res["p50"],
        p99=res["p99"],
        hub_writes=res["hub_writes_per_s"],
        kill=res["kill_unknown_max"],
        **{f"rest {k}": v for k, v in res["steady_cores"].items()},
    )
    require(res["p99"] >= res["p50"], f"{tag}: p99 >= p50")
    require(res["cold_start"] >= res["first_profile"] >= 0, f"{tag}: phases in order")
    require(res["agent_renewals_per_s"] > 0, f"{tag}: the agents renewed their Leases at rest")
    require(
        res["hub_writes_by_resource"].get("leases", 0) > 0, f"{tag}: the hub counted Lease writes"
    )
    require(res["agents_ended"] == 0, f"{tag}: no live agent stopped by itself")
    require(res["false_transitions"] == 0, f"{tag}: no false transition")
    require(
        res["kill_unknown_max"] <= res["kill_limit"],
        f"{tag}: killed agents Unknown within lease x multiple + 2 s (the manager took the "
        f"multiple): {res['kill_unknown_max']:.1f} s",
    )
    require(not res["killed_other_reasons"], f"{tag}: killed agents only went stale")
    require(res["deleted"] == 0 and res["count_end"] == res["n"], f"{tag}: no profile lost")
    require(res["tracebacks"] == 0, f"{tag}: no traceback in the replicas' or agents' logs")


def report(results: list[dict[str, Any]], *, markdown: bool = False) -> None:
    """The agent mode's table rows (``markdown``: for ``docs/scale.md``)."""
    rows = [x for x in results if x.get("mode") == "agents"]
    if not rows:
        return
    if not markdown:
        print(HEADER)
        for res in rows:
            print(row(res))
        print(COLUMNS)
        return
    head = (
        HEADER.replace("l/r/p w/s", "l/r/p-w/s")
        .replace("hub w/s", "hub-w/s")
        .replace("hub c", "hub-c")
        .replace("mgr c", "mgr-c")
    )
    head = head.replace("agt c", "agt-c").replace("MiB m/a/h", "MiB-m/a/h").replace(" ms", "-ms")
    cols = head.replace("kill s", "kill-s").split()
    print("| " + " | ".join(c.replace("-", " ") for c in cols) + " |")
    print("|" + "---:|" * len(cols))
    for res in rows:
        print("| " + " | ".join(row(res).replace("  (error)", " (error)").split()) + " |")


async def main(
    sizes: list[int], replica_counts: list[int], a: AgentSettings, s: Settings, out: Path
) -> None:
    results = []
    async with Fleet(0) as fleet, await fleet.hub.client() as hub:
        for n in sorted(sizes):
            for r in replica_counts:
                res = await run_one(fleet, hub, n, r, a, s)
                for line in details(res):
                    print(line, flush=True)
                print(row(res), flush=True)
                results.append(res)
                merge(out, [res])  # each run kept as it ends: a later one may not finish
    print(f"agent settings: {a}")
    report(results)
    print(f"results merged into {out}")
    for res in results:
        check(res)

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
cost against N is drawn from that file into --plot (default ``docs/images/fleet_scale.png``
with the default --json, else the --json path with ``.png``).

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

This file is the entry point: the arguments, the run loop and the printing. The rest is the
``_fleet`` package, by role (its ``__init__`` says which module holds what); each run's
figures are the typed records of ``_fleet/record.py``, stored flat in --json.

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
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import _agents
from _common import SMOKE_HELP, require
from _cpu_limit import limit_kind
from _fleet.checks import check
from _fleet.namespaces import SHARED_PROPERTY
from _fleet.plot import plot
from _fleet.results import manager_runs, merge
from _fleet.run import run_one
from _fleet.settings import Settings
from _fleet.table import COLUMNS, details, report, row

from cluster_inventory.testing import Fleet
from cluster_inventory_workshop.virtual_members import VirtualMembers

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "fleet_scale.json"
PLOT = ROOT / "docs" / "images" / "fleet_scale.png"


async def main(
    sizes: list[int],
    replica_counts: list[int],
    s: Settings,
    out: Path,
    png: Path,
    agents: _agents.AgentSettings | None = None,
) -> None:
    """Every (N, R) of the manager mode; then, given ``agents`` (the smoke), one agent-mode
    run of N=8, R=1 on the same fleet."""
    runs = []
    agent_results: list[dict[str, Any]] = []
    async with Fleet(2) as fleet, VirtualMembers(fleet, max(sizes)) as vm:
        await vm.set_shared_property(SHARED_PROPERTY, "eu")
        async with await fleet.hub.client() as hub:
            for n in sorted(sizes):
                for r in replica_counts:  # in the order given: the likelier to finish first
                    run = await run_one(fleet, vm, hub, n, r, s)
                    for line in details(run):
                        print(line, flush=True)
                    print(row(run), flush=True)
                    runs.append(run)
            if agents is not None:
                res = await _agents.run_one(fleet, hub, 8, 1, agents, s)
                for line in _agents.details(res):
                    print(line, flush=True)
                agent_results.append(res)
    merged = merge(out, [run.to_json() for run in runs] + agent_results)
    plot(manager_runs(merged), png)
    print(f"settings: {s}")
    report(runs)
    print(COLUMNS)
    if agents is not None:
        _agents.report(agent_results)
    print(f"results merged into {out}; plot {png}")
    for run in runs:
        check(run)
    for res in agent_results:
        _agents.check(res)


def _arguments() -> argparse.Namespace:
    """The command line (see the module docstring)."""
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
    parser.add_argument(
        "--plot",
        type=Path,
        default=None,
        help=f"PNG drawn from --json (default: {PLOT.relative_to(ROOT)} with the default "
        "--json, else beside --json), so a run kept elsewhere leaves the tree clean",
    )
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
    if args.plot is None:
        args.plot = PLOT if args.json == RESULTS else args.json.with_suffix(".png")
    return args


def _smoke(args: argparse.Namespace) -> None:
    """Tiny sizes and short timings (``--smoke``); results and plot in a scratch directory."""
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


if __name__ == "__main__":
    args = _arguments()
    if args.plot_only:
        merged = json.loads(args.json.read_text())
        plot(manager_runs(merged), args.plot)
        report(manager_runs(merged), markdown=args.markdown)
        _agents.report(merged, markdown=args.markdown)
        sys.exit(0)
    if args.smoke:
        _smoke(args)
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

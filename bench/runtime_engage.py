"""Multicluster runtime: engage latency and memory with 100 and 1,000 engaged clusters.

For each N in --sizes, against a local fleet (hub + 2 real members):
- N ClusterProfiles are created not ready (``ControlPlaneHealthy=False``), spread over the
  two members. With ``access=shared`` the profiles of one member name one token Secret:
  their access is the same, so the runtime gives them one connection (client, LIST and
  watch). With ``access=distinct`` (``--distinct-sizes``) every profile names its own copy
  of the token: every cluster gets its own credential, client and watch, which is what N
  distinct members would cost the runtime process;
- a runtime process (``python -m _runtime_child``, bench/_runtime_child.py) starts a FleetManager with one reconciler
  (``v1/ConfigMap`` in one namespace of each member) and reports when it has synced;
- N - S profiles are turned ready in bulk (16 writes in flight): seconds until every one of
  them had its first reconcile;
- S profiles (S = min(100, N/2)) are then turned ready one at a time, 50 ms apart. For each:
  **engage latency** = first reconcile on that cluster minus the moment before the status
  write; **baseline** = the moment the same process's profile watch saw the change minus
  the same start (the hub's own write + watch delivery). Printed: p50 and p99 of both and
  their ratio. Target: engage p99 <= 300 ms;
- **RSS** of the runtime process with 0 and with N engaged clusters (target: 1,000 clusters
  <= 300 MB), and per engaged cluster.

The runtime process runs on ``--loop`` (uvloop, the default of ``kube.run``, or asyncio).

Also printed per run: the **CPU of the exec plugins** the runtime ran (``cutime`` + ``cstime``
of the runtime process: the children it waited for) and how many runs that was (the
runtime's ``cluster_inventory_exec_plugin_runs_total``), beside the runtime's own CPU per
engaged cluster. ``--plugin go`` runs the upstream Go ``secretreader`` (built by the
workshop's installer, cached) instead of ours: the plugin multicluster-runtime's provider
runs in the Go peer's figures (docs/benchmarks.md).

**Baseline**: each case (access, N, plugin, replicas) is compared with
``bench/results/runtime_engage.json`` (``--baseline``), the figures measured on this machine
kind: each figure, its baseline, the ratio, and a plain line naming every figure over it by
more than 25%. ``--write-baseline`` stores this run's medians as the new baseline.

**Bytecode**: before its runs, each runtime's interpreter compiles what a runtime process
and our plugin import, where no bytecode is cached, as the image is built
(image/Containerfile runs ``compileall``): start-up and plugin CPU are then the deployed
product's, not a checkout's run under PYTHONDONTWRITEBYTECODE=1 compiling every module.

**Before and after**: ``--runtime LABEL=PYTHON`` (repeatable) runs the runtime process with
another checkout's interpreter (e.g. ``r3=/work/wt/r3/.venv/bin/python``) on the same fleet,
driver and plugin; with ``--runs K`` every case runs K times per runtime, interleaved (A B A
B). ``--py-spy DIR`` records each runtime process's bulk engage with py-spy (a separate
profile run: the sampling costs the process CPU) and prints where its samples were.

With ``--replicas R [R ...]`` every N runs once per R with R runtime processes sharing the
clusters (one shard group: a Lease per replica in the bench namespace, clusters by
rendezvous hashing of the profile key, ``docs/runtime.md``). The bulk engage is over all
replicas; each sampled cluster's latency is measured on the replica that engaged it (its
baseline is that replica's own watch); RSS and the clusters engaged are printed per replica,
and every cluster must be engaged by exactly one replica, its rendezvous owner.

Usage: uv run python bench/runtime_engage.py [--sizes 100 1000] [--distinct-sizes 100]
    [--loop uvloop|asyncio] [--replicas 1 3] [--plugin python|go] [--runs K]
    [--runtime LABEL=PYTHON ...] [--py-spy DIR] [--baseline FILE] [--write-baseline]
       uv run python bench/runtime_engage.py --smoke   (N=4 shared and distinct, the latter
    with each plugin, N=6 over 2 sharded replicas)
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from _common import (
    SMOKE_HELP,
    bounded,
    children_cpu_seconds,
    cpu_seconds,
    percentile,
    rss_mib,
)
from _engage_driver import Runtimes
from _engage_report import Profiler, compare_all, report
from _engage_setup import compile_bytecode, exec_config, prepare_members, set_status, status

from cluster_inventory import kube
from cluster_inventory.api.constants import SECRET_TOKEN_KEY

if TYPE_CHECKING:
    from cluster_inventory.testing import Fleet

BENCH = Path(__file__).parent
BASELINE = BENCH / "results" / "runtime_engage.json"


async def run_size(
    fleet: Fleet,
    hub,
    n: int,
    workdir: Path,
    *,
    distinct: bool,
    loop: str,
    replicas: int | None = None,
    settle: float = 1.0,
    plugin: str = "python",
    python: str = sys.executable,
    label: str = "",
    profile: Path | None = None,
) -> dict:
    """One N: bulk engage, sampled engage latencies, RSS idle and full, plugin runs and CPU.

    ``settle`` is the pause before each RSS reading (the smoke run's tiny N needs less);
    ``python`` runs the runtime process, ``label`` names it (and its namespace); with
    ``profile`` (a file) py-spy records each runtime process during the bulk engage.
    """
    import statistics

    from cluster_inventory.controller.sharding import rendezvous_owner

    access = "distinct" if distinct else "shared"
    ns = (
        f"bench-runtime-{n}-{access}"
        + (f"-r{replicas}" if replicas else "")
        + (f"-{plugin}" if plugin != "python" else "")
        + (f"-{label}" if label else "")
    )
    await kube.apply(hub, kube.NAMESPACES, {"metadata": {"name": ns}}, field_manager="bench")
    secrets = await prepare_members(fleet, hub, ns)
    members = list(fleet.members.values())
    names = [f"c{i:05d}" for i in range(n)]

    async def create(i: int, name: str) -> None:
        member = members[i % len(members)]
        secret, token = secrets[member.name]
        if distinct:  # a copy of the token under the profile's own name: its own access
            secret = f"token-{name}"
            await kube.apply(
                hub,
                kube.SECRETS,
                {"metadata": {"name": secret, "namespace": ns}, "data": {SECRET_TOKEN_KEY: token}},
                field_manager="bench",
                force=True,
            )
        await kube.apply(
            hub,
            kube.CLUSTER_PROFILES,
            {
                "metadata": {"name": name, "namespace": ns},
                "spec": {"clusterManager": {"name": "bench"}},
            },
            field_manager="bench",
            force=True,
        )
        await set_status(hub, ns, name, status(member, secret, healthy=False))

    created = time.perf_counter()
    await bounded([create(i, name) for i, name in enumerate(names)])
    create_seconds = time.perf_counter() - created
    providers = workdir / f"providers-{ns}.json"
    providers.write_text(
        json.dumps(
            {
                "providers": [
                    {
                        "name": "secretreader",
                        "execConfig": exec_config(
                            plugin, python, ns, fleet.hub.kubeconfig(), workdir
                        ),
                    }
                ]
            }
        )
    )
    # Unsharded: one process as before; sharded: R processes in one group (Lease in `ns`).
    identities = [f"bench-{i}" for i in range(replicas)] if replicas else [None]
    spawned = time.perf_counter()
    procs = [
        await asyncio.create_subprocess_exec(
            python,
            "-m",
            "_runtime_child",
            str(fleet.hub.kubeconfig_path),
            str(providers),
            ns,
            loop,
            *((ns, identity) if identity else ()),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=BENCH,
        )
        for identity in identities
    ]
    runtimes = Runtimes(procs)
    pids = [proc.pid for proc in procs]
    profiles: list[str] = []
    try:
        await runtimes.wait(lambda: all(r.synced.is_set() for r in runtimes.each), 300)
        startup = time.perf_counter() - spawned
        # Every replica sees every other before anything turns ready: no handoff is measured.
        await runtimes.wait(lambda: all(r.replicas == len(procs) for r in runtimes.each), 60)
        await asyncio.sleep(settle)
        rss_idle = [rss_mib(pid) for pid in pids]
        cpu_idle = [cpu_seconds(pid) for pid in pids]
        plugin_cpu_idle = [children_cpu_seconds(pid) for pid in pids]
        idle_stats = [await r.stats() for r in runtimes.each]

        samples = min(100, n // 2)
        bulk, sampled = names[: n - samples], names[n - samples :]
        spies = [
            Profiler(pid, profile.with_name(f"{profile.stem}-{i}{profile.suffix}"))
            for i, pid in enumerate(pids)
        ] if profile else []  # fmt: skip
        for spy in spies:
            await spy.start()
        started = time.perf_counter()
        await bounded(
            [
                set_status(
                    hub, ns, name, {"conditions": status(members[0], "", True)["conditions"]}
                )
                for name in bulk
            ]
        )
        # Only the bulk is ready yet: count first (checking every key on every one of 10,000
        # records would make the driver quadratic on the cores the runtimes need).
        await runtimes.wait(lambda: runtimes.count() >= len(bulk), 1800)
        bulk_keys = {f"{ns}/{b}" for b in bulk}
        await runtimes.wait(lambda: bulk_keys <= runtimes.engaged(), 60)
        bulk_seconds = time.perf_counter() - started
        cpu_bulk = [cpu_seconds(pid) - before for pid, before in zip(pids, cpu_idle, strict=True)]
        for spy in spies:
            profiles.extend(await spy.stop())

        engage, baseline = [], []
        for name in sampled:
            key = f"{ns}/{name}"
            t0 = time.time()
            await set_status(
                hub, ns, name, {"conditions": status(members[0], "", True)["conditions"]}
            )
            await runtimes.wait(
                lambda key=key: (r := runtimes.reconciled(key)) is not None and key in r.ready_seen,
                60,
            )
            owner = runtimes.reconciled(key)
            assert owner is not None
            engage.append(owner.reconciled[key] - t0)
            baseline.append(owner.ready_seen[key] - t0)
            await asyncio.sleep(0.05)
        await asyncio.sleep(settle)
        rss_full = [rss_mib(pid) for pid in pids]
        plugin_cpu = [
            children_cpu_seconds(pid) - before
            for pid, before in zip(pids, plugin_cpu_idle, strict=True)
        ]
        end_stats = [await r.stats() for r in runtimes.each]
        plugin_runs, plugin_wall = (
            [end[name] - idle[name] for idle, end in zip(idle_stats, end_stats, strict=True)]
            for name in ("plugin_runs", "plugin_seconds")
        )
    finally:
        await runtimes.close()
        await kube.delete(hub, kube.NAMESPACES, ns)
    keys = [f"{ns}/{name}" for name in names]
    engaged_by = [sum(1 for r in runtimes.each if key in r.reconciled) for key in keys]
    misplaced = 0
    if replicas:  # each cluster on its rendezvous owner (profiles here carry no member id)
        live = [str(identity) for identity in identities]
        misplaced = sum(
            1
            for key in keys
            if (r := runtimes.reconciled(key)) is not None
            and live[runtimes.each.index(r)] != rendezvous_owner(key, live)
        )
    own = [e - b for e, b in zip(engage, baseline, strict=True)]  # the runtime's own part
    return {
        "n": n,
        "access": access,
        "loop": loop,
        "replicas": replicas,
        "plugin": plugin,
        "label": label,
        "profile": profiles,
        "own_p50": statistics.median(own),
        "own_p99": percentile(own, 0.99),
        "create_seconds": create_seconds,
        "bulk": len(bulk),
        "bulk_seconds": bulk_seconds,
        "engage_p50": statistics.median(engage),
        "engage_p99": percentile(engage, 0.99),
        "baseline_p50": statistics.median(baseline),
        "baseline_p99": percentile(baseline, 0.99),
        "samples": len(engage),
        "rss_idle": rss_idle,
        "startup": startup,
        "cpu_bulk": cpu_bulk,
        "plugin_cpu": plugin_cpu,
        "plugin_runs": plugin_runs,
        "plugin_wall": plugin_wall,
        "startup_cpu": cpu_idle,
        "rss_full": rss_full,
        "per_replica": [len(r.reconciled) for r in runtimes.each],
        "engaged_twice": sum(1 for count in engaged_by if count > 1),
        "not_engaged": sum(1 for count in engaged_by if count == 0),
        "misplaced": misplaced,
    }


async def main(
    sizes: list[int],
    distinct_sizes: list[int],
    loop: str,
    replicas: list[int] | None,
    *,
    plugin: str,
    runtimes: list[tuple[str, str]],
    runs: int,
    profile_dir: Path | None,
) -> list[dict]:
    from cluster_inventory.testing import Fleet

    cases = [(n, False) for n in sizes] + [(n, True) for n in distinct_sizes]
    results = []
    for _, python in runtimes:
        compile_bytecode(python)
    async with Fleet(members=2) as fleet:
        async with await fleet.hub.client() as hub:
            for n, distinct in cases:  # each run is printed as soon as it is measured
                for count in replicas or [None]:
                    for run in range(runs):
                        for label, python in runtimes:  # interleaved: A B A B
                            tag = f"{label}{run}" if len(runtimes) > 1 or runs > 1 else label
                            profile = (
                                profile_dir / f"{tag or 'this'}-{n}.txt" if profile_dir else None
                            )
                            result = await run_size(
                                fleet,
                                hub,
                                n,
                                fleet.workdir,
                                distinct=distinct,
                                loop=loop,
                                replicas=count,
                                plugin=plugin,
                                python=python,
                                label=tag,
                                profile=profile,
                            )
                            report(result)
                            results.append({**result, "label": label})
    return results


async def smoke(loop: str) -> list[dict]:
    from cluster_inventory.testing import Fleet

    results = []
    compile_bytecode(sys.executable)
    async with Fleet(members=2) as fleet:
        async with await fleet.hub.client() as hub:
            for distinct, plugin in ((False, "python"), (True, "python"), (True, "go")):
                results.append(
                    await run_size(
                        fleet,
                        hub,
                        4,
                        fleet.workdir,
                        distinct=distinct,
                        loop=loop,
                        settle=0.2,
                        plugin=plugin,
                    )
                )
                report(results[-1])
            results.append(
                await run_size(
                    fleet, hub, 6, fleet.workdir, distinct=False, loop=loop, replicas=2, settle=0.2
                )
            )
            report(results[-1])
    return results


def runtime_arg(value: str) -> tuple[str, str]:
    import argparse

    label, sep, python = value.partition("=")
    if not sep or not label or not Path(python).exists():
        raise argparse.ArgumentTypeError(f"want LABEL=PYTHON (an existing interpreter): {value}")
    return label, python


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 1000])
    parser.add_argument("--distinct-sizes", type=int, nargs="*", default=[100])
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="uvloop")
    parser.add_argument(
        "--replicas",
        type=int,
        nargs="+",
        help="run each N with R sharded runtime processes, for each R given "
        "(default: one process, unsharded)",
    )
    parser.add_argument(
        "--plugin",
        choices=["python", "go"],
        default="python",
        help="the exec plugin: ours (python) or the upstream Go secretreader (go)",
    )
    parser.add_argument(
        "--runtime",
        type=runtime_arg,
        action="append",
        metavar="LABEL=PYTHON",
        help="run the runtime process with this interpreter (another checkout's venv); "
        "repeat to compare, runs interleaved (default: this one)",
    )
    parser.add_argument("--runs", type=int, default=1, help="runs of each case per runtime")
    parser.add_argument(
        "--py-spy", type=Path, metavar="DIR", help="record the bulk engage with py-spy"
    )
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument(
        "--write-baseline",
        action="store_true",
        help="store this run's medians (of the first --runtime) as the baseline",
    )
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    if args.py_spy:
        args.py_spy.mkdir(parents=True, exist_ok=True)
    if args.smoke:
        measured = asyncio.run(smoke(args.loop))
    else:
        measured = asyncio.run(
            main(
                args.sizes,
                args.distinct_sizes,
                args.loop,
                args.replicas,
                plugin=args.plugin,
                runtimes=args.runtime or [("", sys.executable)],
                runs=args.runs,
                profile_dir=args.py_spy,
            )
        )
    compare_all(measured, args.baseline, args.write_baseline and not args.smoke)

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
import base64
import json
import os
import signal
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
    require,
    require_times,
    rss_mib,
)
from _runtime_child import MEMBER_NS

from cluster_inventory import kube
from cluster_inventory.api.constants import EXTENSION_EXEC, SECRET_TOKEN_KEY

if TYPE_CHECKING:
    from cluster_inventory.testing import Fleet

BENCH = Path(__file__).parent
BASELINE = BENCH / "results" / "runtime_engage.json"


# -- the driver ------------------------------------------------------------------------
class Runtime:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.reconciled: dict[str, float] = {}
        self.ready_seen: dict[str, float] = {}
        self.synced = asyncio.Event()
        self.replicas = 0  # the live replicas it sees (1 unsharded)
        self.changed = asyncio.Event()
        self._stats: asyncio.Future[dict] | None = None
        self.reader = asyncio.get_running_loop().create_task(self._read())

    async def stats(self) -> dict:
        """The process's own counts (``plugin_runs``), asked for on its stdin."""
        assert self.proc.stdin is not None
        self._stats = asyncio.get_running_loop().create_future()
        self.proc.stdin.write(b"stats\n")
        await self.proc.stdin.drain()
        async with asyncio.timeout(30):
            return await self._stats

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for line in self.proc.stdout:
            record = json.loads(line)
            if record["event"] == "stats" and self._stats is not None:
                self._stats.set_result(record)
            elif record["event"] == "synced":
                self.replicas = record["replicas"]
                self.synced.set()
            elif record["event"] == "replicas":
                self.replicas = record["n"]
            elif record["event"] == "reconcile":
                self.reconciled[record["cluster"]] = record["t"]
            elif record["event"] == "ready-seen":
                self.ready_seen[record["cluster"]] = record["t"]
            self.changed.set()


class Runtimes:
    """The runtime processes of one run (one unsharded, or the replicas of a shard group)."""

    def __init__(self, procs: list[asyncio.subprocess.Process]) -> None:
        self.each = [Runtime(proc) for proc in procs]
        self.changed = asyncio.Event()
        for runtime in self.each:
            runtime.changed = self.changed  # one event: any process's record wakes a wait

    def count(self) -> int:
        """Clusters reconciled, summed over the replicas."""
        return sum(len(r.reconciled) for r in self.each)

    def engaged(self) -> set[str]:
        """Clusters reconciled by any replica."""
        return set().union(*(r.reconciled for r in self.each))

    def reconciled(self, key: str) -> Runtime | None:
        """The replica that reconciled ``key`` first (None: not yet)."""
        found = [r for r in self.each if key in r.reconciled]
        return min(found, key=lambda r: r.reconciled[key]) if found else None

    async def wait(self, predicate, timeout: float) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

    async def close(self) -> None:
        for runtime in self.each:
            if runtime.proc.returncode is None:
                runtime.proc.terminate()
        for runtime in self.each:
            await runtime.proc.wait()
            runtime.reader.cancel()


def status(member, secret: str, healthy: bool) -> dict:
    return {
        "conditions": [
            {
                "type": "ControlPlaneHealthy",
                "status": "True" if healthy else "False",
                "reason": "Bench",
                "message": "bench",
                "lastTransitionTime": "2026-11-23T00:00:00Z",
            }
        ],
        "accessProviders": [
            {
                "name": "secretreader",
                "cluster": {
                    "server": member.server,
                    "certificate-authority-data": base64.b64encode(member.ca_pem).decode(),
                    "extensions": [{"name": EXTENSION_EXEC, "extension": {"clusterName": secret}}],
                },
            }
        ],
    }


async def set_status(hub, ns: str, name: str, body: dict) -> None:
    await kube.request(
        hub,
        "PATCH",
        kube.CLUSTER_PROFILES.path(ns, name) + "/status",
        body={"status": body},
        content_type="application/merge-patch+json",
    )


async def prepare_members(fleet: Fleet, hub, ns: str) -> dict[str, tuple[str, str]]:
    """A ServiceAccount per member that may read ConfigMaps (a Role: the aggregated `view`
    ClusterRole is empty without kube-controller-manager); its token in one hub Secret.

    Returns: member name -> (Secret name, base64 token)."""
    secrets = {}
    for member in fleet.members.values():
        async with await member.client() as admin:
            for body, resource in (
                ({"metadata": {"name": MEMBER_NS}}, kube.NAMESPACES),
                ({"metadata": {"name": "reader", "namespace": MEMBER_NS}}, kube.SERVICE_ACCOUNTS),
                (
                    {"metadata": {"name": "probe", "namespace": MEMBER_NS}, "data": {"k": "v"}},
                    kube.CONFIG_MAPS,
                ),
                (
                    {
                        "metadata": {"name": "reader", "namespace": MEMBER_NS},
                        "rules": [
                            {
                                "apiGroups": [""],
                                "resources": ["configmaps"],
                                "verbs": ["get", "list", "watch"],
                            }
                        ],
                    },
                    kube.ROLES,
                ),
                (
                    {
                        "metadata": {"name": "reader", "namespace": MEMBER_NS},
                        "roleRef": {
                            "apiGroup": "rbac.authorization.k8s.io",
                            "kind": "Role",
                            "name": "reader",
                        },
                        "subjects": [
                            {"kind": "ServiceAccount", "name": "reader", "namespace": MEMBER_NS}
                        ],
                    },
                    kube.ROLE_BINDINGS,
                ),
            ):
                await kube.apply(admin, resource, body, field_manager="bench", force=True)
            token = await kube.request_service_account_token(admin, MEMBER_NS, "reader")
        secret = f"token-{member.name}"
        await kube.apply(
            hub,
            kube.SECRETS,
            {
                "metadata": {"name": secret, "namespace": ns},
                "data": {SECRET_TOKEN_KEY: base64.b64encode(token.token.encode()).decode()},
            },
            field_manager="bench",
            force=True,
        )
        secrets[member.name] = (secret, base64.b64encode(token.token.encode()).decode())
    return secrets


def exec_config(plugin: str, python: str, ns: str, hub_kubeconfig: dict, workdir: Path) -> dict:
    """The provider file's ``execConfig`` for ``plugin`` reading the tokens in ``ns``.

    ``python``: ours, the ``cluster-inventory-secretreader`` beside that interpreter (the
    checkout under test); ``go``: the upstream plugin, which takes the namespace from its
    kubeconfig's context, not from an argument.
    """
    if plugin == "go":
        from cluster_inventory_workshop.upstream_plugins import upstream_plugin

        config = json.loads(json.dumps(hub_kubeconfig))
        config["contexts"][0]["context"]["namespace"] = ns
        path = workdir / f"hub-{ns}.kubeconfig"
        path.write_text(json.dumps(config))
        command, args = str(upstream_plugin("secretreader")), []
    else:
        path = workdir / "hub.kubeconfig"
        path.write_text(json.dumps(hub_kubeconfig))
        command = str(Path(python).parent / "cluster-inventory-secretreader")
        args = ["--namespace", ns]
    return {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": command,
        "args": args,
        "env": [{"name": "KUBECONFIG", "value": str(path)}],
        "provideClusterInfo": True,
    }


#: Run by each runtime's interpreter before its runs: what a runtime process and our plugin
#: import, compiled to bytecode where it is missing (the image is built with
#: ``compileall``, image/Containerfile; a checkout run with PYTHONDONTWRITEBYTECODE=1, as
#: this machine's sessions and CI are, would otherwise compile every module at every start).
_COMPILE = """
import importlib.util, py_compile, sys
import uvloop, prometheus_client, cluster_inventory.runtime, cluster_inventory.kube.endpoints
import cluster_inventory.api.v1alpha1, cluster_inventory.credentials.plugins.secretreader
import dateutil.parser, urllib3
sys.path.insert(0, sys.argv[1])
import _runtime_child
for module in list(sys.modules.values()):
    source = getattr(module, "__file__", None) or ""
    if source.endswith(".py"):
        py_compile.compile(source, importlib.util.cache_from_source(source), doraise=False)
"""


def compile_bytecode(python: str) -> None:
    """Compile what a runtime process started by ``python`` imports (see ``_COMPILE``)."""
    import subprocess

    subprocess.run([python, "-c", _COMPILE, str(BENCH)], check=True)


class Profiler:
    """py-spy recording one process (``--py-spy``), stopped with SIGINT, summarised."""

    def __init__(self, pid: int, out: Path) -> None:
        self.pid, self.out = pid, out
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        spy = Path(sys.executable).parent / "py-spy"
        self.proc = await asyncio.create_subprocess_exec(
            str(spy), "record", "--nonblocking", "--rate", "200", "--format", "raw",
            "--output", str(self.out), "--pid", str(self.pid),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip

    async def stop(self) -> list[str]:
        """Stop recording; lines naming where the samples were (self and inclusive)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGINT)
        await self.proc.wait()
        return summarise_profile(self.out)


def summarise_profile(path: Path, top: int = 18) -> list[str]:
    """The frames with the most samples in py-spy's raw (collapsed) output at ``path``."""
    own: dict[str, int] = {}
    inclusive: dict[str, int] = {}
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = [f.split(" (")[0] + " (" + f.split(" (")[-1] for f in stack.split(";")[1:]]
        if not frames or not count.isdigit():
            continue
        total += int(count)
        own[frames[-1]] = own.get(frames[-1], 0) + int(count)
        for frame in set(frames):
            inclusive[frame] = inclusive.get(frame, 0) + int(count)
    require(total > 0, f"py-spy recorded samples into {path}")
    lines = [f"py-spy {path.name}: {total} samples on CPU; by own samples:"]
    for frame, count in sorted(own.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"  {count / total:6.1%}  {frame}")
    lines.append("  by samples with the frame on the stack:")
    for frame, count in sorted(inclusive.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"  {count / total:6.1%}  {frame}")
    return lines


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


def case(r: dict) -> str:
    """The result's key in the baseline file."""
    replicas = f" replicas={r['replicas']}" if r["replicas"] else ""
    return f"{r['access']} N={r['n']} plugin={r['plugin']} loop={r['loop']}{replicas}"


def figures(r: dict) -> dict[str, float]:
    """What the baseline compares (lower is better): per engaged cluster, per plugin run."""
    runs = sum(r["plugin_runs"])
    return {
        "bulk_seconds": r["bulk_seconds"],
        "runtime_cpu_ms_per_cluster": sum(r["cpu_bulk"]) * 1000 / r["bulk"],
        **({"plugin_cpu_ms_per_run": sum(r["plugin_cpu"]) * 1000 / runs} if runs else {}),
        "engage_p50_ms": r["engage_p50"] * 1000,
        "startup_seconds": r["startup"],
        "startup_cpu_seconds": max(r["startup_cpu"]),
        "rss_idle_mib": max(r["rss_idle"]),
        "rss_full_mib": sum(r["rss_full"]),
    }


def report(r: dict) -> None:
    n = r["n"]
    samples = min(100, n // 2)
    require(r["samples"] == samples, f"N={n}: {samples} engage latencies measured")
    require(r["bulk"] == n - samples, f"N={n}: the rest engaged in bulk")
    lists = ("rss_idle", "rss_full", "cpu_bulk", "plugin_cpu", "plugin_runs", "plugin_wall")
    lists += ("startup_cpu", "per_replica")
    scalars = ("n", "access", "loop", "replicas", "own_p50", "own_p99", "engaged_twice")
    scalars += ("plugin", "label", "profile")
    require_times(**{k: v for k, v in r.items() if k not in lists + scalars + ("not_engaged",)})
    for name in lists[:-1]:
        require_times(**{f"{name}[{i}]": v for i, v in enumerate(r[name])})
    require(
        all(v > 0 for v in r["rss_idle"]) and r["bulk_seconds"] > 0,
        f"N={n}: memory and time measured",
    )
    require(r["engaged_twice"] == 0, f"N={n}: {r['engaged_twice']} clusters engaged twice")
    require(r["not_engaged"] == 0, f"N={n}: {r['not_engaged']} clusters never engaged")
    require(r["misplaced"] == 0, f"N={n}: {r['misplaced']} clusters off their owner")
    require(sum(r["per_replica"]) == n, f"N={n}: the replicas engaged {r['per_replica']}")
    runs = sum(r["plugin_runs"])
    if r["access"] == "distinct":  # one credential per cluster: one run each, at least
        require(runs >= n, f"N={n}: {runs} plugin runs for {n} distinct credentials")

    def ms(seconds: float) -> str:
        return f"{seconds * 1000:.0f} ms"

    def mib(values: list[float]) -> str:
        return " / ".join(f"{v:.0f}" for v in values) + " MiB"

    cpu = sum(r["cpu_bulk"])
    plugin_cpu, wall = sum(r["plugin_cpu"]), sum(r["plugin_wall"])
    replicas = r["replicas"]
    where = f" replicas={replicas} (clusters each {r['per_replica']})" if replicas else ""
    rss = (
        f"RSS per replica idle {mib(r['rss_idle'])}, with {n} engaged over all {mib(r['rss_full'])}"
        if replicas
        else f"RSS idle {r['rss_idle'][0]:.0f} MiB, with {n} engaged {r['rss_full'][0]:.0f} MiB "
        f"({(r['rss_full'][0] - r['rss_idle'][0]) * 1024 / n:.0f} KiB per cluster; "
        "target 1,000 <= 300 MB)"
    )
    label = f"[{r['label']}] " if r["label"] else ""
    print(
        f"{label}N={n} access={r['access']} loop={r['loop']} plugin={r['plugin']}{where}: "
        f"profiles created in {r['create_seconds']:.1f} s; "
        f"bulk engage of {r['bulk']} in {r['bulk_seconds']:.2f} s "
        f"({r['bulk'] / r['bulk_seconds']:.0f}/s); engage latency over {r['samples']} "
        f"p50 {ms(r['engage_p50'])} p99 {ms(r['engage_p99'])} (target p99 <= 300 ms); "
        f"baseline (watch sees the change) p50 {ms(r['baseline_p50'])} "
        f"p99 {ms(r['baseline_p99'])}; ratio p50 {r['engage_p50'] / r['baseline_p50']:.1f}x; "
        f"the runtime's own part (engage - baseline, per sample) p50 {ms(r['own_p50'])} "
        f"p99 {ms(r['own_p99'])}; "
        f"start-up to hub-synced {r['startup']:.2f} s (its CPU {max(r['startup_cpu']):.2f} s; "
        "target <= 0.5 s); "
        f"process CPU for the bulk engage {cpu:.2f} s"
        + (f" ({' / '.join(f'{c:.2f}' for c in r['cpu_bulk'])} s per replica)" if replicas else "")
        + f", {cpu * 1000 / r['bulk']:.1f} ms per cluster (multicluster-runtime: ~8 ms); "
        f"exec plugin runs {runs:.0f}, their CPU {plugin_cpu:.2f} s"
        + (
            f" ({plugin_cpu * 1000 / runs:.1f} ms per run; wall {wall * 1000 / runs:.0f} ms each)"
            if runs
            else ""
        )
        + f"; {rss}; engaged twice {r['engaged_twice']}",
        flush=True,
    )
    for line in r["profile"]:
        print(line, flush=True)


def compare_all(results: list[dict], baseline_path: Path, write: bool) -> None:
    """Each case's medians (over its runs, per runtime) beside the baseline; maybe store them."""
    import _baseline

    baseline = _baseline.load(baseline_path)
    grouped: dict[tuple[str, str], list[dict[str, float]]] = {}
    for r in results:
        grouped.setdefault((r["label"], case(r)), []).append(figures(r))
    for (label, key), runs in grouped.items():
        who = f"[{label}] " if label else ""
        print(f"{who}{key}, median of {len(runs)} run(s), against the baseline:", flush=True)
        for line in _baseline.compare(key, _baseline.medians(runs), baseline, source=baseline_path):
            print(line, flush=True)
    if write:
        first = results[0]["label"]
        cases = {
            key: _baseline.medians(runs) for (label, key), runs in grouped.items() if label == first
        }
        import subprocess

        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
        meta = {
            "commit": commit or "?",
            "date": time.strftime("%Y-%m-%d"),
            "command": " ".join(["bench/runtime_engage.py", *sys.argv[1:]]),
            "machine": f"{os.cpu_count()} cores, {os.uname().machine}",
        }
        _baseline.write(baseline_path, cases, meta=meta)
        print(f"baseline: wrote {len(cases)} case(s) of [{first or 'this'}] to {baseline_path}")


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

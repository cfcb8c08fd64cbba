"""Multicluster runtime: engage latency and memory with 100 and 1,000 engaged clusters.

For each N in --sizes, against a local fleet (hub + 2 real members):
- N ClusterProfiles are created not ready (``ControlPlaneHealthy=False``), spread over the
  two members. With ``access=shared`` the profiles of one member name one token Secret:
  their access is the same, so the runtime gives them one connection (client, LIST and
  watch). With ``access=distinct`` (``--distinct-sizes``) every profile names its own copy
  of the token: every cluster gets its own credential, client and watch, which is what N
  distinct members would cost the runtime process;
- a runtime process (this file with ``--child``) starts a FleetManager with one reconciler
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

With ``--replicas R [R ...]`` every N runs once per R with R runtime processes sharing the
clusters (one shard group: a Lease per replica in the bench namespace, clusters by
rendezvous hashing of the profile key, ``docs/runtime.md``). The bulk engage is over all
replicas; each sampled cluster's latency is measured on the replica that engaged it (its
baseline is that replica's own watch); RSS and the clusters engaged are printed per replica,
and every cluster must be engaged by exactly one replica, its rendezvous owner.

Usage: uv run python bench/runtime_engage.py [--sizes 100 1000] [--distinct-sizes 100]
    [--loop uvloop|asyncio] [--replicas 1 3]
       uv run python bench/runtime_engage.py --smoke   (N=4 shared and distinct, N=6 over
    2 sharded replicas)
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import statistics
import sys
import time
from pathlib import Path

from _common import SMOKE_HELP, bounded, cpu_seconds, percentile, require, require_times, rss_mib

from cluster_inventory import kube
from cluster_inventory.api.constants import EXTENSION_EXEC, SECRET_TOKEN_KEY
from cluster_inventory.controller.sharding import rendezvous_owner
from cluster_inventory.testing import Fleet

PLUGIN = Path(sys.executable).parent / "cluster-inventory-secretreader"
MEMBER_NS = "bench-runtime"


# -- the runtime process ---------------------------------------------------------------
async def child(
    hub_kubeconfig: str,
    providers: str,
    namespace: str,
    group: str | None = None,
    identity: str | None = None,
) -> None:
    from prometheus_client import CollectorRegistry

    from cluster_inventory.controller import ShardConfig
    from cluster_inventory.runtime import EngagedCluster, EngagementPolicy, FleetManager, Request

    out = sys.stdout
    seen: set[str] = set()
    ready_seen: set[str] = set()

    def emit(**record) -> None:
        out.write(json.dumps(record) + "\n")
        out.flush()

    async with await kube.new_client(kube.connection_from_kubeconfig(hub_kubeconfig)) as hub:
        fleet = FleetManager(
            hub,
            providers,
            namespaces=[namespace],
            registry=CollectorRegistry(),
            policy=EngagementPolicy(cache_sync_timeout=60),
        )

        @fleet.reconciler("v1/ConfigMap", namespace=MEMBER_NS)
        async def reconcile(request: Request, cluster: EngagedCluster) -> None:
            if request.cluster not in seen:
                seen.add(request.cluster)
                emit(event="reconcile", cluster=request.cluster, t=time.time())

        # The baseline: when this process's own profile watch sees a profile turn ready.
        def on_profile(_: str, obj: dict, __: dict | None) -> None:
            key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
            conds = (obj.get("status") or {}).get("conditions") or []
            if key not in ready_seen and any(
                c["type"] == "ControlPlaneHealthy" and c["status"] == "True" for c in conds
            ):
                ready_seen.add(key)
                emit(event="ready-seen", cluster=key, t=time.time())

        fleet._add_profile_handler(on_profile)
        if group is None or identity is None:
            async with fleet:
                await fleet.wait_synced()
                emit(event="synced", pid=os.getpid(), replicas=1)
                await asyncio.Event().wait()
        else:  # sharded: a Manager joins the group (its Lease in the bench namespace) first
            shard = ShardConfig(namespace=namespace, group=group, identity=identity)
            running = asyncio.ensure_future(fleet.run(shard=shard))
            # Waits until the Manager started the provider and its profiles were listed.
            await fleet.wait_synced()
            membership = fleet.shard
            assert membership is not None
            membership.on_change(lambda: emit(event="replicas", n=len(membership.replicas)))
            emit(event="synced", pid=os.getpid(), replicas=len(membership.replicas))
            await running


# -- the driver ------------------------------------------------------------------------
class Runtime:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.reconciled: dict[str, float] = {}
        self.ready_seen: dict[str, float] = {}
        self.synced = asyncio.Event()
        self.replicas = 0  # the live replicas it sees (1 unsharded)
        self.changed = asyncio.Event()
        self.reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for line in self.proc.stdout:
            record = json.loads(line)
            if record["event"] == "synced":
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
) -> dict:
    """One N: bulk engage, sampled engage latencies, RSS idle and full.

    ``settle`` is the pause before each RSS reading (the smoke run's tiny N needs less).
    """
    access = "distinct" if distinct else "shared"
    ns = f"bench-runtime-{n}-{access}" + (f"-r{replicas}" if replicas else "")
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
                        "execConfig": {
                            "apiVersion": "client.authentication.k8s.io/v1",
                            "command": str(PLUGIN),
                            "args": ["--namespace", ns],
                            "env": [
                                {"name": "KUBECONFIG", "value": str(fleet.hub.kubeconfig_path)}
                            ],
                            "provideClusterInfo": True,
                        },
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
            sys.executable,
            __file__,
            "--child",
            str(fleet.hub.kubeconfig_path),
            str(providers),
            ns,
            loop,
            *((ns, identity) if identity else ()),
            stdout=asyncio.subprocess.PIPE,
        )
        for identity in identities
    ]
    runtimes = Runtimes(procs)
    pids = [proc.pid for proc in procs]
    try:
        await runtimes.wait(lambda: all(r.synced.is_set() for r in runtimes.each), 300)
        startup = time.perf_counter() - spawned
        # Every replica sees every other before anything turns ready: no handoff is measured.
        await runtimes.wait(lambda: all(r.replicas == len(procs) for r in runtimes.each), 60)
        await asyncio.sleep(settle)
        rss_idle = [rss_mib(pid) for pid in pids]
        cpu_idle = [cpu_seconds(pid) for pid in pids]

        samples = min(100, n // 2)
        bulk, sampled = names[: n - samples], names[n - samples :]
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
        "rss_full": rss_full,
        "per_replica": [len(r.reconciled) for r in runtimes.each],
        "engaged_twice": sum(1 for count in engaged_by if count > 1),
        "not_engaged": sum(1 for count in engaged_by if count == 0),
        "misplaced": misplaced,
    }


def report(r: dict) -> None:
    n = r["n"]
    samples = min(100, n // 2)
    require(r["samples"] == samples, f"N={n}: {samples} engage latencies measured")
    require(r["bulk"] == n - samples, f"N={n}: the rest engaged in bulk")
    lists = ("rss_idle", "rss_full", "cpu_bulk", "per_replica")
    scalars = ("n", "access", "loop", "replicas", "own_p50", "own_p99", "engaged_twice")
    require_times(**{k: v for k, v in r.items() if k not in lists + scalars + ("not_engaged",)})
    for name in lists[:3]:
        require_times(**{f"{name}[{i}]": v for i, v in enumerate(r[name])})
    require(
        all(v > 0 for v in r["rss_idle"]) and r["bulk_seconds"] > 0,
        f"N={n}: memory and time measured",
    )
    require(r["engaged_twice"] == 0, f"N={n}: {r['engaged_twice']} clusters engaged twice")
    require(r["not_engaged"] == 0, f"N={n}: {r['not_engaged']} clusters never engaged")
    require(r["misplaced"] == 0, f"N={n}: {r['misplaced']} clusters off their owner")
    require(sum(r["per_replica"]) == n, f"N={n}: the replicas engaged {r['per_replica']}")

    def ms(seconds: float) -> str:
        return f"{seconds * 1000:.0f} ms"

    def mib(values: list[float]) -> str:
        return " / ".join(f"{v:.0f}" for v in values) + " MiB"

    cpu = sum(r["cpu_bulk"])
    replicas = r["replicas"]
    where = f" replicas={replicas} (clusters each {r['per_replica']})" if replicas else ""
    rss = (
        f"RSS per replica idle {mib(r['rss_idle'])}, with {n} engaged over all {mib(r['rss_full'])}"
        if replicas
        else f"RSS idle {r['rss_idle'][0]:.0f} MiB, with {n} engaged {r['rss_full'][0]:.0f} MiB "
        f"({(r['rss_full'][0] - r['rss_idle'][0]) * 1024 / n:.0f} KiB per cluster; "
        "target 1,000 <= 300 MB)"
    )
    print(
        f"N={n} access={r['access']} loop={r['loop']}{where}: "
        f"profiles created in {r['create_seconds']:.1f} s; "
        f"bulk engage of {r['bulk']} in {r['bulk_seconds']:.2f} s "
        f"({r['bulk'] / r['bulk_seconds']:.0f}/s); engage latency over {r['samples']} "
        f"p50 {ms(r['engage_p50'])} p99 {ms(r['engage_p99'])} (target p99 <= 300 ms); "
        f"baseline (watch sees the change) p50 {ms(r['baseline_p50'])} "
        f"p99 {ms(r['baseline_p99'])}; ratio p50 {r['engage_p50'] / r['baseline_p50']:.1f}x; "
        f"the runtime's own part (engage - baseline, per sample) p50 {ms(r['own_p50'])} "
        f"p99 {ms(r['own_p99'])}; "
        f"start-up to hub-synced {r['startup']:.2f} s (target <= 0.5 s); "
        f"process CPU for the bulk engage {cpu:.2f} s"
        + (f" ({' / '.join(f'{c:.2f}' for c in r['cpu_bulk'])} s per replica)" if replicas else "")
        + f", {cpu * 1000 / r['bulk']:.1f} ms per cluster (multicluster-runtime: ~8 ms); "
        f"{rss}; engaged twice {r['engaged_twice']}",
        flush=True,
    )


async def main(
    sizes: list[int], distinct_sizes: list[int], loop: str, replicas: list[int] | None
) -> None:
    runs = [(n, False) for n in sizes] + [(n, True) for n in distinct_sizes]
    async with Fleet(members=2) as fleet:
        async with await fleet.hub.client() as hub:
            for n, distinct in runs:  # each run is printed as soon as it is measured
                for count in replicas or [None]:
                    report(
                        await run_size(
                            fleet,
                            hub,
                            n,
                            fleet.workdir,
                            distinct=distinct,
                            loop=loop,
                            replicas=count,
                        )
                    )


async def smoke(loop: str) -> None:
    async with Fleet(members=2) as fleet:
        async with await fleet.hub.client() as hub:
            for distinct in (False, True):
                report(
                    await run_size(
                        fleet, hub, 4, fleet.workdir, distinct=distinct, loop=loop, settle=0.2
                    )
                )
            report(
                await run_size(
                    fleet, hub, 6, fleet.workdir, distinct=False, loop=loop, replicas=2, settle=0.2
                )
            )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kubeconfig, providers, namespace, event_loop, *shard = sys.argv[2:]
        kube.run(child(kubeconfig, providers, namespace, *shard), event_loop=event_loop)
    else:
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
        parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
        args = parser.parse_args()
        if args.smoke:
            asyncio.run(smoke(args.loop))
        else:
            asyncio.run(main(args.sizes, args.distinct_sizes, args.loop, args.replicas))

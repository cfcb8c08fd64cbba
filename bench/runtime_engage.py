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

Usage: uv run python bench/runtime_engage.py [--sizes 100 1000] [--distinct-sizes 100]
    [--loop uvloop|asyncio]
       uv run python bench/runtime_engage.py --smoke   (N=4 shared and distinct)
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
from cluster_inventory.testing import Fleet

PLUGIN = Path(sys.executable).parent / "cluster-inventory-secretreader"
MEMBER_NS = "bench-runtime"


# -- the runtime process ---------------------------------------------------------------
async def child(hub_kubeconfig: str, providers: str, namespace: str) -> None:
    from prometheus_client import CollectorRegistry

    from cluster_inventory.runtime import Cluster, EngagementPolicy, FleetManager, Request

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
        async def reconcile(request: Request, cluster: Cluster) -> None:
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

        fleet._profiles[0].add_handler(on_profile)
        async with fleet:
            await fleet.wait_synced()
            emit(event="synced", pid=os.getpid())
            await asyncio.Event().wait()


# -- the driver ------------------------------------------------------------------------
class Runtime:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.reconciled: dict[str, float] = {}
        self.ready_seen: dict[str, float] = {}
        self.synced = asyncio.Event()
        self.changed = asyncio.Event()
        self.reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for line in self.proc.stdout:
            record = json.loads(line)
            if record["event"] == "synced":
                self.synced.set()
            elif record["event"] == "reconcile":
                self.reconciled[record["cluster"]] = record["t"]
            elif record["event"] == "ready-seen":
                self.ready_seen[record["cluster"]] = record["t"]
            self.changed.set()

    async def wait(self, predicate, timeout: float) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()


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


async def run_size(fleet: Fleet, hub, n: int, workdir: Path, *, distinct: bool, loop: str) -> dict:
    ns = f"bench-runtime-{n}-{'distinct' if distinct else 'shared'}"
    await kube.apply(hub, kube.NAMESPACES, {"metadata": {"name": ns}}, field_manager="bench")
    secrets = await prepare_members(fleet, hub, ns)
    members = list(fleet.members.values())
    names = [f"c{i:04d}" for i in range(n)]

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

    await bounded([create(i, name) for i, name in enumerate(names)])
    providers = workdir / f"providers-{n}.json"
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
    spawned = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--child",
        str(fleet.hub.kubeconfig_path),
        str(providers),
        ns,
        loop,
        stdout=asyncio.subprocess.PIPE,
    )
    runtime = Runtime(proc)
    try:
        await asyncio.wait_for(runtime.synced.wait(), 120)
        startup = time.perf_counter() - spawned
        await asyncio.sleep(1.0)
        rss_idle = rss_mib(proc.pid)
        cpu_idle = cpu_seconds(proc.pid)

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
        await runtime.wait(lambda: all(f"{ns}/{b}" in runtime.reconciled for b in bulk), 600)
        bulk_seconds = time.perf_counter() - started
        cpu_bulk = cpu_seconds(proc.pid) - cpu_idle

        engage, baseline = [], []
        for name in sampled:
            key = f"{ns}/{name}"
            t0 = time.time()
            await set_status(
                hub, ns, name, {"conditions": status(members[0], "", True)["conditions"]}
            )
            await runtime.wait(
                lambda key=key: key in runtime.reconciled and key in runtime.ready_seen, 60
            )
            engage.append(runtime.reconciled[key] - t0)
            baseline.append(runtime.ready_seen[key] - t0)
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)
        rss_full = rss_mib(proc.pid)
    finally:
        proc.terminate()
        await proc.wait()
        runtime.reader.cancel()
        await kube.delete(hub, kube.NAMESPACES, ns)
    own = [e - b for e, b in zip(engage, baseline, strict=True)]  # the runtime's own part
    return {
        "n": n,
        "access": "distinct" if distinct else "shared",
        "loop": loop,
        "own_p50": statistics.median(own),
        "own_p99": percentile(own, 0.99),
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
    }


def report(r: dict) -> None:
    samples = min(100, r["n"] // 2)
    require(r["samples"] == samples, f"N={r['n']}: {samples} engage latencies measured")
    require(r["bulk"] == r["n"] - samples, f"N={r['n']}: the rest engaged in bulk")
    require_times(
        **{k: v for k, v in r.items() if k not in ("n", "access", "loop", "own_p50", "own_p99")}
    )
    require(r["rss_idle"] > 0 and r["bulk_seconds"] > 0, f"N={r['n']}: memory and time measured")

    def ms(seconds: float) -> str:
        return f"{seconds * 1000:.0f} ms"

    print(
        f"N={r['n']} access={r['access']} loop={r['loop']}: bulk engage of {r['bulk']} in {r['bulk_seconds']:.2f} s "
        f"({r['bulk'] / r['bulk_seconds']:.0f}/s); engage latency over {r['samples']} "
        f"p50 {ms(r['engage_p50'])} p99 {ms(r['engage_p99'])} (target p99 <= 300 ms); "
        f"baseline (watch sees the change) p50 {ms(r['baseline_p50'])} "
        f"p99 {ms(r['baseline_p99'])}; ratio p50 {r['engage_p50'] / r['baseline_p50']:.1f}x; "
        f"the runtime's own part (engage - baseline, per sample) p50 {ms(r['own_p50'])} "
        f"p99 {ms(r['own_p99'])}; "
        f"start-up to hub-synced {r['startup']:.2f} s (target <= 0.5 s); "
        f"process CPU for the bulk engage {r['cpu_bulk']:.2f} s, "
        f"{r['cpu_bulk'] * 1000 / r['bulk']:.1f} ms per cluster (multicluster-runtime: ~8 ms); "
        f"RSS idle {r['rss_idle']:.0f} MiB, with {r['n']} engaged {r['rss_full']:.0f} MiB "
        f"({(r['rss_full'] - r['rss_idle']) * 1024 / r['n']:.0f} KiB per cluster; "
        "target 1,000 <= 300 MB)",
        flush=True,
    )


async def main(sizes: list[int], distinct_sizes: list[int], loop: str) -> None:
    runs = [(n, False) for n in sizes] + [(n, True) for n in distinct_sizes]
    async with Fleet(members=2) as fleet:
        async with await fleet.hub.client() as hub:
            for n, distinct in runs:  # each run is printed as soon as it is measured
                report(await run_size(fleet, hub, n, fleet.workdir, distinct=distinct, loop=loop))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kube.run(child(*sys.argv[2:5]), event_loop=sys.argv[5])
    else:
        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument("--sizes", type=int, nargs="*", default=[100, 1000])
        parser.add_argument("--distinct-sizes", type=int, nargs="*", default=[100])
        parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="uvloop")
        parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
        args = parser.parse_args()
        if args.smoke:
            args.sizes, args.distinct_sizes = [4], [4]
        asyncio.run(main(args.sizes, args.distinct_sizes, args.loop))

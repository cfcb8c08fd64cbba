"""Argo CD and MultiKueue syncs: 1,000 profiles to Secrets and MultiKueueClusters, one change.

Against a real hub (no members needed: the profiles' access providers name the hub itself)
with Kueue's MultiKueueCluster CRD from the ``sigs.k8s.io/kueue`` module:

- N ClusterProfiles with a ``secretreader`` access provider are written to one namespace,
  which serves as the inventory for Argo CD and as Kueue's namespace;
- **floor**: the same 2N objects (N Secrets rendered by the Argo CD renderer, N
  MultiKueueClusters), POSTed straight to the hub by this process with as many writes in
  flight as the syncs have workers together: the bare cost of the writes;
- **syncs**: a separate process (this file with ``--child``) runs :class:`ArgoCDSync` and
  :class:`MultiKueueSync` (leader election off). Measured: seconds from its start until this
  process's watches have seen all N Secrets and all N MultiKueueClusters. Printed with its
  ratio to the floor (target <= 2x);
- **one change**: S profiles, one at a time, get a new ``tls-server-name``. Latency = this
  process's Secret watch sees the Secret rewritten, minus the moment before the profile write;
  baseline = this process's profile watch sees the profile change (the hub's write + watch
  delivery). p50/p99 of both (target p99 <= 200 ms);
- **RSS** of the sync process with N profiles mirrored (target <= 100 MiB).

Usage: uv run python bench/integrations.py [--profiles 1000] [--samples 50] [--workers 8]
       uv run python bench/integrations.py --smoke   (20 profiles, 5 changes)
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

from _common import SMOKE_HELP, bounded, percentile, require, require_times, rss_mib

from cluster_inventory import kube
from cluster_inventory.api.constants import EXTENSION_EXEC
from cluster_inventory.kube.informer import Informer
from cluster_inventory.testing import Fleet

PLUGIN = Path(sys.executable).parent / "cluster-inventory-secretreader"
NS = "bench-integrations"
ARGO_NS = "bench-argocd"
FLOOR_NS = "bench-argocd-floor"


# -- the sync process ------------------------------------------------------------------
async def child(hub_kubeconfig: str, providers: str, workers: str) -> None:
    from prometheus_client import CollectorRegistry

    from cluster_inventory.credentials import load_provider_file
    from cluster_inventory.integrations.sync.argocd import ArgoCDSync
    from cluster_inventory.integrations.sync.multikueue import MultiKueueSync

    async with await kube.new_client(kube.connection_from_kubeconfig(hub_kubeconfig)) as hub:
        registry = CollectorRegistry()
        argo = ArgoCDSync(
            hub,
            load_provider_file(providers),
            namespaces=[NS],
            argocd_namespace=ARGO_NS,
            workers=int(workers),
            registry=registry,
        )
        kueue = MultiKueueSync(hub, kueue_namespace=NS, workers=int(workers), registry=registry)
        print(json.dumps({"event": "started", "t": time.time(), "pid": os.getpid()}), flush=True)
        async with argo, kueue:
            await argo.wait_synced()
            await kueue.wait_synced()
            await asyncio.Event().wait()


# -- the driver ------------------------------------------------------------------------
def status(hub, server_name: str | None = None) -> dict:
    cluster = {
        "server": hub.server,
        "certificate-authority-data": base64.b64encode(hub.ca_pem).decode(),
        "extensions": [{"name": EXTENSION_EXEC, "extension": {"clusterName": "bench"}}],
    }
    if server_name:
        cluster["tls-server-name"] = server_name
    return {"accessProviders": [{"name": "secretreader", "cluster": cluster}]}


async def set_status(client, name: str, body: dict) -> None:
    await kube.request(
        client,
        "PATCH",
        kube.CLUSTER_PROFILES.path(NS, name) + "/status",
        body={"status": body},
        content_type="application/merge-patch+json",
    )


class Seen:
    """This process's watches: when each Secret / MultiKueueCluster / profile change arrived."""

    def __init__(self, client, mkc_resource) -> None:
        self.secrets: dict[str, float] = {}
        self.mkcs: dict[str, float] = {}
        self.fingerprints: dict[str, str] = {}
        self.rewritten: dict[str, float] = {}
        self.profile_changed: dict[str, float] = {}
        self.changed = asyncio.Event()
        selector = "app.kubernetes.io/managed-by="
        self.informers = [
            Informer(
                client,
                kube.SECRETS,
                namespace=ARGO_NS,
                label_selector=selector + "cluster-inventory-argocd",
            ),
            Informer(
                client, mkc_resource, label_selector=selector + "cluster-inventory-multikueue"
            ),
            Informer(client, kube.CLUSTER_PROFILES, namespace=NS),
        ]
        self.informers[0].add_handler(self._secret)
        self.informers[1].add_handler(self._mkc)
        self.informers[2].add_handler(self._profile)

    def _secret(self, event: str, obj: dict, _: dict | None) -> None:
        name = obj["metadata"]["name"]
        digest = obj["metadata"]["annotations"]["cluster-inventory.dev/fingerprint"]
        self.secrets.setdefault(name, time.time())
        if name in self.fingerprints and self.fingerprints[name] != digest:
            self.rewritten[name] = time.time()
        self.fingerprints[name] = digest
        self.changed.set()

    def _mkc(self, event: str, obj: dict, _: dict | None) -> None:
        self.mkcs.setdefault(obj["metadata"]["name"], time.time())
        self.changed.set()

    def _profile(self, event: str, obj: dict, old: dict | None) -> None:
        if old is not None and obj.get("status") != old.get("status"):
            self.profile_changed[obj["metadata"]["name"]] = time.time()
            self.changed.set()

    async def wait(self, predicate, timeout: float) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()


async def run(n: int, samples: int, workers: int) -> dict:
    from cluster_inventory.credentials import load_provider_file
    from cluster_inventory.integrations.sync.argocd import render_cluster_secret
    from cluster_inventory.integrations.sync.multikueue import (
        MULTIKUEUE_CLUSTERS,
        render_multikueue_cluster,
    )
    from cluster_inventory_workshop.upstream_crds import kueue_crds

    async with Fleet(members=[]) as fleet, await fleet.hub.client() as hub:
        await kube.ensure_crds(hub, await asyncio.to_thread(kueue_crds))
        for ns in (NS, ARGO_NS, FLOOR_NS):
            await kube.apply(hub, kube.NAMESPACES, {"metadata": {"name": ns}}, field_manager="b")
        names = [f"c{i:04d}" for i in range(n)]

        async def create(name: str) -> None:
            body = {
                "metadata": {"name": name, "namespace": NS, "labels": {"env": "bench"}},
                "spec": {"clusterManager": {"name": "bench"}},
            }
            await kube.apply(hub, kube.CLUSTER_PROFILES, body, field_manager="bench")
            await set_status(hub, name, status(fleet.hub))

        await bounded([create(name) for name in names])
        providers = fleet.workdir / "providers.json"
        providers.write_text(
            json.dumps(
                {
                    "providers": [
                        {
                            "name": "secretreader",
                            "execConfig": {
                                "apiVersion": "client.authentication.k8s.io/v1",
                                "command": str(PLUGIN),
                                "args": ["--namespace", NS],
                                "provideClusterInfo": True,
                            },
                        }
                    ]
                }
            )
        )
        config = load_provider_file(providers)
        profiles = (await kube.list_objects(hub, kube.CLUSTER_PROFILES, NS))["items"]

        # The floor: the same objects, written straight, as many in flight as the syncs have.
        secrets = [render_cluster_secret(p, config, namespace=FLOOR_NS) for p in profiles]
        mkcs = []
        for p in profiles:
            body = render_multikueue_cluster(p)
            body["metadata"]["name"] = "floor-" + body["metadata"]["name"]
            mkcs.append(body)
        started = time.perf_counter()
        await bounded(
            [kube.create(hub, kube.SECRETS, s) for s in secrets]
            + [kube.create(hub, MULTIKUEUE_CLUSTERS, m) for m in mkcs],
            limit=2 * workers,
        )
        floor = time.perf_counter() - started

        seen = Seen(hub, MULTIKUEUE_CLUSTERS)
        for informer in seen.informers:
            informer.start()
        for informer in seen.informers:
            await informer.wait_synced()
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--child",
            str(fleet.hub.kubeconfig_path),
            str(providers),
            str(workers),
            stdout=asyncio.subprocess.PIPE,
        )
        try:
            assert proc.stdout is not None
            record = json.loads(await asyncio.wait_for(proc.stdout.readline(), 60))
            t0 = record["t"]
            await seen.wait(lambda: len(seen.secrets) >= n and len(seen.mkcs) >= n, 600)
            converge = max(max(seen.secrets.values()), max(seen.mkcs.values())) - t0
            await asyncio.sleep(1.0)
            rss = rss_mib(proc.pid)

            latency, baseline = [], []
            for i, name in enumerate(names[:samples]):
                secret = f"cluster-{NS}-{name}"
                before = time.time()
                await set_status(hub, name, status(fleet.hub, f"s{i}.bench.test"))
                await seen.wait(
                    lambda s=secret, p=name: s in seen.rewritten and p in seen.profile_changed,
                    60,
                )
                latency.append(seen.rewritten[secret] - before)
                baseline.append(seen.profile_changed[name] - before)
                await asyncio.sleep(0.05)
            rss_after = rss_mib(proc.pid)
        finally:
            proc.terminate()
            await proc.wait()
            for informer in seen.informers:
                await informer.stop()
    return {
        "n": n,
        "samples": len(latency),
        "floor": floor,
        "converge": converge,
        "p50": statistics.median(latency),
        "p99": percentile(latency, 0.99),
        "base_p50": statistics.median(baseline),
        "base_p99": percentile(baseline, 0.99),
        "rss": max(rss, rss_after),
        "secrets": len(seen.secrets),
        "mkcs": len(seen.mkcs),
    }


def report(r: dict, samples: int) -> None:
    require(r["secrets"] == r["n"] and r["mkcs"] == r["n"], "every Secret and cluster seen")
    require(r["samples"] == samples, f"{samples} change latencies measured")
    require_times(**{k: v for k, v in r.items() if k not in ("n", "samples", "secrets", "mkcs")})
    require(r["floor"] > 0 and r["converge"] > 0, "times measured")

    def ms(seconds: float) -> str:
        return f"{seconds * 1000:.0f} ms"

    print(
        f"N={r['n']} profiles: all {r['n']} Argo CD Secrets and {r['n']} MultiKueueClusters "
        f"present {r['converge']:.2f} s after the syncs started; bare write floor "
        f"{r['floor']:.2f} s; ratio {r['converge'] / r['floor']:.2f}x (target <= 2x)",
        flush=True,
    )
    print(
        f"one profile change -> its Secret rewritten, over {r['samples']}: p50 {ms(r['p50'])} "
        f"p99 {ms(r['p99'])} (target p99 <= 200 ms); baseline (the watch sees the profile "
        f"change) p50 {ms(r['base_p50'])} p99 {ms(r['base_p99'])}; ratio p50 "
        f"{r['p50'] / r['base_p50']:.1f}x",
        flush=True,
    )
    print(f"sync process RSS with {r['n']} profiles: {r['rss']:.0f} MiB (target <= 100 MiB)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kube.run(child(*sys.argv[2:5]))
    else:
        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument("--profiles", type=int, default=1000)
        parser.add_argument("--samples", type=int, default=50)
        parser.add_argument("--workers", type=int, default=8)
        parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
        args = parser.parse_args()
        if args.smoke:
            args.profiles, args.samples = 20, 5
        report(asyncio.run(run(args.profiles, args.samples, args.workers)), args.samples)

"""Consumer credentials: plugin cold start, cached-call overhead, single flight.

Prints, for the same run:
- cold exec (median of --runs fresh processes, each reading the token Secret from a real hub)
  of our ``cluster-inventory-secretreader`` beside the upstream Go ``secretreader`` plugin
  built from sigs.k8s.io/cluster-inventory-api, and the ratio (target <= 2x);
- the overhead of a cached ``CredentialCache.get`` in microseconds, beside a baseline of
  awaiting a trivial coroutine (target <= 50 us);
- plugin runs for 1,000 concurrent ``get`` calls on a cold cache (target: exactly 1).

Usage: uv run python bench/credentials.py [--runs 20]
       uv run python bench/credentials.py --smoke   (one cold run each)
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime as dt
import statistics
import sys
import time
from pathlib import Path

import yaml
from _common import SMOKE_HELP, require, require_times
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api._base import format_time
from cluster_inventory.credentials import (
    ClusterAccess,
    CredentialCache,
    CredentialMetrics,
    ExecConfig,
    ExecEnvVar,
    run_exec_plugin,
)
from cluster_inventory.testing import ControlPlane
from cluster_inventory_workshop import upstream_plugin

NAMESPACE = "default"
SECRET = "bench-cluster"


def access(command: str, args: tuple[str, ...], kubeconfig: Path, server: str) -> ClusterAccess:
    return ClusterAccess(
        profile=f"{NAMESPACE}/{SECRET}",
        provider="secretreader",
        server=server,
        cluster_config={"clusterName": SECRET},
        exec_config=ExecConfig(
            command=command,
            args=args,
            env=(ExecEnvVar(name="KUBECONFIG", value=str(kubeconfig)),),
            provide_cluster_info=True,
        ),
    )


async def cold_exec(a: ClusterAccess, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        cred = await run_exec_plugin(a.exec_config, cluster=a.cluster_info(), provider="bench")
        times.append(time.perf_counter() - started)
        assert cred.token == "bench-token"
    return statistics.median(times)


async def cached_overhead(a: ClusterAccess, calls: int = 100_000) -> tuple[float, float]:
    cache = CredentialCache(metrics=CredentialMetrics.create(CollectorRegistry()))
    await cache.get(a)

    async def trivial() -> None:
        return None

    started = time.perf_counter()
    for _ in range(calls):
        await trivial()
    baseline = (time.perf_counter() - started) / calls
    started = time.perf_counter()
    for _ in range(calls):
        await cache.get(a)
    cached = (time.perf_counter() - started) / calls
    return cached * 1e6, baseline * 1e6


async def concurrent_runs(a: ClusterAccess, callers: int = 1000) -> int:
    cache = CredentialCache(metrics=CredentialMetrics.create(CollectorRegistry()))
    await asyncio.gather(*(cache.get(a) for _ in range(callers)))
    return cache.runs


async def main(runs: int) -> None:
    go_plugin = upstream_plugin("secretreader")
    ours = str(Path(sys.executable).parent / "cluster-inventory-secretreader")
    hub = ControlPlane("bench-hub")
    await hub.start()
    try:
        expiry = format_time(dt.datetime.now(dt.UTC) + dt.timedelta(hours=1))
        async with await hub.client() as client:
            await kube.apply(
                client,
                kube.SECRETS,
                {
                    "metadata": {"name": SECRET, "namespace": NAMESPACE},
                    "data": {
                        "token": base64.b64encode(b"bench-token").decode(),
                        "expirationTimestamp": base64.b64encode(expiry.encode()).decode(),
                    },
                },
                field_manager="bench",
            )
        config = hub.kubeconfig(namespace=NAMESPACE)
        kubeconfig = hub.workdir / "bench.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(config))
        ours_access = access(ours, (), kubeconfig, hub.server)
        go_access = access(str(go_plugin), (), kubeconfig, hub.server)
        await cold_exec(ours_access, 2)  # warm the page cache for both binaries
        await cold_exec(go_access, 2)
        go_cold = await cold_exec(go_access, runs)
        ours_cold = await cold_exec(ours_access, runs)
        cached, baseline = await cached_overhead(ours_access, 100_000 if runs > 1 else 1_000)
        execs = await concurrent_runs(ours_access)
    finally:
        await hub.stop()
    require_times(go_cold=go_cold, ours_cold=ours_cold, cached=cached, baseline=baseline)
    require(execs == 1, f"1,000 concurrent gets ran the plugin {execs} times, not once")
    print(f"cold exec, upstream Go secretreader: {go_cold * 1000:.1f} ms (median of {runs})")
    print(f"cold exec, cluster-inventory-secretreader: {ours_cold * 1000:.1f} ms")
    print(f"cold exec ratio ours/Go: {ours_cold / go_cold:.2f}x (target <= 2x)")
    print(
        f"cached get: {cached:.2f} us per call; trivial await baseline {baseline:.2f} us "
        f"(ratio {cached / baseline:.1f}x; target <= 50 us)"
    )
    print(f"plugin runs for 1000 concurrent gets: {execs} (target 1)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    asyncio.run(main(1 if args.smoke else args.runs))

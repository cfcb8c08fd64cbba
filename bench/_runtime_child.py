"""The runtime process of bench/runtime_engage.py: a FleetManager reporting on stdout.

Run as ``python -m _runtime_child HUB_KUBECONFIG PROVIDERS NAMESPACE LOOP [GROUP IDENTITY]``
from bench/ (a module, not the script: its bytecode is cached, and it imports only what a
runtime needs at start, so start-up and idle RSS are the runtime's own). Writes one JSON
record per line: ``synced``, ``reconcile`` (a cluster's first), ``ready-seen`` (the
baseline: its own profile watch saw the profile turn ready), ``replicas`` and, for each
``stats`` line on stdin, ``stats`` (plugin runs and their wall time).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

from cluster_inventory import kube

MEMBER_NS = "bench-runtime"


async def child(
    hub_kubeconfig: str,
    providers: str,
    namespace: str,
    group: str | None = None,
    identity: str | None = None,
) -> None:
    from prometheus_client import CollectorRegistry

    from cluster_inventory.controller import ShardConfig
    from cluster_inventory.runtime import EngagementPolicy, FleetManager, Request

    out = sys.stdout
    seen: set[str] = set()
    ready_seen: set[str] = set()

    def emit(**record) -> None:
        out.write(json.dumps(record) + "\n")
        out.flush()

    registry = CollectorRegistry()

    def total(metric_name: str, sample_suffix: str) -> float:
        return sum(
            sample.value
            for metric in registry.collect()
            if metric.name == metric_name
            for sample in metric.samples
            if sample.name.endswith(sample_suffix)
        )

    async def answer_stats() -> None:  # the driver asks on stdin, between its phases
        reader = asyncio.StreamReader()
        await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), sys.stdin
        )
        async for line in reader:
            if line.strip() == b"stats":
                emit(
                    event="stats",
                    plugin_runs=total("cluster_inventory_exec_plugin_runs", "_total"),
                    plugin_seconds=total("cluster_inventory_exec_plugin_duration_seconds", "_sum"),
                )

    stats = asyncio.ensure_future(answer_stats())
    async with await kube.new_client(kube.connection_from_kubeconfig(hub_kubeconfig)) as hub:
        fleet = FleetManager(
            hub,
            providers,
            namespaces=[namespace],
            registry=registry,
            policy=EngagementPolicy(cache_sync_timeout=60),
        )

        @fleet.reconciler("v1/ConfigMap", namespace=MEMBER_NS)
        async def reconcile(request: Request, cluster) -> None:
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

        # c46e226 (round 3, the issue-48 before/after) reached the informers directly.
        add_handler = getattr(fleet, "_add_profile_handler", None)
        add_handler = add_handler or fleet._profiles[0].add_handler
        add_handler(on_profile)
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
    stats.cancel()


if __name__ == "__main__":
    kubeconfig, providers, namespace, event_loop, *shard = sys.argv[1:]
    kube.run(child(kubeconfig, providers, namespace, *shard), event_loop=event_loop)

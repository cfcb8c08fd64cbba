"""Step 7: place one region's clusters (PlacementDecisions) and apply manifests to them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import FIELD_MANAGER_DEMO
from cluster_inventory.cli._table import format_table
from cluster_inventory.cli.demo._plan import CONSUMER, PROPERTY_REGION, DemoRun, poll


async def place_and_apply(
    demo: DemoRun, hub: kube.ApiClient, me: kube.ApiClient, namespace: str, providers: Path
) -> None:
    """Place the inventory's clusters of the first member's region and apply to them."""
    from cluster_inventory.integrations import delivery
    from cluster_inventory.integrations.placement import (
        PLACEMENTS,
        PlacementScheduler,
        read_decisions,
    )

    region = demo.members[0].region
    name = f"{namespace}-{region}"
    body = {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"propertySelector": {"matchProperties": {PROPERTY_REGION: region}}},
    }

    async def decided() -> dict[str, Any] | None:
        found = await read_decisions(hub, namespace, name)
        if not found.complete:
            return None
        placed = await kube.get(hub, PLACEMENTS, name, namespace)
        status = objects.status(placed)
        return placed if status.get("observedGeneration") else None

    async with demo.step(f"placing {namespace}'s clusters in {region} (PlacementDecision)"):
        async with PlacementScheduler(hub, namespaces=[namespace], name="demo") as scheduler:
            await scheduler.wait_synced()
            await kube.apply(hub, PLACEMENTS, body, field_manager=FIELD_MANAGER_DEMO)
            placed = await poll(decided, demo.ready_timeout, lambda: "no decision yet")
        decision = await read_decisions(me, namespace, name)  # as a consumer reads it
    status = objects.status(placed)
    left = "; ".join(
        f"{e['reason']}: {','.join(e.get('clusters') or ())}" for e in status.get("excluded") or ()
    )
    demo.out(
        f"\nPLACEMENT {namespace}/{name} ({PROPERTY_REGION}={region}; "
        f"{status.get('numberOfSelectedClusters')} chosen in "
        f"{len(decision.slices)} PlacementDecision slice(s))\n"
        + format_table(
            ("CLUSTER", "DECISION SLICE"),
            [(cluster, ",".join(decision.slices)) for cluster in decision.clusters],
        )
        + (f"left out: {left}\n" if left else "")
    )
    manifests = [
        delivery.Manifest(obj=obj, source=f"demo#{i}")
        for i, obj in enumerate(
            (
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "web-settings", "namespace": "default"},
                    "data": {"region": region, "replicas": "2"},
                },
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": "web", "namespace": "default"},
                },
            ),
            start=1,
        )
    ]
    title = f"applying {len(manifests)} objects to placement {namespace}/{name}"
    async with demo.step(title):
        targets = await delivery.select_profiles(me, namespace, placement=name)
        rows = await delivery.deliver(targets, manifests, providers, timeout=60)
        failed = [r for r in rows if r.failed]
        if failed:
            raise RuntimeError(f"{failed[0].cluster} {failed[0].object}: {failed[0].message}")
    demo.out(
        f"\nAPPLY --placement {name} as {namespace}/{CONSUMER} (server-side apply)\n"
        + format_table(
            ("CLUSTER", "NAMESPACE", "OBJECT", "RESULT"),
            [(r.cluster, r.namespace, r.object, r.action) for r in rows],
        )
    )

"""Two sharded cluster manager replicas: each exports the profile series of its own profiles.

Two ``cluster-inventory manager run --sharding`` processes on the session fleet, each
serving ``/metrics``; every registration has its own inventory. Once every profile is held
(annotation ``cluster-inventory.dev/shard-holder``) by the replica rendezvous hashing gives
it, each replica's ``/metrics`` carries the kube-state-metrics-style series (condition and
info) of exactly the profiles it holds: the two sets are disjoint and together every profile,
so Prometheus never sees a profile twice.
"""

from __future__ import annotations

from cluster_inventory import kube
from cluster_inventory.api.constants import (
    ANNOTATION_SHARD_HOLDER,
    LABEL_CLUSTER_MANAGER,
    METRIC_PROFILE_CONDITION,
    METRIC_PROFILE_INFO,
)
from cluster_inventory.controller.sharding import rendezvous_owner
from cluster_inventory.testing import Fleet, free_port
from tests.support.hub.sharded_replicas import (
    metric_families,
    own_inventories,
    replica,
    stopped,
)
from tests.support.waiting import eventually

MEMBERS = [f"s{i}" for i in range(6)]
REPLICAS = ("pa", "pb")


async def _exported(port: int) -> dict[str, set[tuple[str, str]]]:
    """Per family (condition, info): the (namespace, name) of the profiles a replica exports."""
    out: dict[str, set[tuple[str, str]]] = {
        METRIC_PROFILE_CONDITION: set(),
        METRIC_PROFILE_INFO: set(),
    }
    for family in await metric_families(port):
        if family.name in out:
            for sample in family.samples:
                out[family.name].add((sample.labels["namespace"], sample.labels["name"]))
    return out


async def test_two_sharded_replicas_export_disjoint_profile_series(
    fleet: Fleet, test_namespace: str
) -> None:
    manager = "ps-" + test_namespace[-8:]
    ports = {r: free_port() for r in REPLICAS}
    async with await fleet.hub.client() as hub:
        inventories = await own_inventories(hub, fleet, test_namespace, manager, MEMBERS)
        kubeconfig = str(fleet.hub.kubeconfig_path)
        replicas = {
            r: replica(r, manager, test_namespace, kubeconfig, metrics=f"127.0.0.1:{ports[r]}")
            for r in REPLICAS
        }
        owner = {m: rendezvous_owner(m, list(REPLICAS)) for m in MEMBERS}
        expected = {r: {(inventories[m], m) for m in MEMBERS if owner[m] == r} for r in REPLICAS}
        try:

            async def held_by_owners() -> bool:
                listed = await kube.list_objects(
                    hub,
                    kube.CLUSTER_PROFILES,
                    label_selector=f"{LABEL_CLUSTER_MANAGER}={manager}",
                )
                holders = {
                    p["metadata"]["name"]: (p["metadata"].get("annotations") or {}).get(
                        ANNOTATION_SHARD_HOLDER
                    )
                    for p in listed["items"]
                    if (p.get("status") or {}).get("conditions")
                }
                return holders == owner

            await eventually(held_by_owners, timeout=90, what="every profile held by its owner")
            assert all(expected.values()), expected  # the names give each replica a share

            async def each_exports_its_own() -> dict[str, dict[str, set[tuple[str, str]]]] | None:
                found = {r: await _exported(ports[r]) for r in REPLICAS}
                ok = all(series == expected[r] for r in REPLICAS for series in found[r].values())
                return found if ok else None

            found = await eventually(
                each_exports_its_own, timeout=30, what="each replica's own profile series"
            )
        finally:
            outputs = await stopped(replicas)
            for ns in inventories.values():
                await kube.delete(hub, kube.NAMESPACES, ns)
    pa, pb = (found[r][METRIC_PROFILE_INFO] for r in REPLICAS)
    assert pa.isdisjoint(pb)
    assert pa | pb == {(inventories[m], m) for m in MEMBERS}
    for name, proc in replicas.items():
        assert proc.returncode == 0, outputs[name][1][-2000:]
        assert "Traceback" not in outputs[name][1], outputs[name][1][-3000:]

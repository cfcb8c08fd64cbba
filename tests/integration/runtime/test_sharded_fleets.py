"""Runtime replicas sharing the engaged clusters: one owner each, a stopped replica's share moves.

Three FleetManagers in one process, each under its own ``Manager(hub, shard=ShardConfig(...))``
(one shard group, a Lease per replica in the test namespace), over eight ClusterProfiles on
the two real members of the session fleet: six carry an inventory member id (owned by it),
two do not (owned by their ``namespace/name``). Every profile is engaged by exactly the
replica rendezvous hashing names; a replica stopped cleanly deletes its Lease, disengages
its clusters before that, and the other two take exactly its share; started again, it takes
back only its own share.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.controller import Manager, ShardConfig
from cluster_inventory.controller.sharding import lease_name, rendezvous_owner
from cluster_inventory.runtime import EngagedCluster, FleetManager
from tests.support.hub.inventory import Inventory, metric
from tests.support.waiting import eventually

REPLICAS = ("ra", "rb", "rc")
#: Profile name -> inventory member id (None: owned by the profile key).
PROFILES = {f"s{i}": (f"member-{i}" if i < 6 else None) for i in range(8)}


class Replica:
    """One FleetManager under its own sharded Manager, with what it engaged and disengaged."""

    def __init__(self, identity: str, fm: FleetManager, config: ShardConfig) -> None:
        self.identity = identity
        self.fm = fm
        self.manager = Manager(fm.hub, shard=config, registry=fm.registry)
        self.engaged: list[str] = []
        self.disengaged: list[str] = []
        fm.on_engage(self._on_engage)
        fm.on_disengage(self._on_disengage)
        self.task = asyncio.get_running_loop().create_task(self.manager.add(fm).run())

    async def _on_engage(self, cluster: EngagedCluster) -> None:
        self.engaged.append(cluster.name)

    async def _on_disengage(self, cluster: EngagedCluster) -> None:
        self.disengaged.append(cluster.name)

    def sees(self, live: list[str]) -> bool:
        membership = self.manager.membership
        return membership is not None and membership.replicas == tuple(sorted(live))

    async def stop(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


async def test_replicas_engage_each_cluster_once_and_take_over_a_stopped_ones_share(
    inventory: Inventory, fleet_manager: Callable[..., FleetManager]
) -> None:
    ns = inventory.namespace
    members = [inventory.member(0), inventory.member(1)]
    owner_key = {
        f"{ns}/{name}": mid or f"{ns}/{name}" for name, mid in PROFILES.items()
    }  # what ownership hashes
    shares = {
        r: {k for k, h in owner_key.items() if rendezvous_owner(h, REPLICAS) == r} for r in REPLICAS
    }
    assert all(shares.values()), f"every replica owns a cluster with these names: {shares}"
    for i, (name, mid) in enumerate(PROFILES.items()):
        # One token Secret per member: profiles of one member share a connection.
        await inventory.publish(name, members[i % 2], secret=f"token-{i % 2}", member_id=mid)

    group = f"rt-{ns[-8:]}"
    overlaps: list[str] = []

    def start(identity: str) -> Replica:
        fm = fleet_manager(registry=CollectorRegistry())
        config = ShardConfig(
            namespace=ns,
            group=group,
            identity=identity,
            lease_duration=5,
            renew_interval=1,
            settle=0.5,
        )
        return Replica(identity, fm, config)

    def placed(replicas: dict[str, Replica]) -> bool:
        live = list(replicas)
        if not all(r.sees(live) for r in replicas.values()):
            return False
        holders = {k: [r for r in live if k in replicas[r].fm.clusters] for k in owner_key}
        overlaps.extend(k for k, held in holders.items() if len(held) > 1)
        return all(held == [rendezvous_owner(owner_key[k], live)] for k, held in holders.items())

    replicas = {r: start(r) for r in REPLICAS}
    try:
        await eventually(lambda: placed(replicas), timeout=60, what="each cluster on its owner")
        for r, replica in replicas.items():
            assert set(replica.fm.clusters) == shares[r]
            owned = metric(
                replica.manager.registry, "cluster_inventory_shard_owned_members", group=group
            )
            assert owned == len(shares[r])

        # rb stops cleanly: its clusters are disengaged before its Lease goes, so no cluster
        # is engaged twice while they move; ra and rc take exactly rb's share.
        stopped = replicas.pop("rb")
        overlaps.clear()
        before = {r: (len(x.engaged), len(x.disengaged)) for r, x in replicas.items()}
        await stopped.stop()
        assert sorted(stopped.disengaged) == sorted(shares["rb"])
        assert not stopped.fm.clusters
        try:
            await kube.get(inventory.hub, kube.LEASES, lease_name(group, "rb"), ns)
            raise AssertionError("the stopped replica's Lease is still there")
        except kube.NotFoundError:
            pass
        await eventually(lambda: placed(replicas), timeout=60, what="rb's share taken over")
        assert not overlaps, f"engaged by two replicas at once: {sorted(set(overlaps))}"
        taken = [k for r, x in replicas.items() for k in x.engaged[before[r][0] :]]
        dropped = [k for r, x in replicas.items() for k in x.disengaged[before[r][1] :]]
        assert sorted(taken) == sorted(shares["rb"])
        assert dropped == []

        # rb joins again: it takes back its own share, the others keep the rest.
        before = {r: (len(x.engaged), len(x.disengaged)) for r, x in replicas.items()}
        not_owned = {
            r: metric(
                x.fm.registry,
                "cluster_inventory_runtime_disengagements_total",
                fleet="fleet",
                reason="not-owned",
            )
            for r, x in replicas.items()
        }
        replicas["rb"] = start("rb")
        await eventually(lambda: placed(replicas), timeout=60, what="rb's share back on rb")
        assert set(replicas["rb"].fm.clusters) == shares["rb"]
        dropped = [k for r in ("ra", "rc") for k in replicas[r].disengaged[before[r][1] :]]
        assert sorted(dropped) == sorted(shares["rb"])
        assert all(len(replicas[r].engaged) == before[r][0] for r in ("ra", "rc"))
        moved = sum(
            metric(
                replicas[r].fm.registry,
                "cluster_inventory_runtime_disengagements_total",
                fleet="fleet",
                reason="not-owned",
            )
            - not_owned[r]
            for r in ("ra", "rc")
        )
        assert moved == len(shares["rb"])
    finally:
        await asyncio.gather(*(x.stop() for x in replicas.values()))

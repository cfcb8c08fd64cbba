"""The shard group's metrics, as one replica sees its group (:mod:`.sharding`)."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import Counter, Gauge

from cluster_inventory import kube

__all__ = ["ShardMetrics"]


@dataclass(frozen=True)
class ShardMetrics(kube.PerRegistry):
    """The shard group as this replica sees it (live replicas, members owned, changes).

    A change of the live set after joining: a replica joining, leaving or counted gone.
    """

    replicas: Gauge = kube.metric(
        Gauge,
        "cluster_inventory_shard_replicas",
        "Live replicas this replica sees in its shard group",
        ["group"],
    )
    owned_members: Gauge = kube.metric(
        Gauge,
        "cluster_inventory_shard_owned_members",
        "Member clusters this replica owns",
        ["group"],
    )
    membership_changes: Counter = kube.metric(
        Counter,
        "cluster_inventory_shard_membership_changes",
        "Changes of the live replicas of the shard group seen by this replica",
        ["group"],
    )

"""Prometheus collectors of the fleet manager (besides controller-runtime's reconcile ones)."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import Counter, Gauge, Histogram

from cluster_inventory import kube

__all__ = ["FleetMetrics"]


@dataclass(frozen=True)
class FleetMetrics(kube.PerRegistry):
    """Engaged-cluster gauges and engagement counters, labelled by fleet name."""

    engaged: Gauge = kube.metric(
        Gauge,
        "cluster_inventory_runtime_engaged_clusters",
        "Member clusters engaged by the fleet manager",
        ["fleet"],
    )
    connections: Gauge = kube.metric(
        Gauge,
        "cluster_inventory_runtime_connections",
        "Member connections open (one client and one watch per kind each), shared by "
        "engaged clusters whose access is the same",
        ["fleet"],
    )
    engagements: Counter = kube.metric(
        Counter,
        "cluster_inventory_runtime_engagements_total",
        "Engagement attempts by result (success, error)",
        ["fleet", "result"],
    )
    disengagements: Counter = kube.metric(
        Counter,
        "cluster_inventory_runtime_disengagements_total",
        "Disengagements by reason (deleted, unhealthy, duplicate, access-changed, stopped)",
        ["fleet", "reason"],
    )
    engage_seconds: Histogram = kube.metric(
        Histogram,
        "cluster_inventory_runtime_engage_duration_seconds",
        "Time to engage a cluster: credential, client, caches synced, hooks",
        ["fleet"],
        buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
    )
    provider_reloads: Counter = kube.metric(
        Counter,
        "cluster_inventory_runtime_provider_file_reloads",
        "Provider file changes by result (loaded, invalid, unreadable)",
        ["fleet", "result"],
    )

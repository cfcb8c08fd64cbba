"""Prometheus collectors of the fleet manager (besides controller-runtime's reconcile ones)."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from cluster_inventory import kube

__all__ = ["FleetMetrics"]


@dataclass(frozen=True)
class FleetMetrics(kube.PerRegistry):
    """Engaged-cluster gauges and engagement counters, labelled by fleet name."""

    engaged: Gauge
    connections: Gauge
    engagements: Counter
    disengagements: Counter
    engage_seconds: Histogram
    provider_reloads: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry) -> FleetMetrics:
        """Create and register the collectors in ``registry`` (use :meth:`for_registry`)."""
        return cls(
            engaged=Gauge(
                "cluster_inventory_runtime_engaged_clusters",
                "Member clusters engaged by the fleet manager",
                ["fleet"],
                registry=registry,
            ),
            connections=Gauge(
                "cluster_inventory_runtime_connections",
                "Member connections open (one client and one watch per kind each), shared by "
                "engaged clusters whose access is the same",
                ["fleet"],
                registry=registry,
            ),
            engagements=Counter(
                "cluster_inventory_runtime_engagements_total",
                "Engagement attempts by result (success, error)",
                ["fleet", "result"],
                registry=registry,
            ),
            disengagements=Counter(
                "cluster_inventory_runtime_disengagements_total",
                "Disengagements by reason (deleted, unhealthy, duplicate, access-changed, stopped)",
                ["fleet", "reason"],
                registry=registry,
            ),
            engage_seconds=Histogram(
                "cluster_inventory_runtime_engage_duration_seconds",
                "Time to engage a cluster: credential, client, caches synced, hooks",
                ["fleet"],
                buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
                registry=registry,
            ),
            provider_reloads=Counter(
                "cluster_inventory_runtime_provider_file_reloads",
                "Provider file changes by result (loaded, invalid, unreadable)",
                ["fleet", "result"],
                registry=registry,
            ),
        )

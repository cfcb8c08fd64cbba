"""Prometheus collectors of the cluster manager, with controller-runtime's names."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from cluster_inventory import kube

__all__ = ["ManagerMetrics"]


@dataclass(frozen=True)
class ManagerMetrics:
    """Collectors; one set per registry (several managers in one process share them)."""

    reconcile_total: Counter
    reconcile_errors: Counter
    reconcile_time: Histogram
    invalid_registrations: Gauge
    status_writes: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry) -> ManagerMetrics:
        """Create and register the collectors in ``registry``."""
        return cls(
            reconcile_total=Counter(
                "controller_runtime_reconcile_total",
                "Total number of reconciliations per controller",
                ["controller", "result"],
                registry=registry,
            ),
            reconcile_errors=Counter(
                "controller_runtime_reconcile_errors_total",
                "Total number of reconciliation errors per controller",
                ["controller"],
                registry=registry,
            ),
            reconcile_time=Histogram(
                "controller_runtime_reconcile_time_seconds",
                "Length of time per reconciliation per controller",
                ["controller"],
                registry=registry,
            ),
            invalid_registrations=Gauge(
                "cluster_inventory_invalid_registrations",
                "Registration Secrets that do not parse",
                registry=registry,
            ),
            status_writes=Counter(
                "cluster_inventory_profile_status_writes_total",
                "ClusterProfile status writes (only changes are written)",
                registry=registry,
            ),
        )

    @classmethod
    def for_registry(cls, registry: CollectorRegistry = REGISTRY) -> ManagerMetrics:
        """The collectors registered in ``registry`` (created on first use)."""
        return kube.collectors_for(cls.create, registry)

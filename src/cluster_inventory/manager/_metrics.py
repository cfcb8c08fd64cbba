"""Prometheus collectors of the cluster manager: controller-runtime's reconcile metrics + ours."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Summary

from cluster_inventory import kube

__all__ = ["ManagerMetrics"]


@dataclass(frozen=True)
class ManagerMetrics(kube.PerRegistry):
    """Collectors; one set per registry (several managers in one process share them)."""

    reconcile: kube.ReconcileMetrics
    invalid_registrations: Gauge
    status_writes: Counter
    fenced_writes: Counter
    source_failing: Gauge
    held_profiles: Gauge
    profiles: Gauge
    health_transitions: Counter
    placement_seconds: Summary

    @classmethod
    def create(cls, registry: CollectorRegistry) -> ManagerMetrics:
        """Create and register the collectors in ``registry``."""
        return cls(
            reconcile=kube.ReconcileMetrics.for_registry(registry),
            invalid_registrations=Gauge(
                "cluster_inventory_invalid_registrations",
                "Registration Secrets that do not parse",
                registry=registry,
            ),
            source_failing=Gauge(
                "cluster_inventory_registration_source_failures",
                "Parts of the registration sources that cannot be read now (their last good "
                "view is kept)",
                registry=registry,
            ),
            held_profiles=Gauge(
                "cluster_inventory_held_profiles",
                "Profiles kept although no valid registration wants them, because a "
                "registration is invalid",
                registry=registry,
            ),
            status_writes=Counter(
                "cluster_inventory_profile_status_writes_total",
                "ClusterProfile status writes (only changes are written)",
                registry=registry,
            ),
            fenced_writes=Counter(
                "cluster_inventory_shard_fenced_writes_total",
                "Profile writes the hub refused because the profile changed since it was read "
                "(sharded: another replica holds it, or the cache was behind); retried",
                registry=registry,
            ),
            # Alerts ask "how many members are unhealthy", which no counter answers.
            profiles=Gauge(
                "cluster_inventory_profiles",
                "ClusterProfiles this manager keeps, by namespace and ControlPlaneHealthy status",
                ["namespace", "control_plane_healthy"],
                registry=registry,
            ),
            health_transitions=Counter(
                "cluster_inventory_member_health_transitions",
                "Changes of the manager's verdict on a member's ControlPlaneHealthy, by the new "
                "status and the member (its registration's name)",
                ["status", "member"],
                registry=registry,
            ),
            # CPU, not wall time: the reconcile histogram also counts the hub writes awaited.
            placement_seconds=Summary(
                "cluster_inventory_placement_seconds",
                "CPU seconds of the placement's own work (deciding, not awaiting the hub), by "
                "pass: full (every registration) or incremental (what an event touched)",
                ["pass"],
                registry=registry,
            ),
        )

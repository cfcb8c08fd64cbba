"""Prometheus collectors of the cluster manager: controller-runtime's reconcile metrics + ours."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import Counter, Gauge, Summary

from cluster_inventory import kube

__all__ = ["ManagerMetrics"]


@dataclass(frozen=True)
class ManagerMetrics(kube.PerRegistry):
    """Collectors; one set per registry (several managers in one process share them)."""

    reconcile: kube.ReconcileMetrics = kube.collectors(kube.ReconcileMetrics)
    invalid_registrations: Gauge = kube.metric(
        Gauge, "cluster_inventory_invalid_registrations", "Registration Secrets that do not parse"
    )
    source_failing: Gauge = kube.metric(
        Gauge,
        "cluster_inventory_registration_source_failures",
        "Parts of the registration sources that cannot be read now (their last good view is kept)",
    )
    held_profiles: Gauge = kube.metric(
        Gauge,
        "cluster_inventory_held_profiles",
        "Profiles kept although no valid registration wants them, because a "
        "registration is invalid",
    )
    status_writes: Counter = kube.metric(
        Counter,
        "cluster_inventory_profile_status_writes_total",
        "ClusterProfile status writes (only changes are written)",
    )
    fenced_writes: Counter = kube.metric(
        Counter,
        "cluster_inventory_shard_fenced_writes_total",
        "Profile writes the hub refused because the profile changed since it was read "
        "(sharded: another replica holds it, or the cache was behind); retried",
    )
    # Alerts ask "how many members are unhealthy", which no counter answers.
    profiles: Gauge = kube.metric(
        Gauge,
        "cluster_inventory_profiles",
        "ClusterProfiles this manager keeps, by namespace and ControlPlaneHealthy status",
        ["namespace", "control_plane_healthy"],
    )
    health_transitions: Counter = kube.metric(
        Counter,
        "cluster_inventory_member_health_transitions",
        "Changes of the manager's verdict on a member's ControlPlaneHealthy, by the new "
        "status and the member (its registration's name)",
        ["status", "member"],
    )
    # CPU, not wall time: the reconcile histogram also counts the hub writes awaited.
    placement_seconds: Summary = kube.metric(
        Summary,
        "cluster_inventory_placement_seconds",
        "CPU seconds of the placement's own work (deciding, not awaiting the hub), by "
        "pass: full (every registration) or incremental (what an event touched)",
        ["pass"],
    )

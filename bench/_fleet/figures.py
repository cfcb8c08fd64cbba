"""Figures derived from a run's record, for the table, the details and the plot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from _prometheus import histogram_bounds, metric_delta, metric_total, sample_of

from .record import Cores, Metrics, Run

GROUPS = ("hub", "replicas", "members", "bench")


def groups(cores: Cores) -> dict[str, float]:
    """Cores by process group: hub (its apiserver and the shared etcd), replicas (sum and
    busiest), simulated members (proxies and member apiservers), this benchmark."""
    replicas = [v for k, v in cores.items() if k.startswith("replica ")]
    return {
        "hub": cores.get("hub apiserver", 0.0) + cores.get("etcd", 0.0),
        "replicas": sum(replicas),
        "replica max": max(replicas, default=0.0),
        "members": cores.get("member apiservers", 0.0) + cores.get("proxy", 0.0),
        "bench": cores.get("bench", 0.0),
        "machine": cores.get("machine", 0.0),
    }


def scraped(run: Run) -> dict[str, dict[str, Any]]:
    """The replicas' own figures per phase (``cold``: from the start; ``rest``, ``squeeze``:
    gained over that window; ``end``: the replicas running at the end, whole run); a figure
    no replica exports is None."""
    scrapes = run.replica_scrapes
    per_phase = {"cold": scrapes.get("cold"), "end": run.end.replica_metrics if run.end else None}
    for phase in ("rest", "squeeze"):
        if f"{phase}_start" in scrapes and f"{phase}_end" in scrapes:
            per_phase[phase] = {
                name: metric_delta(scrapes[f"{phase}_start"].get(name, {}), m)
                for name, m in scrapes[f"{phase}_end"].items()
            }
    return {phase: _replica_figures(by) for phase, by in per_phase.items() if by}


def _replica_figures(by_replica: dict[str, Metrics]) -> dict[str, Any]:
    """One phase's figures from each replica's samples: totals over the replicas, and
    per replica the (p99, max) bucket bounds of the histograms."""

    def total(name: str, **labels: str) -> float | None:
        values = [metric_total(m, name, **labels) for m in by_replica.values()]
        return (
            sum(v for v in values if v is not None) if any(v is not None for v in values) else None
        )

    def bounds(name: str) -> dict[str, tuple[float, float]] | None:
        out = {r: b for r, m in by_replica.items() if (b := histogram_bounds(m, name))}
        return out or None

    health = "cluster_inventory_member_health_transitions_total"
    statuses = sorted(
        {
            sample_of(k)[1].get("status", "")
            for m in by_replica.values()
            for k in m
            if sample_of(k)[0] == health
        }
    )
    return {
        "health_transitions": {st: total(health, status=st) for st in statuses} or None,
        "shard_changes": total("cluster_inventory_shard_membership_changes_total"),
        "probes_deferred": total("cluster_inventory_probes_deferred_total"),
        "loop_lag": bounds("cluster_inventory_event_loop_lag_seconds"),
        "renewal_lateness": bounds("cluster_inventory_lease_renewal_lateness_seconds"),
        "gc_pause": bounds("cluster_inventory_gc_pause_seconds"),
        "gc_cpu_s": total("cluster_inventory_gc_cpu_seconds_total"),
    }


@dataclass(frozen=True, kw_only=True)
class Summary:
    """The derived figures of the table and the plot; None where the record lacks a phase.

    ``ratio``: cold start / hub floor; ``ratio_floors``: cold start / (hub + member floor);
    ``*_groups``: :func:`groups` of the cold start's, the rest's and the kill's cores;
    ``cores_max``/``cores_sum``: the busiest replica's and all replicas' cores at rest;
    ``cores_per_1k``: all replicas' per 1,000 members; ``cores_per_1k_held``: the busiest
    replica's per 1,000 members it holds; ``rss_max_mib``, ``rss_per_1k_mib``; ``lag_p99_rest_s``:
    the replicas' event-loop lag p99 at rest (their metric's bucket bound).
    """

    ratio: float | None = None
    ratio_floors: float | None = None
    cold_groups: dict[str, float] | None = None
    steady_groups: dict[str, float] | None = None
    kill_groups: dict[str, float] | None = None
    cores_max: float | None = None
    cores_sum: float | None = None
    cores_per_1k: float | None = None
    cores_per_1k_held: float | None = None
    rss_max_mib: float | None = None
    rss_per_1k_mib: float | None = None
    lag_p99_rest_s: float | None = None


def summary(run: Run) -> Summary:
    """The :class:`Summary` of ``run`` (only the figures its record allows)."""
    n, setup, cold, rest = run.settings.n, run.setup, run.cold, run.rest
    out: dict[str, Any] = {}
    if cold:
        out["ratio"] = cold.seconds / setup.floor_s
        if setup.member_floor_s is not None:
            out["ratio_floors"] = cold.seconds / (setup.floor_s + setup.member_floor_s)
        out["cold_groups"] = groups(cold.cores)
    if run.kill_cores is not None:
        out["kill_groups"] = groups(run.kill_cores)
    if rest:
        out["steady_groups"] = groups(rest.cores)
        steady = [rest.cores.get(f"replica {name}", 0.0) for name in rest.rss_mib]
        out["cores_max"] = max(steady)
        out["cores_sum"] = sum(steady)
        out["cores_per_1k"] = 1000 * sum(steady) / n
        out["rss_max_mib"] = max(rest.rss_mib.values())
        out["rss_per_1k_mib"] = 1000 * sum(rest.rss_mib.values()) / n
        per_held = [
            1000 * rest.cores.get(f"replica {name}", 0.0) / rest.owned[name]
            for name in rest.rss_mib
            if rest.owned.get(name)
        ]
        if per_held:
            out["cores_per_1k_held"] = max(per_held)
    lag = (scraped(run).get("rest") or {}).get("loop_lag")
    if lag:
        out["lag_p99_rest_s"] = max(p99 for p99, _ in lag.values())
    return Summary(**out)

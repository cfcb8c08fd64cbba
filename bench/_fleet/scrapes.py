"""Counters read from the processes of a run: the hub's, the proxies', a replica's.

- the hub kube-apiserver's own ``apiserver_request_total`` (read with the fleet's admin
  credentials, so it counts every client: the replicas, the agents, the apiserver's own
  Leases, this benchmark);
- the virtual-member proxies' ``/stats`` (member requests so far, open connections);
- a replica's ``/metrics``, the families in :data:`WANTED_METRICS` (``_prometheus``).
"""

from __future__ import annotations

import json
import re
import ssl
import time
import urllib.request
from collections import Counter

from _common import require
from _prometheus import parse_metrics

from cluster_inventory import kube
from cluster_inventory_workshop.virtual_members import VirtualMembers

MUTATING = frozenset({"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"})
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')

#: Metric families kept from a replica's /metrics; the last five come with the lead's
#: overload work and may be absent (their figures then read ``-``).
WANTED_METRICS = (
    "cluster_inventory_shard_owned_members",
    "cluster_inventory_shard_replicas",
    "cluster_inventory_shard_fenced_writes_total",
    "cluster_inventory_profile_status_writes_total",
    "cluster_inventory_member_health_transitions_total",
    "cluster_inventory_shard_membership_changes_total",
    "cluster_inventory_lease_renewal_lateness_seconds",
    "cluster_inventory_event_loop_lag_seconds",
    "cluster_inventory_probes_deferred_total",
    "cluster_inventory_placement_seconds",
    "cluster_inventory_gc_pause_seconds",
    "cluster_inventory_gc_cpu_seconds_total",
    "cluster_inventory_member_start_limit",
)


async def _request_totals(hub: kube.ApiClient) -> list[tuple[dict[str, str], float]]:
    """The hub kube-apiserver's ``apiserver_request_total`` samples so far: (labels, value)."""
    status, text = await kube.get_text(hub, "/metrics")
    require(status == 200, f"hub /metrics answered {status}")
    samples = []
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, _, value = line.rpartition("} ")
        samples.append((dict(_LABEL.findall(labels_text)), float(value)))
    return samples


async def hub_requests(hub: kube.ApiClient, *, writes_only: bool = True) -> Counter[str]:
    """Requests the hub kube-apiserver has served so far: mutating ones by resource, or
    (``writes_only=False``) every one by ``VERB resource[/subresource]``."""
    counts: Counter[str] = Counter()
    for labels, value in await _request_totals(hub):
        if writes_only and labels.get("verb") not in MUTATING:
            continue
        what = labels.get("resource", "") + (
            f"/{labels['subresource']}" if labels.get("subresource") else ""
        )
        counts[what if writes_only else f"{labels.get('verb')} {what}"] += value
    return counts


async def hub_writes(hub: kube.ApiClient) -> Counter[str]:
    """Mutating requests the hub kube-apiserver has served so far, by resource."""
    return await hub_requests(hub)


async def hub_refused(hub: kube.ApiClient) -> float:
    """Requests the hub kube-apiserver answered 429 so far (API Priority and Fairness
    rejected them: a renewal or report that must be retried)."""
    return sum(value for labels, value in await _request_totals(hub) if labels.get("code") == "429")


def proxy_stats(vm: VirtualMembers) -> dict[str, float]:
    """The virtual-member proxies' counters summed: member requests so far, open connections."""
    ctx = ssl.create_default_context(cadata=vm.ca_pem.decode())
    stats: Counter[str] = Counter()
    for i in range(len(vm.processes)):  # member i is served by proxy process i (mod count)
        url = f"{vm.base_url_of(i)}/stats"
        with urllib.request.urlopen(url, context=ctx, timeout=10) as response:
            stats.update(json.loads(response.read()))
    return {**stats, "t": time.perf_counter(), "proxies": len(vm.processes)}


def member_rate(a: dict[str, float], b: dict[str, float]) -> float:
    """Requests per second the member side (through the proxy) served between two stats."""
    return (b["requests"] - a["requests"]) / (b["t"] - a["t"])


def replica_metrics(port: int) -> dict[str, float]:
    """The wanted samples of the /metrics on ``127.0.0.1:port`` (empty if it does not answer),
    see :func:`_prometheus.parse_metrics`."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            return parse_metrics(response.read().decode(), WANTED_METRICS)
    except OSError:
        return {}

"""``/metrics`` of a cluster manager replica holding N profiles: its size and its scrape time.

The replica's registry as the manager builds it (its own collectors, controller-runtime's
reconcile set, and the profile series of ``docs/observability.md`` added through
:class:`cluster_inventory.controller.ProfileSeries`), served by the product's own endpoint
(:func:`cluster_inventory.kube.endpoints.serve_endpoints`) and scraped over loopback HTTP as
Prometheus scrapes it. The profiles are what the manager stores: each one's status built by
:func:`~cluster_inventory.manager.rules.status.build_status` from a healthy observation (three
conditions, three properties, the access provider with a CA), its labels and spec as the
profile writer applies them; the view is the manager's (``HubView.held_profiles`` decodes each
cached profile with ``ProfileView.of`` at every scrape, as here).

Figures per size: lines and bytes of ``/metrics``, the scrape's wall time (median and worst of
``--repeat``), and of that the time ``generate_latest`` takes in the process.

Usage: uv run python bench/profile_series.py [--sizes 1000 10000] [--repeat 5]
       uv run python bench/profile_series.py --smoke   (50 profiles, one scrape)
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime as dt
import statistics
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

from _common import SMOKE_HELP, require, require_times
from prometheus_client import CollectorRegistry, generate_latest

from cluster_inventory import kube
from cluster_inventory.api.constants import LABEL_CLUSTER_MANAGER, LABEL_INVENTORY_MEMBER_ID
from cluster_inventory.api.views import ProfileView
from cluster_inventory.controller import ProfileSeries
from cluster_inventory.kube.endpoints import serve_endpoints
from cluster_inventory.manager._metrics import ManagerMetrics
from cluster_inventory.manager.rules.status import (
    ConditionState,
    Observation,
    ObservedProperty,
    access_provider,
    build_status,
)
from cluster_inventory.testing import free_port

T0 = dt.datetime(2026, 12, 2, tzinfo=dt.UTC)
MANAGER = "cluster-inventory"
#: Inventories the profiles are spread over (each member is in one).
INVENTORIES = 10
#: A CA bundle's size in a real profile (about 1.1 KB of PEM).
CA = b"-----BEGIN CERTIFICATE-----\n" + b"A" * 1060 + b"\n-----END CERTIFICATE-----\n"


def stored_profile(i: int) -> dict[str, Any]:
    """Profile ``i`` as the cluster manager stores it (metadata, spec and status)."""
    name = f"member-{i:05d}"
    healthy = ConditionState("True", "APIServerReady", "readyz: all checks passed")
    obs = Observation(
        version="v1.34.1",
        healthy=healthy,
        joined=ConditionState("True", "Joined", "the registration credential works"),
        properties=tuple(
            ObservedProperty(p, f"value-{i}", T0)
            for p in ("cluster.clusterset.k8s.io", "clusterset.k8s.io", "region.example.com")
        ),
        member_id=f"uid-{i:08d}",
    )
    server = kube.ClusterConnection(server=f"https://10.0.{i // 250}.{i % 250}:6443", ca_data=CA)
    status = build_status(obs, access_provider("secretreader", server, name), None, T0)
    return {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {
            "name": name,
            "namespace": f"inventory-{i % INVENTORIES}",
            "uid": base64.b16encode(i.to_bytes(8)).decode().lower(),
            "resourceVersion": str(1000 + i),
            "labels": {LABEL_CLUSTER_MANAGER: MANAGER, LABEL_INVENTORY_MEMBER_ID: obs.member_id},
        },
        "spec": {"displayName": name, "clusterManager": {"name": MANAGER}},
        "status": status,
    }


def scrape(port: int) -> tuple[float, bytes]:
    """Wall seconds of one GET /metrics and its body (run off the serving loop)."""
    started = time.perf_counter()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=120) as response:
        body = response.read()
    return time.perf_counter() - started, body


async def measure(size: int, repeat: int) -> dict[str, float]:
    """Serve a replica's registry with ``size`` profiles; scrape it ``repeat`` times."""
    cached = [stored_profile(i) for i in range(size)]

    def held() -> Iterator[ProfileView]:
        return (ProfileView.of(obj) for obj in cached)

    registry = CollectorRegistry()
    ManagerMetrics.for_registry(registry)
    ProfileSeries.for_registry(registry).add(held)
    port = free_port()
    walls, generated = [], []
    body = b""
    async with serve_endpoints(
        lambda: True, health=None, metrics=("127.0.0.1", port), registry=registry
    ):
        for _ in range(repeat):
            wall, body = await asyncio.to_thread(scrape, port)
            walls.append(wall)
            started = time.perf_counter()
            generate_latest(registry)
            generated.append(time.perf_counter() - started)
    text = body.decode()
    lines = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    series = text.count("cluster_inventory_cluster_profile_info{")
    require(series == size, f"{series} info series for {size} profiles")
    require(
        text.count("cluster_inventory_cluster_profile_condition{") == 3 * 3 * size,
        "three series per condition, three conditions per profile",
    )
    figures = {
        "profiles": float(size),
        "lines": float(lines),
        "bytes": float(len(body)),
        "scrape_s_median": statistics.median(walls),
        "scrape_s_max": max(walls),
        "generate_s_median": statistics.median(generated),
    }
    require_times(**{k: v for k, v in figures.items() if k.endswith(("_median", "_max"))})
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    sizes, repeat = ([50], 1) if args.smoke else (args.sizes, args.repeat)
    print(
        f"{'profiles':>9} {'lines':>9} {'bytes':>12} {'scrape p50':>11} {'max':>8} {'generate':>9}"
    )
    for size in sizes:
        f = asyncio.run(measure(size, repeat))
        print(
            f"{size:>9,} {int(f['lines']):>9,} {int(f['bytes']):>12,} "
            f"{f['scrape_s_median'] * 1000:>9.0f}ms {f['scrape_s_max'] * 1000:>6.0f}ms "
            f"{f['generate_s_median'] * 1000:>7.0f}ms"
        )


if __name__ == "__main__":
    main()

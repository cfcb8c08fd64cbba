"""Prometheus collectors of a cluster proxy replica (served on its Manager's ``/metrics``).

No series is labelled by member: a replica may hold 10,000 tunnels, and a per-member series
each would make the scrape cost what the tunnels do (``docs/scale.md``). Which members are
connected is the replica's log (``tunnel of member NAME open``) and the members' Leases.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import Counter, Gauge

from cluster_inventory import kube

__all__ = ["ProxyMetrics"]


@dataclass(frozen=True)
class ProxyMetrics(kube.PerRegistry):
    """A replica's collectors; one set per registry (replicas in one process share them).

    Attributes:
        tunnels: Agents' tunnels held now.
        handshakes: Agents' tunnel handshakes answered, by HTTP ``code`` (``101``: a tunnel
            opened; ``400``/``401``/``403``: refused, ``docs/cluster-proxy.md``;
            ``503``: the hub did not answer the review).
        closed_by_recheck: Tunnels this replica closed at a re-check, by ``reason``
            (``expired``: the agent's certificate; ``revoked``: the hub no longer lets the
            agent serve its member).
        connects: Consumers' CONNECTs answered, by HTTP ``code`` (``200``: a stream
            carried; the refusals of :mod:`.connect`).
        streams: Consumers' streams carried now.
    """

    tunnels: Gauge = kube.metric(
        Gauge, "cluster_inventory_proxy_tunnels", "Agents' tunnels this replica holds"
    )
    handshakes: Counter = kube.metric(
        Counter,
        "cluster_inventory_proxy_tunnel_handshakes",
        "Agents' tunnel handshakes answered, by HTTP code (101: the tunnel opened)",
        ["code"],
    )
    closed_by_recheck: Counter = kube.metric(
        Counter,
        "cluster_inventory_proxy_tunnels_closed_by_recheck",
        "Tunnels closed at a re-check with the hub, by reason (expired, revoked)",
        ["reason"],
    )
    connects: Counter = kube.metric(
        Counter,
        "cluster_inventory_proxy_connects",
        "Consumers' CONNECTs answered, by HTTP code (200: a stream carried)",
        ["code"],
    )
    streams: Gauge = kube.metric(
        Gauge, "cluster_inventory_proxy_streams", "Consumers' streams carried now"
    )

"""Running the manager as a process: leader election, health and metrics endpoints, shutdown.

``cluster-inventory manager run`` calls :func:`run_manager`. Replicas elect a leader with a
Lease on the hub (client-go timings 15 s / 10 s / 2 s); only the leader reconciles. Every
replica serves ``/healthz`` and ``/readyz`` (ready once the leader's informers synced, or
while waiting as a standby) and Prometheus ``/metrics``. Cancelling the task (SIGTERM in the
CLI) stops the reconcilers and releases the Lease so a standby takes over at once.
"""

from __future__ import annotations

import asyncio

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.controller import Manager
from cluster_inventory.kube.endpoints import default_identity, parse_bind_address
from cluster_inventory.kube.leaderelection import LeaderElectionConfig
from cluster_inventory.manager.cluster_manager import ClusterManagerRunnable
from cluster_inventory.manager.config import ManagerConfig

__all__ = [
    "LEASE_NAME",
    "default_identity",
    "lease_name",
    "parse_bind_address",
    "run_manager",
]

#: Name of the leader-election Lease in the manager's namespace (of the manager named
#: ``cluster-inventory``; see :func:`lease_name`).
LEASE_NAME = "cluster-inventory-manager"
_DEFAULT_NAME = "cluster-inventory"


def lease_name(manager_name: str) -> str:
    """The Lease the replicas of the cluster manager ``manager_name`` elect a leader with.

    Managers of different names are different controllers (each owns only the profiles
    labelled with its name), so each has its own Lease, even in one namespace.
    """
    return LEASE_NAME if manager_name == _DEFAULT_NAME else f"{LEASE_NAME}-{manager_name}"


async def run_manager(
    hub: kube.ClusterConnection,
    config: ManagerConfig,
    *,
    identity: str | None = None,
    leader_elect: bool = True,
    health_address: tuple[str, int] | None = None,
    metrics_address: tuple[str, int] | None = None,
    lease: LeaderElectionConfig | None = None,
    registry: CollectorRegistry = REGISTRY,
    started: asyncio.Event | None = None,
    handle_signals: bool = False,
) -> bool:
    """Run one manager replica until cancelled or until it loses leadership.

    A :class:`~cluster_inventory.controller.Manager` running a :class:`ClusterManagerRunnable`.

    Args:
        hub: Hub connection.
        config: Manager settings.
        identity: Replica identity for the Lease (default :func:`default_identity`).
        leader_elect: Take part in leader election (off: reconcile at once).
        health_address: Where to serve ``/healthz`` and ``/readyz`` (None: nowhere).
        metrics_address: Where to serve ``/metrics`` (None: nowhere).
        lease: Lease settings (defaults: ``config.namespace``/:func:`lease_name`, client-go
            timings).
        registry: Prometheus registry for metrics.
        started: Set once the endpoints are up.
        handle_signals: Stop on SIGTERM and SIGINT (the CLI's process).

    Returns:
        True if leadership was lost (exit and let the supervisor restart the process, as
        controller-runtime does); False if the manager stopped on its own.

    Raises:
        KubeConfigError: The hub TLS material does not load.
        SourceUnavailableError: The registration source or a hub collection cannot be read
            at start: raised before the Lease is taken or anything is written, since a
            source read as empty would delete every profile.
    """
    identity = identity or default_identity()
    if leader_elect and lease is None:
        lease = LeaderElectionConfig(
            namespace=config.namespace, name=lease_name(config.name), identity=identity
        )
    manager = Manager(
        hub,
        lease=lease if leader_elect else None,
        health=health_address,
        metrics=metrics_address,
        registry=registry,
    )
    manager.add(
        lambda client: ClusterManagerRunnable(client, config, identity=identity, registry=registry)
    )
    return await manager.run(
        handle_signals=handle_signals, started=started.set if started is not None else None
    )

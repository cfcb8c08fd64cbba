"""Running a long-lived controller command until SIGTERM, the way every ``... run``/``sync`` does.

SIGTERM and SIGINT cancel the controller's task (it stops its workers and releases its
Lease on the way out); a lost Lease, a refused first LIST or an address already in use end
the command with one line on stderr and exit code 1, so the supervisor restarts it.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cluster_inventory.cli._get import fail

if TYPE_CHECKING:
    from cluster_inventory import kube
    from cluster_inventory.kube.leaderelection import LeaderElectionConfig

__all__ = ["HubProcess", "hub_process", "run_until_signal"]


@dataclass(frozen=True)
class HubProcess:
    """What a hub controller command resolved from its flags.

    Attributes:
        connection: The hub (kubectl's rules: ``--kubeconfig``, ``$KUBECONFIG``, in-cluster,
            ``~/.kube/config``).
        health: (host, port) of ``/healthz`` and ``/readyz``, or None.
        metrics: (host, port) of ``/metrics``, or None.
        lease: Leader-election settings, or None without election.
    """

    connection: kube.ClusterConnection
    health: tuple[str, int] | None
    metrics: tuple[str, int] | None
    lease: LeaderElectionConfig | None


def hub_process(
    *,
    kubeconfig: Path | None,
    context: str | None,
    health_probe_bind_address: str,
    metrics_bind_address: str,
    log_format: str,
    lease_namespace: str,
    lease_name: str,
    leader_elect: bool,
) -> HubProcess:
    """Configure logging and resolve the flags every ``... run``/``sync`` command shares.

    The Lease identity is ``$POD_NAME``, else ``<hostname>_<pid>`` (client-go's).

    Raises:
        typer.Exit: Exit code 1 with one line naming the bad address or kubeconfig.
    """
    from cluster_inventory import kube
    from cluster_inventory.cli._logging import configure_logging
    from cluster_inventory.kube.endpoints import default_identity, parse_bind_address
    from cluster_inventory.kube.leaderelection import LeaderElectionConfig

    configure_logging(log_format)
    try:
        health = parse_bind_address(health_probe_bind_address)
        metrics = parse_bind_address(metrics_bind_address)
        connection = kube.load_connection(kubeconfig, context=context)
    except (ValueError, kube.KubeError) as exc:
        fail(str(exc))
    lease = (
        LeaderElectionConfig(
            namespace=lease_namespace, name=lease_name, identity=default_identity()
        )
        if leader_elect
        else None
    )
    return HubProcess(connection, health, metrics, lease)


def run_until_signal(main: Callable[[], Awaitable[bool]]) -> None:
    """Run ``main()`` on :func:`cluster_inventory.kube.run` until it returns or a signal.

    Args:
        main: The controller; returns True when leadership was lost.

    Raises:
        typer.Exit: Exit code 1 after printing the error (KubeError, OSError) or
            ``leadership lost``.
    """
    from cluster_inventory import kube

    async def supervised() -> bool:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)
        return await main()

    try:
        lost = kube.run(supervised())
    except asyncio.CancelledError:
        lost = False
    except (kube.KubeError, OSError) as exc:
        fail(str(exc))
    if lost:
        fail("leadership lost")

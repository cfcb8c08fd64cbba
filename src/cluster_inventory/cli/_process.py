"""Running a long-lived command as a :class:`~cluster_inventory.controller.Manager`.

Every ``... run``/``sync`` command and ``apply --watch`` resolves its flags with
:func:`hub_process`, adds its controllers to ``process.manager()`` and calls
:func:`run_until_signal`. The Manager handles SIGTERM and SIGINT (it stops its runnables and
releases its Lease on the way out); a lost Lease, a refused first LIST or an address already
in use end the command with one line on stderr and exit code 1, so the supervisor restarts it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cluster_inventory.cli._errors import fail

if TYPE_CHECKING:
    from cluster_inventory import kube
    from cluster_inventory.controller import Manager, ShardConfig
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
        identity: This replica's identity (``$POD_NAME``, else ``<hostname>_<pid>``).
        shard: Shard-group settings with ``--sharding``, else None.
    """

    connection: kube.ClusterConnection
    health: tuple[str, int] | None
    metrics: tuple[str, int] | None
    lease: LeaderElectionConfig | None
    identity: str
    shard: ShardConfig | None = None

    def manager(self) -> Manager:
        """A :class:`~cluster_inventory.controller.Manager` with these settings (no runnables)."""
        from cluster_inventory.controller import Manager

        return Manager(
            self.connection,
            lease=self.lease,
            shard=self.shard,
            health=self.health,
            metrics=self.metrics,
        )


def hub_process(
    kubeconfig: Path | None,
    context: str | None,
    *,
    endpoints: tuple[str, str],
    log_format: str,
    lease: tuple[str, str] | None,
    shard: tuple[str, str, float, float] | None = None,
) -> HubProcess:
    """Configure logging and resolve the flags every ``... run``/``sync`` command shares.

    Args:
        kubeconfig: ``--kubeconfig`` (None: kubectl's rules).
        context: ``--context``.
        endpoints: ``--health-probe-bind-address`` and ``--metrics-bind-address``.
        log_format: ``--log-format`` (text or json).
        lease: (namespace, name) of the Lease, or None with ``--no-leader-elect``. The
            identity is ``$POD_NAME``, else ``<hostname>_<pid>`` (client-go's).
        shard: (namespace, group, lease duration s, renew interval s) with ``--sharding``.

    Raises:
        typer.Exit: Exit code 1 with one line naming the bad address or kubeconfig.
    """
    from cluster_inventory import kube
    from cluster_inventory.cli._logging import configure_logging
    from cluster_inventory.controller import ShardConfig
    from cluster_inventory.kube.endpoints import default_identity, parse_bind_address
    from cluster_inventory.kube.leaderelection import LeaderElectionConfig

    configure_logging(log_format)
    try:
        health, metrics = (parse_bind_address(address) for address in endpoints)
        connection = kube.load_connection(kubeconfig, context=context)
    except (ValueError, kube.KubeError) as exc:
        fail(str(exc))
    identity = default_identity()
    election = (
        LeaderElectionConfig(namespace=lease[0], name=lease[1], identity=identity)
        if lease is not None
        else None
    )
    try:
        sharding = (
            ShardConfig(
                namespace=shard[0],
                group=shard[1],
                identity=identity,
                lease_duration=shard[2],
                renew_interval=shard[3],
            )
            if shard is not None
            else None
        )
    except ValueError as exc:
        fail(str(exc))
    return HubProcess(connection, health, metrics, election, identity, sharding)


def run_until_signal(manager: Manager | Callable[[], Coroutine[Any, Any, bool]]) -> None:
    """Run ``manager`` on :func:`cluster_inventory.kube.run` until SIGTERM/SIGINT or an end.

    Args:
        manager: The process, with its runnables added; or, for a command that opens its
            hub client itself, a coroutine function opening it and running a Manager with
            ``handle_signals=True`` (returning what the Manager's ``run`` returns).

    Raises:
        typer.Exit: Exit code 1 after printing the error (KubeError, OSError) or
            ``leadership lost``.
    """
    from cluster_inventory import kube

    _report_crashes()
    try:
        main = manager() if callable(manager) else manager.run(handle_signals=True)
        lost = kube.run(main)
    except asyncio.CancelledError:
        lost = False
    except (kube.KubeError, OSError) as exc:
        fail(str(exc))
    if lost:
        fail("leadership lost")


def _report_crashes() -> None:
    """Print every thread's Python stack to stderr if the process dies of a fatal signal.

    ``faulthandler`` (``python -X faulthandler``): a SIGSEGV or SIGABRT in a C extension
    (uvloop, aiohttp's parser, OpenSSL) otherwise ends a long-running process with nothing
    but its exit code. Skipped when stderr is no file (a command run in-process by a test).
    """
    import faulthandler
    import io

    with contextlib.suppress(AttributeError, ValueError, io.UnsupportedOperation):
        faulthandler.enable()

"""The options hub commands share, written once (typer ``Annotated`` aliases).

A parameter's name gives the flag (``kubeconfig`` -> ``--kubeconfig``, ``hub_kubeconfig`` ->
``--hub-kubeconfig``); its default stays in the command's signature, since defaults differ (the
manager serves ``:8080`` by default, the placement scheduler nothing). The parameters that
name a member for two commands (``register`` and ``manager accept``, ``deregister`` and
``manager reject``) and a member kubeconfig's ``--context`` are here too: no two commands
declare one parameter alike twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cluster_inventory.cli._hub import HUB_KUBECONFIG_HELP

__all__ = [
    "Clustersets",
    "DisplayName",
    "HealthAddress",
    "HubContext",
    "HubKubeconfig",
    "InventoryNamespace",
    "LeaderElect",
    "LogFormat",
    "MemberContext",
    "MemberName",
    "MetricsAddress",
    "RegisteredMember",
    "ShardLeaseDuration",
    "ShardRenewInterval",
    "Sharding",
]

#: ``--kubeconfig``: the hub's kubeconfig, found by kubectl's rules when absent.
HubKubeconfig = Annotated[Path | None, typer.Option(help=HUB_KUBECONFIG_HELP)]
#: ``--context``: a context of the hub's kubeconfig.
HubContext = Annotated[str | None, typer.Option(help="Hub kubeconfig context.")]
#: ``-n``/``--namespace`` of the commands that read profiles; None: the context's namespace.
InventoryNamespace = Annotated[
    str | None,
    typer.Option("--namespace", "-n", help="Inventory namespace (default: the context's)."),
]
#: ``--leader-elect/--no-leader-elect``.
LeaderElect = Annotated[bool, typer.Option(help="Use Lease leader election.")]
#: ``--sharding``: replicas share the member clusters (docs/scale.md).
Sharding = Annotated[
    bool,
    typer.Option(
        help="Share member clusters among replicas (a Lease per replica on the hub, members "
        "by rendezvous hashing; every replica works, no leader election)."
    ),
]
#: ``--shard-lease-duration``.
ShardLeaseDuration = Annotated[
    float, typer.Option(help="Seconds without renewal after which a replica counts as gone.")
]
#: ``--shard-renew-interval``.
ShardRenewInterval = Annotated[
    float, typer.Option(help="Seconds between renewals of this replica's shard Lease.")
]
#: ``--metrics-bind-address``.
MetricsAddress = Annotated[str, typer.Option(help="[host]:port of /metrics, or 0 for none.")]
#: ``--health-probe-bind-address``.
HealthAddress = Annotated[
    str, typer.Option(help="[host]:port of /healthz and /readyz, or 0 for none.")
]
#: ``--log-format``.
LogFormat = Annotated[str, typer.Option(help="text or json.")]
#: The member's name, the argument of ``register`` and ``manager accept``.
MemberName = Annotated[str, typer.Argument(help="Member name (becomes the ClusterProfile name).")]
#: The member's name, the argument of ``deregister`` and ``manager reject``.
RegisteredMember = Annotated[str, typer.Argument(help="Member name.")]
#: ``--clusterset`` (required, repeatable) of ``register`` and ``manager accept``.
Clustersets = Annotated[
    list[str], typer.Option("--clusterset", help="Cluster set to join (repeatable).")
]
#: ``--display-name`` of ``register`` and ``manager accept``.
DisplayName = Annotated[str | None, typer.Option(help="spec.displayName.")]
#: ``--context`` of a command given a member's kubeconfig (``register``, ``manager grants``,
#: ``agent run``).
MemberContext = Annotated[str | None, typer.Option(help="Context of the member kubeconfig.")]

"""``cluster-inventory manager accept``, ``reject`` and ``bootstrap-kubeconfig``: pull-mode members.

The hub admin's side of a member agent's join (``docs/agent.md``): accept or reject a member,
and issue the expiring bootstrap credential its agent joins with. Registered on
:data:`cluster_inventory.cli.manager.manager_app`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from cluster_inventory.api.constants import AGENT_BOOTSTRAP_GROUP
from cluster_inventory.cli._errors import fail
from cluster_inventory.cli._hub import HUB_KUBECONFIG_HELP, hub_client
from cluster_inventory.manager.rules.names import DEFAULT_NAMESPACE

__all__ = ["manager_accept", "manager_bootstrap_kubeconfig", "manager_reject"]


def manager_accept(
    name: Annotated[str, typer.Argument(help="Member name (becomes the ClusterProfile name).")],
    clusterset: Annotated[
        list[str], typer.Option("--clusterset", help="Cluster set to join (repeatable).")
    ],
    display_name: Annotated[str | None, typer.Option(help="spec.displayName.")] = None,
    hub_kubeconfig: Annotated[Path | None, typer.Option(help=HUB_KUBECONFIG_HELP)] = None,
    hub_context: Annotated[str | None, typer.Option(help="Hub kubeconfig context.")] = None,
    namespace: Annotated[
        str, typer.Option("--namespace", "-n", help="The manager's namespace on the hub.")
    ] = DEFAULT_NAMESPACE,
    lease_duration: Annotated[
        int,
        typer.Option(
            min=1,
            help="leaseDurationSeconds of its heartbeat Lease until the agent renews it: the "
            "manager's --agent-lease-duration (docs/agent.md).",
        ),
    ] = 60,
) -> None:
    """Accept a pull-mode member: its agent may join (its CSRs are approved) and report.

    Writes the agent-mode registration Secret, the Role and RoleBinding of the agent's
    identity, and the Lease, MemberReport and credential Secret it writes to
    (docs/agent.md). Idempotent.
    """
    from cluster_inventory import kube
    from cluster_inventory.manager import RegistrationError
    from cluster_inventory.manager.admin.agents import accept, agent_objects

    try:
        agent_objects(namespace, name, clusterset, display_name=display_name)
    except RegistrationError as exc:
        fail(str(exc))

    async def run() -> None:
        async with await hub_client(hub_kubeconfig, hub_context) as hub:
            await accept(
                hub,
                namespace,
                name,
                clusterset,
                display_name=display_name,
                lease_duration=lease_duration,
            )

    try:
        asyncio.run(run())
    except (kube.KubeError, RegistrationError) as exc:
        fail(str(exc))
    typer.echo(f"member {name} accepted in {namespace} (cluster sets: {', '.join(clusterset)})")


def manager_reject(
    name: Annotated[str, typer.Argument(help="Member name.")],
    hub_kubeconfig: Annotated[Path | None, typer.Option(help=HUB_KUBECONFIG_HELP)] = None,
    hub_context: Annotated[str | None, typer.Option(help="Hub kubeconfig context.")] = None,
    namespace: Annotated[
        str, typer.Option("--namespace", "-n", help="The manager's namespace on the hub.")
    ] = DEFAULT_NAMESPACE,
) -> None:
    """Reject a pull-mode member: delete its registration, RBAC, Lease, report, credential.

    Its agent's certificate authorises nothing from then on, however long it is valid.
    """
    from cluster_inventory import kube
    from cluster_inventory.manager import RegistrationError
    from cluster_inventory.manager.admin.agents import reject

    async def run() -> list[str]:
        async with await hub_client(hub_kubeconfig, hub_context) as hub:
            return await reject(hub, namespace, name)

    try:
        deleted = asyncio.run(run())
    except (kube.KubeError, RegistrationError) as exc:
        fail(str(exc))
    if not deleted:
        fail(f"no agent member {name} in {namespace}")
    for what in deleted:
        typer.echo(f"deleted {what}")
    typer.echo(f"member {name} rejected")


def manager_bootstrap_kubeconfig(
    holder: Annotated[
        str, typer.Argument(help="Who gets it (a DNS-1123 label, e.g. the site): in its CN.")
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Write the kubeconfig here (mode 0600).")
    ],
    expiration: Annotated[
        int, typer.Option(help="Seconds the credential is valid (at least 600).", min=600)
    ] = 3600,
    group: Annotated[
        str, typer.Option(help="The bootstrap group the cluster manager trusts.")
    ] = AGENT_BOOTSTRAP_GROUP,
    hub_kubeconfig: Annotated[Path | None, typer.Option(help=HUB_KUBECONFIG_HELP)] = None,
    hub_context: Annotated[str | None, typer.Option(help="Hub kubeconfig context.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the hub's signer.")] = 60.0,
) -> None:
    """Issue an expiring bootstrap kubeconfig for member agents (docs/agent.md, "Joining").

    A client certificate from the hub's kube-apiserver-client signer, in the bootstrap group:
    it can only ask for an accepted member's agent certificate, and the hub refuses it once
    --expiration seconds have passed. Approved with your own rights.
    """
    from cluster_inventory import kube
    from cluster_inventory.api.agents import AgentNameError
    from cluster_inventory.cli._files import write_private
    from cluster_inventory.kube.certificates import CertificateRequestError
    from cluster_inventory.manager.admin.agent_bootstrap import (
        bootstrap_csr,
        issue_bootstrap_kubeconfig,
    )

    try:
        bootstrap_csr(holder, b"", expiration_seconds=expiration, group=group)
    except (AgentNameError, ValueError) as exc:
        fail(str(exc))

    async def run() -> Any:
        connection = kube.load_connection(hub_kubeconfig, context=hub_context)
        async with await hub_client(hub_kubeconfig, hub_context) as hub:
            return await issue_bootstrap_kubeconfig(
                hub,
                connection,
                holder,
                expiration_seconds=expiration,
                group=group,
                timeout=timeout,
            )

    try:
        issued = asyncio.run(run())
        write_private(output, json.dumps(issued.kubeconfig, indent=2) + "\n")
    except (kube.KubeError, CertificateRequestError, OSError) as exc:
        fail(str(exc))
    typer.echo(
        f"wrote {output}: {issued.user} (group {', '.join(issued.groups)}), "
        f"valid until {issued.expires.isoformat()} (CSR {issued.csr})"
    )

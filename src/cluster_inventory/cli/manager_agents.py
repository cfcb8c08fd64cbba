"""``cluster-inventory manager accept``, ``reject``, ``bootstrap-kubeconfig``, ``agents``.

The hub admin's side of a pull-mode member's join (``docs/agent.md``): accept or reject a
member, issue the expiring bootstrap credential its agent joins with (bound to the member's
current acceptance; it prints the ``agent run`` line to hand over), and see each agent
member's state. Every input is checked before anything is written. Registered on
:data:`cluster_inventory.cli.manager.manager_app`.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from cluster_inventory._clock import utcnow
from cluster_inventory.cli import _options as opt
from cluster_inventory.cli._errors import fail, run_or_fail
from cluster_inventory.cli._hub import hub_client
from cluster_inventory.manager.rules.names import DEFAULT_NAMESPACE

__all__ = ["manager_accept", "manager_agents", "manager_bootstrap_kubeconfig", "manager_reject"]

#: ``--namespace``/``-n`` of every command here.
_Namespace = Annotated[
    str,
    typer.Option("--namespace", "-n", help="The manager's namespace on the hub (it must exist)."),
]


def manager_accept(
    name: opt.MemberName,
    clusterset: opt.Clustersets,
    display_name: opt.DisplayName = None,
    hub_kubeconfig: opt.HubKubeconfig = None,
    hub_context: opt.HubContext = None,
    namespace: _Namespace = DEFAULT_NAMESPACE,
    lease_duration: Annotated[
        int,
        typer.Option(
            min=1,
            help="leaseDurationSeconds of its heartbeat Lease until the agent renews it: the "
            "manager's --agent-lease-duration (docs/agent.md).",
        ),
    ] = 60,
) -> None:
    """Accept a pull-mode member: a new acceptance its agent joins and reports under.

    Writes the agent-mode registration Secret (with the acceptance id), the RBAC of the
    acceptance's identities (its Lease, MemberReport and credential Secret; its one CSR),
    and those three objects (docs/agent.md). Idempotent: accepting again keeps the
    acceptance. Next, `manager bootstrap-kubeconfig --member NAME` issues its agent's
    bootstrap credential.
    """
    from cluster_inventory import kube
    from cluster_inventory.manager import RegistrationError
    from cluster_inventory.manager.admin.agents import Acceptance, accept, agent_objects

    try:
        agent_objects(
            Acceptance(namespace, name, "a" * 16),
            clusterset,
            display_name=display_name,
            lease_duration=lease_duration,
        )
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
    name: opt.RegisteredMember,
    hub_kubeconfig: opt.HubKubeconfig = None,
    hub_context: opt.HubContext = None,
    namespace: _Namespace = DEFAULT_NAMESPACE,
) -> None:
    """Reject a pull-mode member: delete its registration, RBAC, Lease, report, credential.

    No certificate issued for its acceptance (the agent's, its bootstrap credential)
    authorises anything from then on, CSRs included, however long it is valid; accepting
    the name again is a new acceptance none of them carries into.
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


def _check_output(output: Path) -> None:
    """The bootstrap kubeconfig's file can be written (checked before anything is issued)."""
    parent = output.parent if str(output.parent) else Path(".")
    if output.is_dir():
        fail(f"--output: {output} is a directory")
    if not parent.is_dir():
        fail(f"--output: {parent} is not a directory")
    if not os.access(parent, os.W_OK) or (output.exists() and not os.access(output, os.W_OK)):
        fail(f"--output: {output} cannot be written")


def manager_bootstrap_kubeconfig(
    member: Annotated[
        str, typer.Option("--member", help="The accepted member whose agent joins with it.")
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Write the kubeconfig here (mode 0600).")
    ],
    expiration: Annotated[
        int, typer.Option(help="Seconds the credential is valid (at least 600).", min=600)
    ] = 3600,
    namespace: _Namespace = DEFAULT_NAMESPACE,
    hub_kubeconfig: opt.HubKubeconfig = None,
    hub_context: opt.HubContext = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the hub's signer.")] = 60.0,
) -> None:
    """Issue member NAME's expiring bootstrap kubeconfig and print its `agent run` command.

    A client certificate from the hub's kube-apiserver-client signer for the member's
    current acceptance (accept it first): it can only ask for that member's agent
    certificate, once, and the hub refuses it once --expiration seconds have passed or the
    member is rejected. Approved with your own rights (docs/agent.md, "Joining").
    """
    from cluster_inventory import kube
    from cluster_inventory.api.agents import AgentNameError
    from cluster_inventory.cli._files import write_private
    from cluster_inventory.cli.agent import DEFAULT_STATE_DIR
    from cluster_inventory.kube.certificates import CertificateRequestError
    from cluster_inventory.manager import RegistrationError
    from cluster_inventory.manager.admin.agent_bootstrap import (
        agent_run_command,
        bootstrap_csr,
        issue_bootstrap_kubeconfig,
    )
    from cluster_inventory.manager.admin.agents import current_acceptance

    try:
        bootstrap_csr(member, b"", expiration_seconds=expiration)
    except (AgentNameError, ValueError) as exc:
        fail(str(exc))
    _check_output(output)

    async def run() -> Any:
        connection = kube.load_connection(hub_kubeconfig, context=hub_context)
        async with await hub_client(hub_kubeconfig, hub_context) as hub:
            acceptance = await current_acceptance(hub, namespace, member)
            if acceptance is None:
                raise RegistrationError(
                    f"Secret {namespace}/{member}",
                    "metadata.annotations",
                    f"member {member} is not accepted in {namespace}: a bootstrap credential "
                    f"joins one acceptance; `cluster-inventory manager accept {member} "
                    "--clusterset SET` first",
                    member=member,
                )
            return await issue_bootstrap_kubeconfig(
                hub, connection, acceptance, expiration_seconds=expiration, timeout=timeout
            )

    try:
        issued = asyncio.run(run())
        write_private(output, json.dumps(issued.kubeconfig, indent=2) + "\n")
    except (kube.KubeError, CertificateRequestError, RegistrationError, OSError) as exc:
        fail(str(exc))
    typer.echo(
        f"wrote {output}: {issued.user} (member {member}'s current acceptance), "
        f"valid until {issued.expires.isoformat()} (CSR {issued.csr})"
    )
    command = agent_run_command(
        member, str(output), namespace=namespace, default_namespace=DEFAULT_NAMESPACE
    )
    typer.echo(
        f"hand {output} to the member's owner, who runs on the member (its own kubeconfig: "
        f"--kubeconfig; its state, default {DEFAULT_STATE_DIR}: --state-dir):\n  {command}"
    )


def manager_agents(
    hub_kubeconfig: opt.HubKubeconfig = None,
    hub_context: opt.HubContext = None,
    namespace: _Namespace = DEFAULT_NAMESPACE,
) -> None:
    """Each agent member: accepted, joined, available, lease age, pending and refused CSRs.

    Read from the hub (docs/agent.md, "Seeing the agents"): its registration, heartbeat
    Lease and MemberReport, the CSRs pending for it, and why the cluster manager refused its
    identities' CSRs (its Warning Events, kept about an hour). AVAILABLE is the report's
    apiServerHealth while the Lease is fresh (5 lease durations, the manager's default).
    """
    from cluster_inventory import kube
    from cluster_inventory.api.constants import LABEL_AGENT, LABEL_REGISTRATION
    from cluster_inventory.cli._table import age, format_table
    from cluster_inventory.manager.rules.agent_status import agent_statuses

    async def run() -> list[Any]:
        async with await hub_client(hub_kubeconfig, hub_context) as hub:
            registrations, leases, reports, csrs, events = await asyncio.gather(
                kube.list_objects(
                    hub, kube.SECRETS, namespace, label_selector=f"{LABEL_REGISTRATION}=true"
                ),
                kube.list_objects(hub, kube.LEASES, namespace, label_selector=LABEL_AGENT),
                kube.list_objects(hub, kube.MEMBER_REPORTS, namespace),
                kube.list_objects(hub, kube.CERTIFICATE_SIGNING_REQUESTS),
                kube.list_objects(hub, kube.EVENTS, namespace, field_selector="type=Warning"),
            )
        return agent_statuses(
            registrations["items"],
            leases["items"],
            reports["items"],
            csrs["items"],
            events["items"],
            utcnow(),
        )

    statuses = run_or_fail(run())
    if not statuses:
        typer.echo(f"no agent member in {namespace}")
        return
    rows = [
        [
            s.name,
            age(s.accepted),
            "yes" if s.joined else "no",
            s.available,
            age(s.renewed) if s.renewed else "-",
            str(len(s.pending)),
            f"{s.refused[0].reason} ({age(s.refused[0].time)} ago)" if s.refused else "-",
        ]
        for s in statuses
    ]
    headers = ["NAME", "ACCEPTED", "JOINED", "AVAILABLE", "LEASE AGE", "PENDING CSRS", "REFUSED"]
    typer.echo(format_table(headers, rows), nl=False)
    refusals = [[s.name, r.csr, r.reason, age(r.time), r.why] for s in statuses for r in s.refused]
    if refusals:
        typer.echo("\nrefused CSRs (the cluster manager's Warning Events, newest first):")
        why = ["MEMBER", "CSR", "REASON", "AGE", "WHY"]
        typer.echo(format_table(why, refusals), nl=False)

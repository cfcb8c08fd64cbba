"""``cluster-inventory agent run``: the member agent's side (``docs/agent.md``).

Runs on a member the hub cannot reach: reports the member to the hub (its MemberReport) and
renews its heartbeat Lease there (and, with ``--consumer-service-account``, keeps its
consumers' token in its credential Secret there), until SIGTERM. Its hub identity is either given
(``--hub-kubeconfig``) or its own, got and rotated by the agent (``--bootstrap-kubeconfig``
and ``--state-dir``: a CSR the cluster manager approves once the member is accepted).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cluster_inventory._textfile import UnreadableFileError, read_text
from cluster_inventory.cli import _options as opt
from cluster_inventory.cli._errors import fail
from cluster_inventory.cli._process import run_until_signal
from cluster_inventory.manager.names import DEFAULT_NAMESPACE

__all__ = ["DEFAULT_STATE_DIR", "agent_app"]

#: Where an agent that joins by itself keeps its key, certificate and kubeconfig (in a pod:
#: a volume that outlives a restart, so a restarted agent needs no new certificate).
DEFAULT_STATE_DIR = Path("/var/lib/cluster-inventory-agent")

agent_app = typer.Typer(
    help="The member agent (runs on a member the hub cannot reach).", no_args_is_help=True
)


@agent_app.command("run")
def agent_run(
    name: Annotated[
        str, typer.Option(help="The member's name (its Lease and MemberReport on the hub).")
    ],
    hub_kubeconfig: Annotated[
        Path | None,
        typer.Option(help="Kubeconfig of the agent's identity on the hub, when it is given."),
    ] = None,
    bootstrap_kubeconfig: Annotated[
        Path | None,
        typer.Option(
            help="Kubeconfig of the hub's bootstrap credential: the agent joins by itself "
            "and keeps its own identity in --state-dir."
        ),
    ] = None,
    state_dir: Annotated[
        Path,
        typer.Option(help="Where the agent keeps its key (0600), certificate and kubeconfig."),
    ] = DEFAULT_STATE_DIR,
    hub_context: Annotated[
        str | None, typer.Option(help="Context of the hub (or bootstrap) kubeconfig.")
    ] = None,
    kubeconfig: Annotated[
        Path | None,
        typer.Option(
            help="The member's kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)."
        ),
    ] = None,
    context: Annotated[str | None, typer.Option(help="Context of the member kubeconfig.")] = None,
    namespace: Annotated[
        str, typer.Option("--namespace", "-n", help="The cluster manager's namespace on the hub.")
    ] = DEFAULT_NAMESPACE,
    server: Annotated[
        str | None, typer.Option(help="API server URL the member advertises to consumers.")
    ] = None,
    ca_file: Annotated[
        Path | None, typer.Option(help="PEM CA bundle of that server (advertised with it).")
    ] = None,
    proxy_url: Annotated[
        str | None, typer.Option(help="Proxy consumers must use to reach that server.")
    ] = None,
    lease_duration: Annotated[
        float, typer.Option(help="Heartbeat Lease duration, s (renewed every duration ±25%).")
    ] = 60.0,
    probe_interval: Annotated[
        float, typer.Option(help="Seconds between probes of the member's /readyz.")
    ] = 30.0,
    consumer_service_account: Annotated[
        str | None,
        typer.Option(
            help="NAMESPACE/NAME of the member ServiceAccount whose token the agent mints and "
            "keeps on the hub for the member's consumers (unset: none is kept)."
        ),
    ] = None,
    consumer_token_lifetime: Annotated[
        int, typer.Option(help="Lifetime of that token, s (at least 600; renewed at 75-80%).")
    ] = 3600,
    metrics_bind_address: opt.MetricsAddress = "0",
    health_probe_bind_address: opt.HealthAddress = "0",
    log_format: opt.LogFormat = "text",
) -> None:
    """Report this member to the hub until SIGTERM: its MemberReport and its heartbeat Lease.

    Exactly one of ``--hub-kubeconfig`` (a given identity) and ``--bootstrap-kubeconfig``
    (join: reuse the identity in ``--state-dir``, else ask for one and wait until the hub's
    admin accepts the member with ``cluster-inventory manager accept NAME``). With a given
    identity, a member not accepted stops the agent at once, saying so.
    """
    from cluster_inventory import credentials, kube
    from cluster_inventory.agent import (
        HUB_KEEPALIVE_SECONDS,
        HubIdentity,
        IdentityStore,
        JoinError,
        ReportingAgent,
        ReportingConfig,
        parse_service_account,
    )
    from cluster_inventory.cli._logging import configure_logging
    from cluster_inventory.controller import Manager
    from cluster_inventory.kube.endpoints import parse_bind_address

    if (hub_kubeconfig is None) == (bootstrap_kubeconfig is None):
        fail("give exactly one of --hub-kubeconfig and --bootstrap-kubeconfig")
    ca_pem = None
    try:
        if ca_file is not None:
            ca_pem = read_text(ca_file).encode()
            if b"-----BEGIN CERTIFICATE-----" not in ca_pem:
                fail(f"{ca_file}: --ca-file holds no PEM certificate")
        config = ReportingConfig(
            name=name,
            namespace=namespace,
            server=server,
            ca_pem=ca_pem,
            proxy_url=proxy_url,
            lease_duration=lease_duration,
            probe_interval=probe_interval,
            consumer_service_account=(
                parse_service_account(consumer_service_account)
                if consumer_service_account
                else None
            ),
            consumer_token_lifetime=consumer_token_lifetime,
        )
        health = parse_bind_address(health_probe_bind_address)
        metrics = parse_bind_address(metrics_bind_address)
        hub = kube.load_connection(hub_kubeconfig or bootstrap_kubeconfig, context=hub_context)
        member = kube.load_connection(kubeconfig, context=context)
        joining = None
        if bootstrap_kubeconfig is not None:
            joining = HubIdentity(hub, name, IdentityStore(state_dir))
        configure_logging(log_format)  # last: a refused flag leaves the process's logging be
    except (UnreadableFileError, ValueError, kube.KubeError) as exc:
        fail(str(exc))
    if joining is None:
        given = hub

        async def run_given() -> bool:
            # Opened here to keep its connection between renewals (HUB_KEEPALIVE_SECONDS).
            async with await credentials.hub_client(
                given, keepalive_timeout=HUB_KEEPALIVE_SECONDS
            ) as client:
                manager = Manager(client, health=health, metrics=metrics)
                manager.add(ReportingAgent(client, member, config))
                return await manager.run(handle_signals=True)

        run_until_signal(run_given)
        return
    identity = joining

    async def run_joining() -> bool:
        # The Manager takes a client made here: one whose TLS takes each new certificate.
        async with await identity.client() as client:
            manager = Manager(client, health=health, metrics=metrics)
            manager.add(ReportingAgent(client, member, config, identity=identity))
            try:
                return await manager.run(handle_signals=True)
            except JoinError as exc:  # denied, failed or deleted CSR: one line, exit 1
                fail(f"the hub did not issue the agent's certificate: {exc}")

    run_until_signal(run_joining)

"""``cluster-inventory agent run``: the member agent's side (``docs/agent.md``).

Runs on a member the hub cannot reach: reports the member to the hub (its MemberReport) and
renews its heartbeat Lease there, until SIGTERM. The hub identity is a kubeconfig for now;
the join (a CSR approved by the cluster manager) will provide it.
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

__all__ = ["agent_app"]

agent_app = typer.Typer(
    help="The member agent (runs on a member the hub cannot reach).", no_args_is_help=True
)


@agent_app.command("run")
def agent_run(
    name: Annotated[
        str, typer.Option(help="The member's name (its Lease and MemberReport on the hub).")
    ],
    hub_kubeconfig: Annotated[
        Path, typer.Option(help="Kubeconfig of the agent's identity on the hub.")
    ],
    hub_context: Annotated[str | None, typer.Option(help="Context of the hub kubeconfig.")] = None,
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
    metrics_bind_address: opt.MetricsAddress = "0",
    health_probe_bind_address: opt.HealthAddress = "0",
    log_format: opt.LogFormat = "text",
) -> None:
    """Report this member to the hub until SIGTERM: its MemberReport and its heartbeat Lease.

    The hub's admin accepts the member first (``cluster-inventory manager accept NAME``);
    until then the agent stops at once, saying so.
    """
    from cluster_inventory import kube
    from cluster_inventory.agent import ReportingAgent, ReportingConfig
    from cluster_inventory.cli._logging import configure_logging
    from cluster_inventory.controller import Manager
    from cluster_inventory.kube.endpoints import parse_bind_address

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
        )
        health = parse_bind_address(health_probe_bind_address)
        metrics = parse_bind_address(metrics_bind_address)
        hub = kube.load_connection(hub_kubeconfig, context=hub_context)
        member = kube.load_connection(kubeconfig, context=context)
        configure_logging(log_format)  # last: a refused flag leaves the process's logging be
    except (UnreadableFileError, ValueError, kube.KubeError) as exc:
        fail(str(exc))
    manager = Manager(hub, health=health, metrics=metrics)
    manager.add(lambda client: ReportingAgent(client, member, config))
    run_until_signal(manager)

"""``cluster-inventory dashboard``: serve the read-only inventory page until SIGTERM or SIGINT.

Only flag parsing lives here: the page (:mod:`cluster_inventory.dashboard`) runs as a
runnable of a controller Manager, which owns the hub client, the probes, metrics and
signals. The hub is found by kubectl's rules (``--kubeconfig``, every ``$KUBECONFIG``
path, in-cluster, ``~/.kube/config``) through the one loader every command uses, so the
page shows what the viewer's own identity may read.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from cluster_inventory.cli import _options as opt
from cluster_inventory.cli._errors import fail
from cluster_inventory.cli._process import hub_process, run_until_signal

__all__ = ["dashboard_cmd"]


def dashboard_cmd(
    namespace: Annotated[
        list[str] | None,
        typer.Option(
            "--namespace",
            "-n",
            help="Inventory namespace to show (repeatable; default: every namespace).",
        ),
    ] = None,
    address: Annotated[
        str,
        typer.Option(
            help="HOST:PORT to listen on (127.0.0.1 keeps the page on this machine; "
            "port 0 picks a free one)."
        ),
    ] = "127.0.0.1:8080",
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            help="Host name the page answers for (repeatable; checked against the Host "
            "header, 421 otherwise). Loopback names always work on a loopback address; "
            "beyond loopback, without this option any name is answered (a warning says so)."
        ),
    ] = None,
    argocd_namespace: Annotated[
        str, typer.Option(help="Where the Argo CD sync writes cluster Secrets.")
    ] = "argocd",
    prometheus: Annotated[
        str | None,
        typer.Option(
            "--prometheus",
            metavar="URL",
            help="Prometheus's base URL: each member's page shows its availability over 1h, "
            "1d, 7d and 30d and its outages, from the series the cluster manager exports "
            "(a user:password@ in it is sent as basic authentication, never shown).",
        ),
    ] = None,
    kubeconfig: opt.HubKubeconfig = None,
    context: opt.HubContext = None,
    metrics_bind_address: opt.MetricsAddress = "0",
    health_probe_bind_address: opt.HealthAddress = "0",
    log_format: opt.LogFormat = "text",
) -> None:
    """Serve a read-only web page of the inventory, live from the hub.

    Inventories with counts, health, Kubernetes versions and conformance; every member
    cluster once (with its conditions, properties and labels, filterable and sortable);
    placements with the clusters they chose and why the others were left out; Argo CD and
    MultiKueue delivery; with --prometheus, each member's availability over time.
    Changes on the hub show without a reload. Reads only (get, list,
    watch); never a token, key or Secret value. The page itself also answers /healthz and
    /readyz; the separate probe and metrics endpoints are off unless given (the chart's
    Deployment gives both).
    """
    from cluster_inventory.dashboard import Dashboard, HubState, parse_address
    from cluster_inventory.dashboard.availability import PrometheusAvailability
    from cluster_inventory.integrations.availability import PrometheusError

    try:  # a bad flag is said before the hub is read
        store = PrometheusAvailability(prometheus) if prometheus else None
    except PrometheusError as exc:
        fail(str(exc))
    process = hub_process(
        kubeconfig,
        context,
        endpoints=(health_probe_bind_address, metrics_bind_address),
        log_format=log_format,
        lease=None,  # read-only: every replica serves
    )
    try:
        listen = parse_address(address)
    except ValueError as exc:
        fail(str(exc))

    def announce(url: str) -> None:
        typer.echo(f"dashboard: {url}")
        sys.stdout.flush()

    manager = process.manager().add(
        lambda hub: Dashboard(
            HubState(hub, namespace or (), argocd_namespace=argocd_namespace),
            address=listen,
            announce=announce,
            allowed_hosts=allowed_host or (),
            availability=store,
        )
    )
    run_until_signal(manager)

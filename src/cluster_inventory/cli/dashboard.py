"""``cluster-inventory dashboard``: serve the read-only inventory page until SIGTERM or SIGINT.

Only flag parsing lives here; the page is :mod:`cluster_inventory.dashboard`. The hub is
found by kubectl's rules (``--kubeconfig``, every ``$KUBECONFIG`` path, in-cluster,
``~/.kube/config``) through the one loader every command uses, so the page shows what the
viewer's own identity may read.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import typer

from cluster_inventory.cli._get import HUB_KUBECONFIG_HELP, fail, hub_client
from cluster_inventory.cli._process import run_until_signal

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
    argocd_namespace: Annotated[
        str, typer.Option(help="Where the Argo CD sync writes cluster Secrets.")
    ] = "argocd",
    kubeconfig: Annotated[Path | None, typer.Option(help=HUB_KUBECONFIG_HELP)] = None,
    context: Annotated[str | None, typer.Option(help="Hub kubeconfig context.")] = None,
    metrics_bind_address: Annotated[
        str, typer.Option(help="[host]:port of /metrics, or 0 for none.")
    ] = "0",
    health_probe_bind_address: Annotated[
        str, typer.Option(help="[host]:port of /healthz and /readyz, or 0 for none.")
    ] = "0",
    log_format: Annotated[str, typer.Option(help="text or json.")] = "text",
) -> None:
    """Serve a read-only web page of the inventory, live from the hub.

    Inventories with counts, health, Kubernetes versions and conformance; every member
    cluster once (with its conditions, properties and labels, filterable and sortable);
    placements with the clusters they chose and why the others were left out; Argo CD and
    MultiKueue delivery. Changes on the hub show without a reload. Reads only (get, list,
    watch); never a token, key or Secret value. The page itself also answers /healthz and
    /readyz; the separate probe and metrics endpoints are off unless given (the chart's
    Deployment gives both).
    """
    from cluster_inventory.cli._logging import configure_logging
    from cluster_inventory.dashboard import Dashboard, HubState, parse_address
    from cluster_inventory.kube.endpoints import parse_bind_address, serve_endpoints

    configure_logging(log_format)
    try:
        host, port = parse_address(address)
        health = parse_bind_address(health_probe_bind_address)
        metrics = parse_bind_address(metrics_bind_address)
    except ValueError as exc:
        fail(str(exc))

    async def main() -> bool:
        async with await hub_client(kubeconfig, context) as client:
            state = HubState(client, namespace or (), argocd_namespace=argocd_namespace)
            async with (
                serve_endpoints(lambda: state.synced, health=health, metrics=metrics),
                Dashboard(state).serve(host, port) as url,
            ):
                typer.echo(f"dashboard: {url}")
                sys.stdout.flush()
                await asyncio.Event().wait()
        return False

    run_until_signal(main)

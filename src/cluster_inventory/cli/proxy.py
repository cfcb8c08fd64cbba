"""``cluster-inventory proxy run``: the hub's cluster proxy until SIGTERM or SIGINT.

Only flag parsing lives here: the proxy (:mod:`cluster_inventory.proxy`) runs as a runnable
of a controller Manager, which owns the hub client, the probes, metrics and signals. Every
replica serves (no leader election): agents keep a tunnel to each (``docs/cluster-proxy.md``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from cluster_inventory._textfile import UnreadableFileError, read_text
from cluster_inventory.cli import _options as opt
from cluster_inventory.cli._errors import fail
from cluster_inventory.cli._process import hub_process, run_until_signal
from cluster_inventory.manager.rules.names import DEFAULT_NAMESPACE

__all__ = ["proxy_app"]

proxy_app = typer.Typer(
    help="The cluster proxy (consumers reach agent members through their tunnels).",
    no_args_is_help=True,
)


def _address(flag: str, value: str) -> tuple[str, int]:
    from cluster_inventory.kube.endpoints import parse_bind_address

    try:
        parsed = parse_bind_address(value)
    except ValueError as exc:
        fail(f"{flag}: {exc}")
    if parsed is None:
        fail(f"{flag}: {value!r} turns the listener off; the proxy needs it")
    return parsed


@proxy_app.command("run")
def proxy_run(
    tunnel_bind_address: Annotated[
        str, typer.Option(help="[host]:port of the agents' TLS tunnel endpoint (wss).")
    ] = ":8443",
    connect_bind_address: Annotated[
        str,
        typer.Option(help="[host]:port of the consumers' HTTP CONNECT listener (proxy-url)."),
    ] = ":8090",
    tls_cert_file: Annotated[
        Path, typer.Option(help="PEM serving certificate (chain) of the tunnel endpoint.")
    ] = Path("tls.crt"),
    tls_key_file: Annotated[Path, typer.Option(help="Its PEM private key.")] = Path("tls.key"),
    client_ca_file: Annotated[
        Path | None,
        typer.Option(
            help="PEM CA agents' client certificates are verified with (default: the hub's, "
            "from kube-system/extension-apiserver-authentication)."
        ),
    ] = None,
    namespace: Annotated[
        str, typer.Option("--namespace", "-n", help="The cluster manager's namespace on the hub.")
    ] = DEFAULT_NAMESPACE,
    server_count: Annotated[
        int,
        typer.Option(help="Replicas of the proxy (announced: each agent keeps a tunnel to each)."),
    ] = 1,
    server_id: Annotated[
        str | None, typer.Option(help="This replica's id (default: $POD_NAME, else random).")
    ] = None,
    recheck_interval: Annotated[
        float,
        typer.Option(help="Seconds between re-checks of every tunnel's agent with the hub."),
    ] = 300.0,
    kubeconfig: opt.HubKubeconfig = None,
    context: opt.HubContext = None,
    metrics_bind_address: opt.MetricsAddress = "0",
    health_probe_bind_address: opt.HealthAddress = "0",
    log_format: opt.LogFormat = "text",
) -> None:
    """Carry consumers' connections to agent members through the agents' tunnels.

    Agents (`agent run --proxy-server wss://...`) dial the tunnel endpoint with their hub
    identity; the hub decides which member each may serve (a SubjectAccessReview on its
    Lease). Consumers CONNECT to MEMBER:443 on the CONNECT listener and speak TLS end to
    end with the member's API server: the proxy never sees their credential.
    """
    import os
    import secrets

    from cluster_inventory.proxy import ClusterProxy, ProxyConfig

    tunnel = _address("--tunnel-bind-address", tunnel_bind_address)
    connect = _address("--connect-bind-address", connect_bind_address)
    for flag, path in (("--tls-cert-file", tls_cert_file), ("--tls-key-file", tls_key_file)):
        if not path.is_file():
            fail(f"{flag}: {path} is not a readable file")
    client_ca = None
    if client_ca_file is not None:
        try:
            client_ca = read_text(client_ca_file).encode()
        except UnreadableFileError as exc:
            fail(f"--client-ca-file: {exc}")
    try:
        config = ProxyConfig(
            namespace=namespace,
            tunnel_address=tunnel,
            connect_address=connect,
            tls_cert_file=tls_cert_file,
            tls_key_file=tls_key_file,
            client_ca_pem=client_ca,
            server_id=server_id or os.environ.get("POD_NAME") or secrets.token_hex(8),
            server_count=server_count,
            recheck_interval=recheck_interval,
        )
    except ValueError as exc:
        fail(str(exc))
    process = hub_process(
        kubeconfig,
        context,
        endpoints=(health_probe_bind_address, metrics_bind_address),
        log_format=log_format,
        lease=None,  # every replica serves
    )
    manager = process.manager()
    manager.add(lambda hub: ClusterProxy(hub, config, registry=manager.registry))
    sys.stdout.flush()
    run_until_signal(manager)

"""``cluster-inventory argocd ...`` and ``cluster-inventory multikueue ...``.

``sync`` runs the controller as a process (leader election on a Lease, ``/healthz``
``/readyz`` and ``/metrics``, until SIGTERM), ``argocd render`` prints the Secret one
profile yields and ``multikueue config`` the Kueue Configuration fragment, both without
writing anything. Only typer and the standard library load with this module; the
integrations are imported inside the commands.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from cluster_inventory.api.constants import DEFAULT_SYNC_INSTANCE
from cluster_inventory.cli import _options as opt
from cluster_inventory.cli._errors import fail, run_or_fail
from cluster_inventory.cli._hub import context_namespace, hub_client
from cluster_inventory.cli._process import hub_process, run_until_signal

__all__ = ["argocd_app", "multikueue_app"]

argocd_app = typer.Typer(
    help="Argo CD cluster Secrets kept from ClusterProfiles (Argo CD >= 3.5 exec providers).",
    no_args_is_help=True,
)
multikueue_app = typer.Typer(
    help="Kueue MultiKueueClusters kept from ClusterProfiles, and Kueue's configuration.",
    no_args_is_help=True,
)

_ProviderFile = Annotated[
    Path,
    typer.Option(
        "--provider-file",
        help="The consumer's provider file (KEP-5339 JSON): which exec plugin serves which "
        "access provider.",
    ),
]
_Selector = Annotated[
    str | None, typer.Option("--selector", "-l", help="Only profiles with these labels.")
]
_Workers = Annotated[int, typer.Option(min=1, help="Objects reconciled at once.")]
_Output = Annotated[str, typer.Option("--output", "-o", help="yaml or json.")]
_Name = Annotated[
    str | None,
    typer.Option(
        "--name",
        help="This sync instance's name: the objects it writes carry it (label "
        "cluster-inventory.dev/sync-instance), it never updates or deletes another "
        "instance's, and it elects its leader on its own Lease.",
    ),
]


def _instance(name: str) -> str:
    from cluster_inventory.integrations.sync import validate_instance

    try:
        return validate_instance(name)
    except ValueError as exc:
        fail(f"--name: {exc}")


def _dump(doc: Any, output: str) -> None:
    if output == "json":
        typer.echo(json.dumps(doc, indent=2))
    elif output == "yaml":
        import yaml

        typer.echo(yaml.safe_dump(doc, sort_keys=False), nl=False)
    else:
        fail(f"unknown output format {output!r}; use yaml or json")


def _providers(path: Path) -> Any:
    from cluster_inventory.credentials import ProviderConfigError, load_provider_file

    try:
        return load_provider_file(path)
    except ProviderConfigError as exc:
        fail(str(exc))


@argocd_app.command("sync")
def argocd_sync(
    provider_file: _ProviderFile,
    namespace: Annotated[
        list[str],
        typer.Option(
            "--namespace",
            "-n",
            help="Inventory namespace (repeatable; the first wins when one member is in several).",
        ),
    ],
    argocd_namespace: Annotated[
        str, typer.Option(help="Argo CD's namespace (it reads cluster Secrets only there).")
    ] = "argocd",
    selector: _Selector = None,
    kubeconfig: opt.HubKubeconfig = None,
    context: opt.HubContext = None,
    leader_elect: opt.LeaderElect = True,
    lease_namespace: Annotated[
        str | None, typer.Option(help="Namespace of the Lease (default: Argo CD's).")
    ] = None,
    workers: _Workers = 4,
    metrics_bind_address: opt.MetricsAddress = ":8080",
    health_probe_bind_address: opt.HealthAddress = ":8081",
    log_format: opt.LogFormat = "text",
    name: _Name = None,
) -> None:
    """Keep one Argo CD cluster Secret per ClusterProfile until SIGTERM.

    --name defaults to "default".
    """
    from cluster_inventory.integrations.sync import instance_lease_name
    from cluster_inventory.integrations.sync.argocd import LEASE_NAME, ArgoCDSync

    instance = _instance(name or DEFAULT_SYNC_INSTANCE)
    providers = _providers(provider_file)
    lease = (lease_namespace or argocd_namespace, instance_lease_name(LEASE_NAME, instance))
    process = hub_process(
        kubeconfig,
        context,
        endpoints=(health_probe_bind_address, metrics_bind_address),
        log_format=log_format,
        lease=lease if leader_elect else None,
    )
    sync = lambda hub: ArgoCDSync(  # noqa: E731
        hub,
        providers,
        namespaces=namespace,
        argocd_namespace=argocd_namespace,
        label_selector=selector,
        workers=workers,
        instance=instance,
    )
    run_until_signal(process.manager().add(sync))


@argocd_app.command("render")
def argocd_render(
    profile: Annotated[str, typer.Argument(help="ClusterProfile name.")],
    provider_file: _ProviderFile,
    namespace: opt.InventoryNamespace = None,
    argocd_namespace: Annotated[str, typer.Option(help="Argo CD's namespace.")] = "argocd",
    output: _Output = "yaml",
    decoded: Annotated[
        bool, typer.Option(help="Show data as readable stringData (not what is written).")
    ] = False,
    kubeconfig: opt.HubKubeconfig = None,
    context: opt.HubContext = None,
) -> None:
    """Print the Argo CD cluster Secret PROFILE yields (nothing is written).

    data.name is the profile name here; the sync prefixes the namespace when another
    inventory it serves holds the same name.
    """
    from cluster_inventory import kube
    from cluster_inventory.integrations.sync import RenderError
    from cluster_inventory.integrations.sync.argocd import render_cluster_secret

    providers = _providers(provider_file)
    ns = namespace or context_namespace(kubeconfig, context)

    async def fetch() -> dict[str, Any]:
        async with await hub_client(kubeconfig, context) as hub:
            found: dict[str, Any] = await kube.get(hub, kube.CLUSTER_PROFILES, profile, ns)
            return found

    found = run_or_fail(fetch())
    try:
        secret = render_cluster_secret(found, providers, namespace=argocd_namespace)
    except RenderError as exc:
        fail(str(exc))
    if decoded:
        import base64

        data = secret.pop("data")
        secret["stringData"] = {k: base64.b64decode(v).decode() for k, v in data.items()}
    _dump(secret, output)


@multikueue_app.command("sync")
def multikueue_sync(
    kueue_namespace: Annotated[
        str, typer.Option(help="Kueue's namespace (it reads ClusterProfiles only there).")
    ] = "kueue-system",
    config_name: Annotated[
        str | None,
        typer.Option(help="Also keep a MultiKueueConfig of this name listing every cluster."),
    ] = None,
    selector: _Selector = None,
    kubeconfig: opt.HubKubeconfig = None,
    context: opt.HubContext = None,
    leader_elect: opt.LeaderElect = True,
    lease_namespace: Annotated[
        str | None, typer.Option(help="Namespace of the Lease (default: Kueue's).")
    ] = None,
    workers: _Workers = 4,
    metrics_bind_address: opt.MetricsAddress = ":8080",
    health_probe_bind_address: opt.HealthAddress = ":8081",
    log_format: opt.LogFormat = "text",
    name: _Name = None,
) -> None:
    """Keep one MultiKueueCluster per ClusterProfile of Kueue's namespace until SIGTERM.

    --name defaults to --config-name when given, else "default": two syncs with different
    configs each keep only their own MultiKueueClusters.
    """
    from cluster_inventory.integrations.sync import instance_lease_name
    from cluster_inventory.integrations.sync.multikueue import (
        LEASE_NAME,
        MultiKueueSync,
        default_instance,
    )

    instance = _instance(name or default_instance(config_name))
    lease = (lease_namespace or kueue_namespace, instance_lease_name(LEASE_NAME, instance))
    process = hub_process(
        kubeconfig,
        context,
        endpoints=(health_probe_bind_address, metrics_bind_address),
        log_format=log_format,
        lease=lease if leader_elect else None,
    )
    sync = lambda hub: MultiKueueSync(  # noqa: E731
        hub,
        kueue_namespace=kueue_namespace,
        label_selector=selector,
        config_name=config_name,
        workers=workers,
        instance=instance,
    )
    run_until_signal(process.manager().add(sync))


@multikueue_app.command("config")
def multikueue_config(
    provider_file: _ProviderFile,
    kueue_namespace: Annotated[str, typer.Option(help="Kueue's namespace.")] = "kueue-system",
    output: _Output = "yaml",
) -> None:
    """Print the Kueue Configuration fragment for the provider file's plugins."""
    from cluster_inventory.integrations.sync.multikueue import kueue_configuration

    _dump(kueue_configuration(_providers(provider_file), namespace=kueue_namespace), output)

"""The ``cluster-inventory`` command (also installed as the kubectl plugin ``kubectl-inventory``).

Verbs mirror kubectl. Errors go to stderr as one line naming what failed, with exit code 1;
tracebacks are for bugs only. Heavy modules (the kube client, the fleet) are imported inside
the commands that need them so that ``--help`` and ``version`` stay fast.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from cluster_inventory import __version__
from cluster_inventory.api.constants import REQUEST_TIMEOUT, REQUEST_TIMEOUT_ENV
from cluster_inventory.cli._errors import fail, run_or_fail
from cluster_inventory.cli._files import console_script, write_private
from cluster_inventory.cli._help import DESCRIPTION
from cluster_inventory.cli._hub import (
    context_namespace,
    hub_client,
    hub_kubeconfig_pin,
    profile_reference,
)
from cluster_inventory.cli._options import HubContext, HubKubeconfig, InventoryNamespace
from cluster_inventory.cli.agent import agent_app
from cluster_inventory.cli.apply import apply_cmd
from cluster_inventory.cli.availability import availability_cmd
from cluster_inventory.cli.crds import crds_app
from cluster_inventory.cli.dashboard import dashboard_cmd
from cluster_inventory.cli.fleet import demo, fleet_app, testing_app
from cluster_inventory.cli.integrations import argocd_app, multikueue_app
from cluster_inventory.cli.manager import deregister, manager_app, register
from cluster_inventory.cli.placement import placement_app
from cluster_inventory.cli.proxy import proxy_app

__all__ = ["app", "main"]

app = typer.Typer(
    name="cluster-inventory",
    help=DESCRIPTION,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(manager_app, name="manager")
app.add_typer(agent_app, name="agent")
app.add_typer(proxy_app, name="proxy")
app.add_typer(fleet_app, name="fleet")
app.add_typer(crds_app, name="crds")
app.add_typer(testing_app, name="testing")
app.add_typer(placement_app, name="placement")
app.add_typer(argocd_app, name="argocd")
app.add_typer(multikueue_app, name="multikueue")
app.command("apply")(apply_cmd)
app.command()(register)
app.command()(deregister)
app.command()(demo)
app.command("dashboard")(dashboard_cmd)
app.command("availability")(availability_cmd)


def _stderr() -> Any:
    """A rich Console on stderr (rich is imported only by the commands that draw progress)."""
    from rich.console import Console

    global _err_console
    if _err_console is None:
        _err_console = Console(stderr=True)
    return _err_console


_err_console: Any = None


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"cluster-inventory {__version__}")
        raise typer.Exit()


def _positive(value: float) -> float:
    if not value > 0:
        raise typer.BadParameter(f"{value:g} is not a positive number of seconds")
    return value


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_print_version,
            help="Print the version and exit (as container images and packagers expect).",
        ),
    ] = False,
    request_timeout: Annotated[
        float,
        typer.Option(
            "--request-timeout",
            envvar=REQUEST_TIMEOUT_ENV,
            callback=_positive,
            metavar="SECONDS",
            help="Seconds to wait for one answer from an API server before calling it unreachable.",
        ),
    ] = REQUEST_TIMEOUT,
) -> None:
    """Options of the command itself (``--version``, ``--request-timeout``)."""
    if request_timeout != REQUEST_TIMEOUT:
        # Every client of this process reads it (kube.request_timeout), and so do the
        # processes it starts.
        os.environ[REQUEST_TIMEOUT_ENV] = repr(request_timeout)


@app.command()
def version() -> None:
    """Print the version of cluster-inventory and of the pinned control-plane builds."""
    from cluster_inventory.testing.versions import (
        CLUSTER_INVENTORY_API_VERSION,
        ETCD_VERSION,
        KUBERNETES_VERSION,
    )

    typer.echo(f"cluster-inventory {__version__}")
    typer.echo(
        f"kubernetes {KUBERNETES_VERSION}, etcd {ETCD_VERSION}, "
        f"cluster-inventory-api {CLUSTER_INVENTORY_API_VERSION}"
    )


#: The profile a command reads, as the user names it.
_ProfileName = Annotated[
    str, typer.Argument(help="ClusterProfile name, or NAMESPACE/NAME as tables print it.")
]


@app.command("kubeconfig")
def kubeconfig_cmd(
    profile: _ProfileName,
    namespace: InventoryNamespace = None,
    kubeconfig: HubKubeconfig = None,
    context: HubContext = None,
    provider: Annotated[str, typer.Option(help="Access provider to use.")] = "secretreader",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here (mode 0600), not stdout.")
    ] = None,
) -> None:
    """Print a kubeconfig that reaches PROFILE's member through the secretreader plugin.

    The user runs `cluster-inventory-secretreader`, which reads the token Secret
    <namespace>/<profile> from the hub, so plain kubectl works with the result.
    """
    from cluster_inventory import credentials, kube

    given, profile = profile_reference(profile, namespace)
    namespace = given or context_namespace(kubeconfig, context)

    async def fetch() -> dict[str, object]:
        async with await hub_client(kubeconfig, context) as client:
            resource = await kube.cluster_profiles_resource(client)
            found: dict[str, object] = await kube.get(
                client, resource, profile, namespace=namespace
            )
            return found

    try:
        found = asyncio.run(fetch())
        pinned, env = hub_kubeconfig_pin(kubeconfig)
        args = ["--namespace", namespace, *pinned]
        if context:
            args += ["--context", context]
        config = credentials.kubeconfig_for_profile(
            found,
            command=console_script("cluster-inventory-secretreader"),
            args=args,
            env=env,
            provider=provider,
            install_hint="pip install cluster-inventory",
        )
    except (kube.KubeError, credentials.CredentialsError) as exc:
        fail(str(exc))
    import yaml

    text = yaml.safe_dump(config, sort_keys=False)
    if output is None:
        typer.echo(text, nl=False)
        return
    write_private(output, text)
    typer.echo(f"wrote {output}", err=True)


@app.command("get")
def get_cmd(
    resource: Annotated[
        str | None,
        typer.Argument(
            help="clusterprofiles (the default) or placementdecisions; a lone other word is "
            "a ClusterProfile's name."
        ),
    ] = None,
    name: Annotated[str | None, typer.Argument(help="Name (default: every object).")] = None,
    namespace: InventoryNamespace = None,
    all_namespaces: Annotated[
        bool, typer.Option("--all-namespaces", "-A", help="List profiles of every inventory.")
    ] = False,
    selector: Annotated[
        str | None, typer.Option("--selector", "-l", help="Label selector, e.g. k=v,k2!=v2.")
    ] = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            help="wide (ours), or any format kubectl get prints: yaml, json, name, "
            "jsonpath=..., go-template=..., custom-columns=... (run by kubectl).",
        ),
    ] = None,
    kubeconfig: HubKubeconfig = None,
    context: HubContext = None,
) -> None:
    """List ClusterProfiles or PlacementDecisions on the hub, or show one.

    `get [clusterprofiles] [NAME]`: the table adds to kubectl's NAME and AGE the cluster
    manager, the member's Kubernetes version, ControlPlaneHealthy and the access providers;
    `-o wide` adds Joined and the properties. Every other format is kubectl's own: `kubectl
    get clusterprofiles` runs with the same kubeconfig, context, namespace, selector and name
    (`$CLUSTER_INVENTORY_KUBECTL` names the binary, else kubectl on PATH). Without kubectl,
    json and yaml are printed here.

    `get placementdecisions [NAME]`: each slice's placement-key, decision-index, scheduler
    and number of clusters; `-o wide` adds the decision-key and the clusters' names. Other
    formats go to `kubectl get placementdecisions` in the same way.
    """
    from cluster_inventory.cli._get import run_get

    run_get(
        resource=resource,
        name=name,
        namespace=namespace,
        all_namespaces=all_namespaces,
        selector=selector,
        output=output,
        kubeconfig=kubeconfig,
        context=context,
    )


@app.command("conformance")
def conformance_cmd(
    namespace: Annotated[
        str, typer.Option("--namespace", "-n", help="The inventory namespace to check.")
    ],
    cluster_manager: Annotated[
        str | None,
        typer.Option(help="Check only this manager's profiles (spec.clusterManager.name)."),
    ] = None,
    output: Annotated[
        str, typer.Option("--output", "-o", help="text, yaml, json or html.")
    ] = "text",
    report_dir: Annotated[
        Path | None, typer.Option(help="Also write report.yaml and report.html there.")
    ] = None,
    kubeconfig: HubKubeconfig = None,
    context: HubContext = None,
) -> None:
    """Check an inventory against the Cluster Inventory API's Required and Optional rules.

    The checks of the upstream conformance suite (cluster-inventory-api PR #78) plus
    KEP-4322's own; exit code 3 when a Required check fails (1 for errors).
    """
    import yaml

    from cluster_inventory.integrations import conformance as conf

    if output not in ("text", "yaml", "json", "html"):
        fail(f"unknown output format {output!r}; use text, yaml, json or html")
    path = kubeconfig

    async def check() -> dict[str, Any]:
        async with await hub_client(path, context) as client:
            return await conf.run(client, namespace, cluster_manager)

    doc = run_or_fail(check())
    texts = {
        "text": lambda: conf.render_text(doc),
        "yaml": lambda: yaml.safe_dump(doc, sort_keys=False),
        "json": lambda: conf.dumps_json(doc),
        "html": lambda: conf.render_html(doc),
    }
    if report_dir is not None:
        try:
            report_dir.mkdir(parents=True, exist_ok=True)
            (report_dir / "report.yaml").write_text(texts["yaml"]())
            (report_dir / "report.html").write_text(texts["html"]())
        except OSError as exc:
            fail(f"{report_dir}: cannot write the report: {exc.strerror}")
    typer.echo(texts[output](), nl=False)
    if conf.required_failed(doc):
        raise typer.Exit(3)


@app.command("describe")
def describe_cmd(
    name: _ProfileName,
    namespace: InventoryNamespace = None,
    kubeconfig: HubKubeconfig = None,
    context: HubContext = None,
) -> None:
    """Show one ClusterProfile in full: conditions, properties, access providers, Events."""
    from cluster_inventory import kube
    from cluster_inventory.cli.profiles import describe_profile
    from cluster_inventory.kube.object_events import events_about

    path = kubeconfig
    given, name = profile_reference(name, namespace)
    ns = given or context_namespace(path, context)

    async def fetch() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        async with await hub_client(path, context) as client:
            resource = await kube.cluster_profiles_resource(client)
            profile = await kube.get(client, resource, name, namespace=ns)
            try:
                events = await events_about(client, profile, kind=kube.CLUSTER_PROFILES.kind)
            except kube.ForbiddenError:  # a reader of profiles may not read Events
                events = []
            return profile, events

    profile, events = run_or_fail(fetch())
    typer.echo(describe_profile(profile, events), nl=False)


def main() -> None:
    """Entry point of ``cluster-inventory`` and ``kubectl-inventory``."""
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)

"""The ``cluster-inventory`` command (also installed as the kubectl plugin ``kubectl-inventory``).

Verbs mirror kubectl. Errors go to stderr as one line naming what failed, with exit code 1;
tracebacks are for bugs only. Heavy modules (the kube client, the fleet) are imported inside
the commands that need them so that ``--help`` and ``version`` stay fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from cluster_inventory import __version__
from cluster_inventory.cli._files import console_script, write_private
from cluster_inventory.cli._get import context_namespace, hub_client, hub_kubeconfig_pin
from cluster_inventory.cli._help import DESCRIPTION
from cluster_inventory.cli._process import run_until_signal
from cluster_inventory.cli._table import format_table
from cluster_inventory.cli.apply import apply_cmd
from cluster_inventory.cli.integrations import argocd_app, multikueue_app
from cluster_inventory.cli.placement import placement_app

__all__ = ["app", "main"]

app = typer.Typer(
    name="cluster-inventory",
    help=DESCRIPTION,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
fleet_app = typer.Typer(
    help="A local fleet of real control planes (hub + members).", no_args_is_help=True
)
crds_app = typer.Typer(help="The Cluster Inventory CRDs.", no_args_is_help=True)
testing_app = typer.Typer(help="Test assets.", no_args_is_help=True)
manager_app = typer.Typer(help="The cluster manager (runs on a hub).", no_args_is_help=True)
app.add_typer(manager_app, name="manager")
app.add_typer(fleet_app, name="fleet")
app.add_typer(crds_app, name="crds")
app.add_typer(testing_app, name="testing")
app.add_typer(placement_app, name="placement")
app.add_typer(argocd_app, name="argocd")
app.add_typer(multikueue_app, name="multikueue")
app.command("apply")(apply_cmd)


def _stderr() -> Any:
    """A rich Console on stderr (rich is imported only by the commands that draw progress)."""
    from rich.console import Console

    global _err_console
    if _err_console is None:
        _err_console = Console(stderr=True)
    return _err_console


_err_console: Any = None


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def _kept_fleet_dir() -> Path:
    from cluster_inventory.testing import cache_root

    return cache_root() / "fleet"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"cluster-inventory {__version__}")
        raise typer.Exit()


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
) -> None:
    """Options of the command itself (``--version``)."""


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


def _build_assets(*, force: bool = False, plugins: bool = False) -> tuple[Path, list[Path]]:
    """Build (or find cached) the control-plane binaries, and the upstream plugins if asked.

    Progress shows as a spinner on a terminal and as plain lines elsewhere: off a terminal
    (CI) a spinner's refresh thread costs CPU the compile needs, and lines make a useful log.

    Raises:
        GoNotFoundError: Go is not installed.
        GoBuildError: A build failed.
    """
    from cluster_inventory.testing import install_assets, upstream_plugin

    status = _stderr().status("building control-plane assets") if _stderr().is_terminal else None
    with status if status is not None else contextlib.nullcontext():

        def progress(line: str) -> None:
            if status is not None:
                status.update(line)
            else:
                _stderr().print(line, highlight=False, soft_wrap=True)

        path = install_assets(progress=progress, force=force)
        built = [
            upstream_plugin(name, progress=progress)
            for name in (("secretreader", "kubeconfig-secretreader") if plugins else ())
        ]
        if plugins:
            # Upstream CRDs the integration tests install (module zips, no compile).
            from cluster_inventory.testing.argocd_check import argocd_check
            from cluster_inventory.testing.upstream_crds import UPSTREAM_CRDS, upstream_crd

            for crd in UPSTREAM_CRDS:
                upstream_crd(crd, progress=progress)
            built.append(argocd_check(progress=progress))
            # helm renders the chart, promtool checks the alerting rules (packaging tests).
            from cluster_inventory.testing.tools import TOOLS, install_tool

            built += [install_tool(name, progress=progress) for name in TOOLS]
    return path, built


@testing_app.command("install-assets")
def install_assets(
    force: Annotated[bool, typer.Option(help="Rebuild even if cached.")] = False,
) -> None:
    """Build etcd, kube-apiserver, kube-controller-manager, kubectl, plugins, helm, promtool.

    Everything comes from Go modules through the module proxy and is cached under
    ~/.cache/cluster-inventory; the upstream secretreader plugin and argocd-check (Argo CD's
    own Secret-to-cluster code) are what interop tests run, the upstream CRDs (Cluster
    API's Cluster, Kueue's MultiKueue kinds) are what integration tests install, and helm
    and promtool check the chart and the alerting rules.
    """
    from cluster_inventory.testing import GoBuildError, GoNotFoundError

    try:
        path, plugins = _build_assets(force=force, plugins=True)
    except (GoNotFoundError, GoBuildError) as exc:
        _fail(str(exc))
    typer.echo(str(path))
    for plugin in plugins:
        typer.echo(str(plugin))


@crds_app.command("print")
def crds_print() -> None:
    """Print the CRDs as a multi-document YAML stream (pipe it to kubectl apply -f -)."""
    import yaml

    from cluster_inventory import api

    typer.echo(yaml.safe_dump_all(api.load_crds(), sort_keys=False), nl=False)


@crds_app.command("apply")
def crds_apply(
    kubeconfig: Annotated[Path | None, typer.Option(help="Hub kubeconfig.")] = None,
    context: Annotated[str | None, typer.Option(help="Kubeconfig context.")] = None,
) -> None:
    """Apply the CRDs to a hub (server-side apply) and wait until they are served."""
    from cluster_inventory import api, kube

    path = kubeconfig

    async def run() -> None:
        async with await hub_client(path, context) as client:
            await kube.ensure_crds(client, api.load_crds())

    try:
        asyncio.run(run())
    except kube.KubeError as exc:
        _fail(str(exc))
    for crd in api.load_crds():
        typer.echo(
            f"customresourcedefinition.apiextensions.k8s.io/{crd['metadata']['name']} applied"
        )


_HUB_KUBECONFIG_HELP = "Hub kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)."
#: ``-n`` of the commands that read profiles; None means the kubeconfig context's namespace.
_InventoryNamespace = Annotated[
    str | None,
    typer.Option("--namespace", "-n", help="Inventory namespace (default: the context's)."),
]


@app.command()
def register(
    name: Annotated[str, typer.Argument(help="Member name (becomes the ClusterProfile name).")],
    kubeconfig: Annotated[
        Path, typer.Option(help="Kubeconfig the manager uses to reach the member.")
    ],
    clusterset: Annotated[
        list[str], typer.Option("--clusterset", help="Cluster set to join (repeatable).")
    ],
    context: Annotated[str | None, typer.Option(help="Context of the member kubeconfig.")] = None,
    display_name: Annotated[str | None, typer.Option(help="spec.displayName.")] = None,
    hub_kubeconfig: Annotated[Path | None, typer.Option(help=_HUB_KUBECONFIG_HELP)] = None,
    hub_context: Annotated[str | None, typer.Option(help="Hub kubeconfig context.")] = None,
    namespace: Annotated[
        str, typer.Option("--namespace", "-n", help="The manager's namespace on the hub.")
    ] = "cluster-inventory-system",
) -> None:
    """Register a member cluster: write its registration Secret on the hub."""
    from cluster_inventory import kube
    from cluster_inventory.manager import RegistrationError, registration_secret

    try:
        text = kubeconfig.read_text()
    except OSError as exc:
        _fail(f"{kubeconfig}: cannot read: {exc.strerror}")
    try:
        secret = registration_secret(
            name, namespace, text, clusterset, context=context, display_name=display_name
        )
    except RegistrationError as exc:
        _fail(f"{kubeconfig}: {exc.field}: {exc.problem}" if "data." in exc.field else str(exc))

    async def run() -> None:
        async with await hub_client(hub_kubeconfig, hub_context) as hub:
            try:
                await kube.create(hub, kube.NAMESPACES, {"metadata": {"name": namespace}})
            except kube.AlreadyExistsError:
                pass
            await kube.apply(hub, kube.SECRETS, secret, field_manager="cluster-inventory-cli")

    try:
        asyncio.run(run())
    except kube.KubeError as exc:
        _fail(str(exc))
    typer.echo(f"secret/{name} registered in {namespace} (cluster sets: {', '.join(clusterset)})")


@app.command()
def deregister(
    name: Annotated[str, typer.Argument(help="Member name.")],
    hub_kubeconfig: Annotated[Path | None, typer.Option(help=_HUB_KUBECONFIG_HELP)] = None,
    hub_context: Annotated[str | None, typer.Option(help="Hub kubeconfig context.")] = None,
    namespace: Annotated[
        str, typer.Option("--namespace", "-n", help="The manager's namespace on the hub.")
    ] = "cluster-inventory-system",
) -> None:
    """Deregister a member: its profiles and token Secrets are then removed by the manager."""
    from cluster_inventory import kube
    from cluster_inventory.manager.names import LABEL_REGISTRATION

    async def run() -> None:
        async with await hub_client(hub_kubeconfig, hub_context) as hub:
            secret = await kube.get(hub, kube.SECRETS, name, namespace=namespace)
            labels = (secret.get("metadata") or {}).get("labels") or {}
            if labels.get(LABEL_REGISTRATION) != "true":
                raise typer.BadParameter(f"Secret {namespace}/{name} is not a registration")
            await kube.delete(hub, kube.SECRETS, name, namespace=namespace, missing_ok=False)

    try:
        asyncio.run(run())
    except kube.NotFoundError:
        _fail(f"no registration {namespace}/{name}")
    except (kube.KubeError, typer.BadParameter) as exc:
        _fail(str(exc))
    typer.echo(f"secret/{name} deregistered")


def _parse_inventories(values: list[str]) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for value in values:
        ns, sep, sets = value.partition("=")
        if not sep or not ns or not sets:
            raise typer.BadParameter(f"--inventory-namespace {value!r} is not NAMESPACE=SET[,SET]")
        out[ns] = tuple(s for s in sets.split(",") if s)
    return out


@manager_app.command("run")
def manager_run(
    kubeconfig: Annotated[
        Path | None,
        typer.Option(help="Hub kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)."),
    ] = None,
    context: Annotated[str | None, typer.Option(help="Hub kubeconfig context.")] = None,
    name: Annotated[str, typer.Option(help="Cluster manager name.")] = "cluster-inventory",
    namespace: Annotated[
        str, typer.Option(help="Hub namespace of registrations and the Lease.")
    ] = "cluster-inventory-system",
    member_namespace: Annotated[
        str, typer.Option(help="Namespace on members for consumer ServiceAccounts.")
    ] = "cluster-inventory-system",
    inventory_namespace: Annotated[
        list[str] | None,
        typer.Option(help="Fixed inventory NAMESPACE=SET[,SET] (repeatable)."),
    ] = None,
    inventory_namespaces_only: Annotated[
        bool,
        typer.Option(
            help="Serve only the --inventory-namespace inventories, not labelled namespaces, "
            "and read token Secrets only there (for Secret access granted per namespace)."
        ),
    ] = False,
    access_provider: Annotated[str, typer.Option(help="Access provider name.")] = "secretreader",
    token_lifetime: Annotated[float, typer.Option(help="Consumer token lifetime, s.")] = 3600,
    probe_interval: Annotated[float, typer.Option(help="Seconds between probes.")] = 2.0,
    workers: Annotated[int, typer.Option(help="Concurrent status reconciles.")] = 32,
    leader_elect: Annotated[bool, typer.Option(help="Use Lease leader election.")] = True,
    metrics_bind_address: Annotated[str, typer.Option(help="[host]:port or 0.")] = ":8080",
    health_probe_bind_address: Annotated[str, typer.Option(help="[host]:port or 0.")] = ":8081",
    log_format: Annotated[str, typer.Option(help="text or json.")] = "text",
    source: Annotated[
        list[str] | None,
        typer.Option(
            help="Registration source, repeatable, first wins a name: secrets, capi, "
            "file:PATH (default: secrets)."
        ),
    ] = None,
    capi_namespace: Annotated[
        list[str] | None,
        typer.Option(help="Namespace of Cluster API Clusters (repeatable; default: all)."),
    ] = None,
    capi_clusterset_label: Annotated[
        str, typer.Option(help="Label key on a Cluster naming its cluster set.")
    ] = "cluster-inventory.dev/clusterset",
    capi_clusterset: Annotated[
        list[str] | None,
        typer.Option(help="Cluster set of Clusters that name none (repeatable)."),
    ] = None,
) -> None:
    """Run the cluster manager until SIGTERM (leader-elected; /healthz, /readyz, /metrics)."""
    from cluster_inventory import kube
    from cluster_inventory.cli._logging import configure_logging
    from cluster_inventory.manager import ManagerConfig, run_manager
    from cluster_inventory.manager.runner import parse_bind_address

    configure_logging(log_format)
    try:
        config = ManagerConfig(
            name=name,
            namespace=namespace,
            member_namespace=member_namespace,
            inventory_namespaces=_parse_inventories(inventory_namespace or []),
            inventory_namespaces_only=inventory_namespaces_only,
            access_provider=access_provider,
            token_lifetime=token_lifetime,
            probe_interval=probe_interval,
            workers=workers,
            sources=tuple(source or ("secrets",)),
            capi_namespaces=tuple(capi_namespace or ()),
            capi_clusterset_label=capi_clusterset_label,
            capi_clustersets=tuple(capi_clusterset or ()),
        )
        health = parse_bind_address(health_probe_bind_address)
        metrics = parse_bind_address(metrics_bind_address)
        hub = kube.load_connection(kubeconfig, context=context)
    except (ValueError, kube.KubeError) as exc:
        _fail(str(exc))

    run_until_signal(
        lambda: run_manager(
            hub,
            config,
            leader_elect=leader_elect,
            health_address=health,
            metrics_address=metrics,
        )
    )


@app.command("kubeconfig")
def kubeconfig_cmd(
    profile: Annotated[str, typer.Argument(help="ClusterProfile name.")],
    namespace: _InventoryNamespace = None,
    kubeconfig: Annotated[Path | None, typer.Option(help="Hub kubeconfig.")] = None,
    context: Annotated[str | None, typer.Option(help="Hub kubeconfig context.")] = None,
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

    namespace = namespace or context_namespace(kubeconfig, context)

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
        _fail(str(exc))
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
    namespace: _InventoryNamespace = None,
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
    kubeconfig: Annotated[Path | None, typer.Option(help=_HUB_KUBECONFIG_HELP)] = None,
    context: Annotated[str | None, typer.Option(help="Hub kubeconfig context.")] = None,
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
    kubeconfig: Annotated[Path | None, typer.Option(help=_HUB_KUBECONFIG_HELP)] = None,
    context: Annotated[str | None, typer.Option(help="Hub kubeconfig context.")] = None,
) -> None:
    """Check an inventory against the Cluster Inventory API's Required and Optional rules.

    The checks of the upstream conformance suite (cluster-inventory-api PR #78) plus
    KEP-4322's own; exit code 3 when a Required check fails (1 for errors).
    """
    import yaml

    from cluster_inventory import kube
    from cluster_inventory.integrations import conformance as conf

    if output not in ("text", "yaml", "json", "html"):
        _fail(f"unknown output format {output!r}; use text, yaml, json or html")
    path = kubeconfig

    async def check() -> dict[str, Any]:
        async with await hub_client(path, context) as client:
            return await conf.run(client, namespace, cluster_manager)

    try:
        doc = asyncio.run(check())
    except kube.KubeError as exc:
        _fail(str(exc))
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
            _fail(f"{report_dir}: cannot write the report: {exc.strerror}")
    typer.echo(texts[output](), nl=False)
    if conf.required_failed(doc):
        raise typer.Exit(3)


@app.command("describe")
def describe_cmd(
    name: Annotated[str, typer.Argument(help="ClusterProfile name.")],
    namespace: _InventoryNamespace = None,
    kubeconfig: Annotated[Path | None, typer.Option(help=_HUB_KUBECONFIG_HELP)] = None,
    context: Annotated[str | None, typer.Option(help="Hub kubeconfig context.")] = None,
) -> None:
    """Show one ClusterProfile in full: conditions, properties, access providers, Events."""
    from cluster_inventory import kube
    from cluster_inventory.cli.profiles import describe_profile

    path = kubeconfig
    ns = namespace or context_namespace(path, context)

    async def fetch() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        async with await hub_client(path, context) as client:
            resource = await kube.cluster_profiles_resource(client)
            profile = await kube.get(client, resource, name, namespace=ns)
            # The server picks the Events about this profile, as kubectl describe asks it to.
            about = {"regarding.kind": kube.CLUSTER_PROFILES.kind, "regarding.name": name}
            uid = (profile.get("metadata") or {}).get("uid")
            if uid:  # not those of an earlier profile of the same name
                about["regarding.uid"] = uid
            selector = ",".join(f"{key}={value}" for key, value in about.items())
            try:
                listed = await kube.list_objects(client, kube.EVENTS, ns, field_selector=selector)
            except kube.ForbiddenError:  # a reader of profiles may not read Events
                listed = {"items": []}
            return profile, list(listed.get("items") or ())

    try:
        profile, events = asyncio.run(fetch())
    except kube.KubeError as exc:
        _fail(str(exc))
    typer.echo(describe_profile(profile, events), nl=False)


def _print_fleet(fleet_state: dict[str, dict[str, str]], hub: str) -> None:
    rows = [
        (name, "hub" if name == hub else "member", info["server"], info["kubeconfig"])
        for name, info in fleet_state.items()
    ]
    typer.echo(format_table(("cluster", "role", "server", "kubeconfig"), rows), nl=False)


@fleet_app.command("up")
def fleet_up(
    members: Annotated[int, typer.Option(min=0, max=10, help="Number of member clusters.")] = 3,
    keep: Annotated[
        bool, typer.Option(help="Leave the fleet running after this command exits.")
    ] = False,
    controllers: Annotated[
        bool, typer.Option(help="Run kube-controller-manager on every cluster.")
    ] = True,
) -> None:
    """Start a hub and MEMBERS member clusters on loopback.

    Without --keep the fleet runs until Ctrl-C; with --keep it stays up until
    `cluster-inventory fleet down`.
    """
    from cluster_inventory.testing import (
        DEFAULT_CONTROLLERS,
        AssetNotFoundError,
        ControlPlaneError,
        Fleet,
    )

    workdir = _kept_fleet_dir() if keep else None
    if workdir is not None and (workdir / "fleet.json").exists():
        _fail(f"a kept fleet already runs in {workdir}; run `cluster-inventory fleet down` first")
    chosen = DEFAULT_CONTROLLERS if controllers else None
    fleet = Fleet(
        members, workdir=workdir, hub_controllers=chosen, member_controllers=chosen, detach=keep
    )
    started = time.monotonic()
    try:
        with _stderr().status(f"starting hub and {members} members"):
            asyncio.run(fleet.start())
    except (AssetNotFoundError, ControlPlaneError) as exc:
        _fail(str(exc))
    state = {
        cp.name: {"server": cp.server, "kubeconfig": str(cp.kubeconfig_path)}
        for cp in fleet.clusters
    }
    _stderr().print(f"fleet ready in {time.monotonic() - started:.1f} s")
    _print_fleet(state, fleet.hub.name)
    if keep:
        typer.echo(f"kubectl --kubeconfig {fleet.hub.kubeconfig_path} get clusterprofiles -A")
        typer.echo("stop it with: cluster-inventory fleet down")
        return
    _stderr().print("press Ctrl-C to stop")
    stop = False

    def _on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _on_signal)
    try:
        while not stop:
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    asyncio.run(fleet.stop())


@app.command()
def demo(
    members: Annotated[int, typer.Option(min=1, max=10, help="Number of member clusters.")] = 3,
    keep: Annotated[
        bool, typer.Option(help="Leave the fleet and the cluster manager running afterwards.")
    ] = False,
) -> None:
    """Show the whole Cluster Inventory API on a local fleet of real control planes.

    Builds the binaries on first use, starts a hub and MEMBERS members, registers them into
    two inventories, runs the cluster manager, syncs a ConfigMap with the runtime, reaches
    every member as an RBAC-limited consumer through the secretreader exec plugin, and stops
    one member to show ControlPlaneHealthy turn False and recover. Tables go to stdout.
    """
    from cluster_inventory.cli.demo import Demo, DemoError
    from cluster_inventory.testing import GoBuildError, GoNotFoundError, missing_binaries

    if missing_binaries():
        _stderr().print("building the control-plane binaries from Go modules (first run only)")
        try:
            _build_assets()
        except (GoNotFoundError, GoBuildError) as exc:
            _fail(str(exc))
    workdir = _kept_fleet_dir() if keep else None
    if workdir is not None and (workdir / "fleet.json").exists():
        _fail(f"a kept fleet already runs in {workdir}; run `cluster-inventory fleet down` first")
    run = Demo(members, keep=keep, workdir=workdir, err=_stderr())
    started = time.monotonic()
    try:
        asyncio.run(run.run())
    except DemoError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _stderr().print("interrupted; everything the demo started is stopped")
        raise typer.Exit(130) from None
    if not keep:
        _stderr().print(f"demo done in {time.monotonic() - started:.0f} s; everything is stopped")


@fleet_app.command("down")
def fleet_down() -> None:
    """Stop a fleet started with `fleet up --keep` and remove its files."""
    from cluster_inventory.testing import stop_detached

    workdir = _kept_fleet_dir()
    if not (workdir / "fleet.json").exists():
        _fail(f"no kept fleet found in {workdir}")
    pids = stop_detached(workdir)
    typer.echo(f"stopped {len(pids)} processes")


@fleet_app.command("stop-member")
def fleet_stop_member(
    name: Annotated[str, typer.Argument(help="Member cluster of the kept fleet.")],
    kill: Annotated[
        bool,
        typer.Option(
            "--kill",
            help="SIGKILL at once (a crash: the port closes now) instead of a graceful stop "
            "(kube-apiserver drains first, answering 503).",
        ),
    ] = False,
) -> None:
    """Stop member NAME's kube-apiserver in the kept fleet, to test an outage.

    Its data stays in etcd; `fleet start-member NAME` brings it back on the same address.
    For a fleet started with `fleet up --keep` or `make demo ARGS=--keep`.
    """
    from cluster_inventory.testing import KeptFleetError, stop_detached_member

    try:
        pid = stop_detached_member(_kept_fleet_dir(), name, kill=kill)
    except KeptFleetError as exc:
        _fail(str(exc))
    how = "killed" if kill else "stopped"
    typer.echo(f"member {name}: kube-apiserver {how} (pid {pid})")


@fleet_app.command("start-member")
def fleet_start_member(
    name: Annotated[str, typer.Argument(help="Member cluster of the kept fleet.")],
) -> None:
    """Start member NAME's stopped kube-apiserver again and wait until it is ready."""
    from cluster_inventory.testing import (
        ControlPlaneError,
        KeptFleetError,
        start_detached_member,
    )

    started = time.monotonic()
    try:
        pid = asyncio.run(start_detached_member(_kept_fleet_dir(), name))
    except (KeptFleetError, ControlPlaneError) as exc:
        _fail(str(exc))
    typer.echo(
        f"member {name}: kube-apiserver ready in {time.monotonic() - started:.1f} s (pid {pid})"
    )


def main() -> None:
    """Entry point of ``cluster-inventory`` and ``kubectl-inventory``."""
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)

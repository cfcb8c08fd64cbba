"""``cluster-inventory manager run``, ``register`` and ``deregister``: the cluster manager's side.

``register``/``deregister`` write and remove registration Secrets on the hub;
``manager accept``/``reject``/``bootstrap-kubeconfig``/``agents`` (pull-mode members,
``docs/agent.md``) live in :mod:`.manager_agents` and are registered here;
``manager run`` parses flags into a :class:`~cluster_inventory.manager.ManagerConfig` and runs
the manager as a process until SIGTERM (:func:`cluster_inventory.manager.run_manager`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from cluster_inventory._textfile import UnreadableFileError, read_text
from cluster_inventory.api import objects
from cluster_inventory.api.constants import FIELD_MANAGER_CLI, LABEL_CAPI_CLUSTERSET
from cluster_inventory.cli import _options as opt
from cluster_inventory.cli._errors import fail, run_or_fail
from cluster_inventory.cli._hub import hub_client
from cluster_inventory.cli._process import hub_process, run_until_signal
from cluster_inventory.cli.manager_agents import (
    manager_accept,
    manager_agents,
    manager_bootstrap_kubeconfig,
    manager_reject,
)
from cluster_inventory.manager.rules.names import DEFAULT_MANAGER_NAME, DEFAULT_NAMESPACE

__all__ = [
    "deregister",
    "manager_accept",
    "manager_agents",
    "manager_app",
    "manager_bootstrap_kubeconfig",
    "manager_reject",
    "register",
]

manager_app = typer.Typer(help="The cluster manager (runs on a hub).", no_args_is_help=True)
manager_app.command("accept")(manager_accept)
manager_app.command("reject")(manager_reject)
manager_app.command("bootstrap-kubeconfig")(manager_bootstrap_kubeconfig)
manager_app.command("agents")(manager_agents)

#: ``--namespace``/``-n`` of ``register`` and ``deregister`` (``register`` creates it).
_Namespace = Annotated[
    str, typer.Option("--namespace", "-n", help="The manager's namespace on the hub.")
]


def register(
    name: opt.MemberName,
    kubeconfig: Annotated[
        Path, typer.Option(help="Kubeconfig the manager uses to reach the member.")
    ],
    clusterset: opt.Clustersets,
    context: opt.MemberContext = None,
    display_name: opt.DisplayName = None,
    hub_kubeconfig: opt.HubKubeconfig = None,
    hub_context: opt.HubContext = None,
    namespace: _Namespace = DEFAULT_NAMESPACE,
) -> None:
    """Register a member cluster: write its registration Secret on the hub."""
    from cluster_inventory import kube
    from cluster_inventory.manager import RegistrationError, registration_secret

    try:
        text = read_text(kubeconfig)
    except UnreadableFileError as exc:
        fail(str(exc))
    try:
        secret = registration_secret(
            name, namespace, text, clusterset, context=context, display_name=display_name
        )
    except RegistrationError as exc:
        fail(f"{kubeconfig}: {exc.field}: {exc.problem}" if "data." in exc.field else str(exc))

    async def run() -> None:
        async with await hub_client(hub_kubeconfig, hub_context) as hub:
            try:
                await kube.create(hub, kube.NAMESPACES, {"metadata": {"name": namespace}})
            except kube.AlreadyExistsError:
                pass
            await kube.apply(hub, kube.SECRETS, secret, field_manager=FIELD_MANAGER_CLI)

    run_or_fail(run())
    typer.echo(f"secret/{name} registered in {namespace} (cluster sets: {', '.join(clusterset)})")


def deregister(
    name: opt.RegisteredMember,
    hub_kubeconfig: opt.HubKubeconfig = None,
    hub_context: opt.HubContext = None,
    namespace: _Namespace = DEFAULT_NAMESPACE,
) -> None:
    """Deregister a member: its profiles and token Secrets are then removed by the manager."""
    from cluster_inventory import kube
    from cluster_inventory.api.constants import LABEL_REGISTRATION

    async def run() -> None:
        async with await hub_client(hub_kubeconfig, hub_context) as hub:
            secret = await kube.get(hub, kube.SECRETS, name, namespace=namespace)
            labels = objects.labels_of(secret)
            if labels.get(LABEL_REGISTRATION) != "true":
                raise typer.BadParameter(f"Secret {namespace}/{name} is not a registration")
            await kube.delete(hub, kube.SECRETS, name, namespace=namespace, missing_ok=False)

    try:
        asyncio.run(run())
    except kube.NotFoundError:
        fail(f"no registration {namespace}/{name}")
    except (kube.KubeError, typer.BadParameter) as exc:
        fail(str(exc))
    typer.echo(f"secret/{name} deregistered")


def _parse_inventories(values: list[str]) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for value in values:
        ns, sep, sets = value.partition("=")
        if not sep or not ns or not sets:
            raise typer.BadParameter(f"--inventory-namespace {value!r} is not NAMESPACE=SET[,SET]")
        out[ns] = tuple(s for s in sets.split(",") if s)
    return out


#: ``--member-roles``, ``--member-roles-file``, ``--default-member-role``: the allow-list.
MemberRolesOption = Annotated[
    list[str] | None,
    typer.Option(
        "--member-roles",
        help="Member ClusterRoles an inventory of cluster set SET may get: SET=ROLE[,ROLE...], "
        "the first its default (repeatable; docs/manager.md).",
    ),
]
MemberRolesFileOption = Annotated[
    Path | None,
    typer.Option(help="YAML file mapping cluster sets to their member ClusterRoles (as above)."),
]
DefaultMemberRoleOption = Annotated[
    str,
    typer.Option(help="The one member ClusterRole a cluster set not listed allows ('' for none)."),
]


def _member_roles(values: list[str] | None, path: Path | None) -> dict[str, tuple[str, ...]]:
    """The allow-list from ``--member-roles`` and ``--member-roles-file`` (a set in one only)."""
    from cluster_inventory.manager.config import read_member_roles_file
    from cluster_inventory.manager.rules.member_roles import MemberRolesError, parse_member_roles

    try:
        listed = read_member_roles_file(str(path)) if path is not None else {}
        flags = parse_member_roles(values or ())
    except MemberRolesError as exc:
        fail(str(exc))
    twice = sorted(set(listed) & set(flags))
    if twice:
        fail(f"--member-roles: cluster set {twice[0]!r} is also in {path}; give it once")
    return {**listed, **flags}


@manager_app.command("run")
def manager_run(
    kubeconfig: opt.HubKubeconfig = None,
    context: opt.HubContext = None,
    name: Annotated[str, typer.Option(help="Cluster manager name.")] = "cluster-inventory",
    namespace: Annotated[
        str, typer.Option(help="Hub namespace of registrations and the Lease.")
    ] = DEFAULT_NAMESPACE,
    member_namespace: Annotated[
        str, typer.Option(help="Namespace on members for consumer ServiceAccounts.")
    ] = DEFAULT_NAMESPACE,
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
    leader_elect: opt.LeaderElect = True,
    sharding: opt.Sharding = False,
    shard_lease_duration: opt.ShardLeaseDuration = 10.0,
    shard_renew_interval: opt.ShardRenewInterval = 2.0,
    metrics_bind_address: opt.MetricsAddress = ":8080",
    health_probe_bind_address: opt.HealthAddress = ":8081",
    log_format: opt.LogFormat = "text",
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
    ] = LABEL_CAPI_CLUSTERSET,
    capi_clusterset: Annotated[
        list[str] | None,
        typer.Option(help="Cluster set of Clusters that name none (repeatable)."),
    ] = None,
    agent_approval: Annotated[
        bool, typer.Option(help="Approve the CSRs of accepted agent members (docs/agent.md).")
    ] = True,
    agent_certificate_max_seconds: Annotated[
        int,
        typer.Option(
            help="Longest expirationSeconds of an agent's CSR approved (at least 600; a CSR "
            "asking for more, or for none, is deleted; docs/agent.md)."
        ),
    ] = 86400,
    agent_heartbeat_multiple: Annotated[
        float,
        typer.Option(
            help="An agent member turns Unknown after this many lease durations without a "
            "renewal (docs/agent.md)."
        ),
    ] = 5.0,
    agent_lease_duration: Annotated[
        float,
        typer.Option(
            help="Seconds of lease duration an agent's heartbeat grace is counted in when its "
            "Lease names one outside --agent-lease-duration-min..max (docs/agent.md)."
        ),
    ] = 60.0,
    agent_lease_duration_min: Annotated[
        float, typer.Option(help="Shortest leaseDurationSeconds of an agent's Lease counted, s.")
    ] = 10.0,
    agent_lease_duration_max: Annotated[
        float, typer.Option(help="Longest leaseDurationSeconds of an agent's Lease counted, s.")
    ] = 3600.0,
    agent_report_max_ca_bytes: Annotated[
        int, typer.Option(help="Longest CA an agent's report may advertise, PEM bytes.")
    ] = 16384,
    agent_report_max_properties: Annotated[
        int, typer.Option(help="Most properties an agent's report may give a profile.")
    ] = 256,
    agent_report_max_property_value: Annotated[
        int, typer.Option(help="Longest property value copied from a report (<= 1024).")
    ] = 1024,
    agent_report_max_message: Annotated[
        int, typer.Option(help="Longest apiServerHealth message copied (<= 32768).")
    ] = 4096,
    agent_report_allow_loopback: Annotated[
        bool,
        typer.Option(help="A reported server or proxy URL may name a loopback address."),
    ] = True,
    agent_report_allow_link_local: Annotated[
        bool,
        typer.Option(
            help="A reported server or proxy URL may name a link-local or cloud metadata address."
        ),
    ] = False,
    cluster_proxy_url: Annotated[
        str | None,
        typer.Option(
            help="CONNECT URL of the hub's cluster proxy (http://HOST:PORT): an agent member "
            "whose agent keeps tunnels to it is reached through it (docs/cluster-proxy.md)."
        ),
    ] = None,
    member_roles: MemberRolesOption = None,
    member_roles_file: MemberRolesFileOption = None,
    default_member_role: DefaultMemberRoleOption = "view",
) -> None:
    """Run the cluster manager until SIGTERM (leader-elected; /healthz, /readyz, /metrics).

    With ``--sharding`` every replica runs and owns a share of the members (docs/scale.md).
    """
    from cluster_inventory.manager import ClusterManagerRunnable, ManagerConfig
    from cluster_inventory.manager.runner import lease_name

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
            agent_approval=agent_approval,
            agent_certificate_max_seconds=agent_certificate_max_seconds,
            agent_heartbeat_multiple=agent_heartbeat_multiple,
            agent_lease_duration=agent_lease_duration,
            agent_lease_duration_min=agent_lease_duration_min,
            agent_lease_duration_max=agent_lease_duration_max,
            agent_report_max_ca_bytes=agent_report_max_ca_bytes,
            agent_report_max_properties=agent_report_max_properties,
            agent_report_max_property_value=agent_report_max_property_value,
            agent_report_max_message=agent_report_max_message,
            agent_report_allow_loopback=agent_report_allow_loopback,
            agent_report_allow_link_local=agent_report_allow_link_local,
            cluster_proxy_url=cluster_proxy_url,
            member_roles=_member_roles(member_roles, member_roles_file),
            default_member_role=default_member_role,
        )
    except ValueError as exc:
        fail(str(exc))
    process = hub_process(
        kubeconfig,
        context,
        endpoints=(health_probe_bind_address, metrics_bind_address),
        log_format=log_format,
        lease=(namespace, lease_name(name)) if leader_elect and not sharding else None,
        shard=(namespace, name, shard_lease_duration, shard_renew_interval) if sharding else None,
    )
    manager = process.manager()
    manager.add(lambda hub: ClusterManagerRunnable(hub, config, identity=process.identity))
    run_until_signal(manager)


@manager_app.command("grants")
def manager_grants(
    member_kubeconfig: Annotated[
        Path, typer.Option(help="Kubeconfig of the member cluster (read access is enough).")
    ],
    context: opt.MemberContext = None,
    hub_kubeconfig: opt.HubKubeconfig = None,
    hub_context: opt.HubContext = None,
    name: Annotated[str, typer.Option(help="The cluster manager's name.")] = DEFAULT_MANAGER_NAME,
    member_namespace: Annotated[
        str, typer.Option(help="The manager's namespace on the member.")
    ] = DEFAULT_NAMESPACE,
    inventory_namespace: Annotated[
        list[str] | None,
        typer.Option(help="Fixed inventory NAMESPACE=SET[,SET], as given to manager run."),
    ] = None,
    member_roles: MemberRolesOption = None,
    member_roles_file: MemberRolesFileOption = None,
    default_member_role: DefaultMemberRoleOption = "view",
) -> None:
    """What a cluster manager holds on a member against what its inventories need there.

    Each ServiceAccount and ClusterRoleBinding the manager made on the member for its
    consumers' tokens, and each one the member's inventories need (read on the hub: the
    manager's profiles of this member and the member role its allow-list gives their
    inventories; pass the allow-list as to manager run). STATE: held (held and needed),
    needed (made with the next token), orphan (nothing needs it: the manager removes it
    when it next connects; on a member it no longer serves, delete it yourself).
    """
    from cluster_inventory import kube
    from cluster_inventory.cli._table import format_table
    from cluster_inventory.manager import ManagerConfig
    from cluster_inventory.manager.admin.grant_report import grant_report

    try:
        read_text(member_kubeconfig)
        conn = kube.connection_from_kubeconfig(member_kubeconfig, context=context)
    except (UnreadableFileError, kube.KubeConfigError) as exc:
        fail(str(exc))
    try:
        config = ManagerConfig(
            name=name,
            member_namespace=member_namespace,
            inventory_namespaces=_parse_inventories(inventory_namespace or []),
            member_roles=_member_roles(member_roles, member_roles_file),
            default_member_role=default_member_role,
        )
    except ValueError as exc:
        fail(str(exc))

    async def run() -> list[list[str]]:
        async with (
            await kube.new_client(conn) as member,
            await hub_client(hub_kubeconfig, hub_context) as hub,
        ):
            rows = await grant_report(member, hub, config)
        return [
            [g.kind, g.namespace or "-", g.name, g.inventory, g.role or "-", state]
            for g, state in rows
        ]

    rows = run_or_fail(run())
    if not rows:
        typer.echo(f"cluster manager {name!r} holds nothing on this member, and needs nothing")
        return
    headers = ["KIND", "NAMESPACE", "NAME", "INVENTORY", "ROLE", "STATE"]
    typer.echo(format_table(headers, rows), nl=False)

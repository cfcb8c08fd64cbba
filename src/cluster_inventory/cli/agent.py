"""``cluster-inventory agent run`` and ``agent unjoin``: the member agent (``docs/agent.md``).

``run`` runs on a member the hub cannot reach: reports the member to the hub (its
MemberReport) and renews its heartbeat Lease there (and, with ``--consumer-service-account``,
keeps its consumers' token in its credential Secret there), until SIGTERM. Its hub identity is
either given (``--hub-kubeconfig``) or its own, got and rotated by the agent
(``--bootstrap-kubeconfig`` and ``--state-dir``: a CSR the cluster manager approves for the
member's current acceptance). Every flag is checked before the agent acts (no CSR is filed, nothing
is written, while one is wrong), and a wrong one is one line naming it.

``unjoin`` removes what the agent keeps on its member (its state directory's files) and says
so; the hub's objects are ``manager reject``'s.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from cluster_inventory._clock import utcnow
from cluster_inventory._textfile import UnreadableFileError, read_text
from cluster_inventory.cli import _options as opt
from cluster_inventory.cli._errors import fail
from cluster_inventory.cli._process import run_until_signal
from cluster_inventory.manager.rules.names import DEFAULT_NAMESPACE

if TYPE_CHECKING:
    from cluster_inventory import kube
    from cluster_inventory.agent import ReportingConfig

__all__ = ["DEFAULT_STATE_DIR", "agent_app"]

#: Where an agent that joins by itself keeps its key, certificate and kubeconfig (in a pod:
#: a volume that outlives a restart, so a restarted agent needs no new certificate).
DEFAULT_STATE_DIR = Path("/var/lib/cluster-inventory-agent")

#: The flag of each ReportingConfig field, for the one-line errors.
_FLAGS = {
    "name": "--name",
    "namespace": "--namespace",
    "server": "--server",
    "ca_pem": "--ca-file",
    "proxy_url": "--proxy-url",
    "proxy_servers": "--proxy-server",
    "proxy_ca_pem": "--proxy-ca-file",
    "tls_server_name": "--tls-server-name",
    "lease_duration": "--lease-duration",
    "probe_interval": "--probe-interval",
    "probe_timeout": "--probe-interval",
    "rejection_window": "--rejection-window",
    "consumer_token_lifetime": "--consumer-token-lifetime",
}

agent_app = typer.Typer(
    help="The member agent (runs on a member the hub cannot reach).", no_args_is_help=True
)

#: ``--state-dir`` of ``agent run`` and ``agent unjoin``.
_StateDir = Annotated[
    Path, typer.Option(help="Where the agent keeps its key (0600), certificate and kubeconfig.")
]


def _fail_flag(flag: str, problem: str) -> NoReturn:
    fail(f"{flag}: {problem}")


def _config(**settings: object) -> ReportingConfig:
    """The agent's settings, or exit naming the flag that is wrong."""
    from cluster_inventory.agent import AgentConfigError, ReportingConfig
    from cluster_inventory.api.agents import AgentNameError

    try:
        return ReportingConfig(**settings)  # type: ignore[arg-type]
    except AgentNameError as exc:
        if "consumer_service_account" in exc.source:
            _fail_flag("--consumer-service-account", f"{exc.field}: {exc.problem}")
        _fail_flag(_FLAGS.get(exc.field, exc.field), exc.problem)
    except AgentConfigError as exc:
        _fail_flag(_FLAGS.get(exc.field, exc.field), exc.problem)


def _connection(flag: str, path: Path | None, context: str | None) -> kube.ClusterConnection:
    """A kubeconfig's connection with its TLS material loaded, or exit naming ``flag``."""
    from cluster_inventory import kube

    try:
        connection = kube.load_connection(path, context=context)
        kube.ssl_context_for(connection)
    except kube.KubeError as exc:
        _fail_flag(flag, str(exc))
    return connection


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
            help="Kubeconfig of the member's bootstrap credential (manager bootstrap-kubeconfig "
            "--member NAME): the agent joins by itself and keeps its own identity in --state-dir."
        ),
    ] = None,
    state_dir: _StateDir = DEFAULT_STATE_DIR,
    hub_context: Annotated[
        str | None, typer.Option(help="Context of the hub (or bootstrap) kubeconfig.")
    ] = None,
    kubeconfig: Annotated[
        Path | None,
        typer.Option(
            help="The member's kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)."
        ),
    ] = None,
    context: opt.MemberContext = None,
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
    proxy_server: Annotated[
        list[str] | None,
        typer.Option(
            help="wss:// endpoint of the hub's cluster proxy; the agent keeps a tunnel to each "
            "replica behind it and consumers reach the member through it (repeatable; "
            "docs/cluster-proxy.md)."
        ),
    ] = None,
    proxy_ca_file: Annotated[
        Path | None,
        typer.Option(help="PEM CA of the cluster proxy's serving certificate (default: system)."),
    ] = None,
    tls_server_name: Annotated[
        str | None,
        typer.Option(
            help="Name in the member API server's certificate that consumers behind the "
            "cluster proxy verify (default: the host of the member kubeconfig's server)."
        ),
    ] = None,
    lease_duration: Annotated[
        float, typer.Option(help="Heartbeat Lease duration, s (renewed every duration ±25%).")
    ] = 60.0,
    probe_interval: Annotated[
        float, typer.Option(help="Seconds between probes of the member's /readyz.")
    ] = 30.0,
    rejection_window: Annotated[
        float | None,
        typer.Option(
            help="Seconds the hub must refuse the agent's Lease or MemberReport while its "
            "/readyz is ok before the agent takes it for a rejection and stops "
            "(default: the lease duration)."
        ),
    ] = None,
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
    (join: reuse the identity in ``--state-dir``, else ask for one with the bootstrap
    credential ``cluster-inventory manager bootstrap-kubeconfig --member NAME`` issued for
    the member's acceptance, and wait until the cluster manager approves it). A hub that
    does not answer, or refuses while it starts, is waited for; the agent stops, saying
    so, only once the hub has refused its own objects for ``--rejection-window`` seconds
    while its ``/readyz`` was ok (``manager reject``).
    """
    from cluster_inventory import credentials
    from cluster_inventory.agent import (
        HUB_KEEPALIVE_SECONDS,
        HubIdentity,
        IdentityStore,
        JoinError,
        ReportingAgent,
        StateDirError,
        bootstrap_acceptance,
        bootstrap_expired,
        parse_service_account,
    )
    from cluster_inventory.agent.config import AgentConfigError, check_ca_bundle
    from cluster_inventory.api.agents import AgentNameError
    from cluster_inventory.cli._logging import check_log_format, configure_logging
    from cluster_inventory.controller import Manager
    from cluster_inventory.kube.endpoints import parse_bind_address

    if (hub_kubeconfig is None) == (bootstrap_kubeconfig is None):
        fail("give exactly one of --hub-kubeconfig and --bootstrap-kubeconfig")
    ca_pem = None
    if ca_file is not None:
        try:
            ca_pem = read_text(ca_file).encode()
            check_ca_bundle(ca_pem)
        except UnreadableFileError as exc:
            _fail_flag("--ca-file", str(exc))
        except AgentConfigError as exc:
            _fail_flag("--ca-file", f"{ca_file}: {exc.problem}")
    proxy_ca_pem = None
    if proxy_ca_file is not None:
        try:
            proxy_ca_pem = read_text(proxy_ca_file).encode()
        except UnreadableFileError as exc:
            _fail_flag("--proxy-ca-file", str(exc))
    try:
        account = (
            parse_service_account(consumer_service_account) if consumer_service_account else None
        )
    except AgentNameError as exc:
        _fail_flag("--consumer-service-account", f"{exc.field}: {exc.problem}")
    config = _config(
        name=name,
        namespace=namespace,
        server=server,
        ca_pem=ca_pem,
        proxy_url=proxy_url,
        proxy_servers=tuple(proxy_server or ()),
        proxy_ca_pem=proxy_ca_pem,
        tls_server_name=tls_server_name,
        lease_duration=lease_duration,
        probe_interval=probe_interval,
        rejection_window=rejection_window,
        consumer_service_account=account,
        consumer_token_lifetime=consumer_token_lifetime,
    )
    try:
        health = parse_bind_address(health_probe_bind_address)
        metrics = parse_bind_address(metrics_bind_address)
        check_log_format(log_format)
    except ValueError as exc:
        fail(str(exc))
    hub_flag = "--hub-kubeconfig" if hub_kubeconfig is not None else "--bootstrap-kubeconfig"
    hub = _connection(hub_flag, hub_kubeconfig or bootstrap_kubeconfig, hub_context)
    member = _connection("--kubeconfig", kubeconfig, context)
    if bootstrap_kubeconfig is None:
        configure_logging(log_format)  # last: a refused flag leaves the process's logging be

        async def run_given() -> bool:
            # Opened here to keep its connection between renewals (HUB_KEEPALIVE_SECONDS).
            async with await credentials.hub_client(
                hub, keepalive_timeout=HUB_KEEPALIVE_SECONDS
            ) as client:
                manager = Manager(client, health=health, metrics=metrics)
                manager.add(ReportingAgent(client, member, config, hub_connection=hub))
                return await manager.run(handle_signals=True)

        run_until_signal(run_given)
        return
    store = IdentityStore(state_dir)
    expired = bootstrap_expired(hub, utcnow())
    stored = store.load(name)
    if expired is not None and stored is None:
        _fail_flag(
            "--bootstrap-kubeconfig",
            f"{bootstrap_kubeconfig}: its certificate expired at {expired.isoformat()} and "
            f"{state_dir} holds no identity of {name}; on the hub, `cluster-inventory "
            f"manager bootstrap-kubeconfig --member {name}` issues a new one",
        )
    if (stored is None or stored.acceptance is None) and bootstrap_acceptance(hub, name) is None:
        _fail_flag(
            "--bootstrap-kubeconfig",
            f"{bootstrap_kubeconfig}: is not a bootstrap credential of member {name} (a "
            f"certificate in group cluster-inventory:bootstrap:{name}:ACCEPTANCE) and "
            f"{state_dir} holds no identity of {name}; on the hub, `cluster-inventory "
            f"manager bootstrap-kubeconfig --member {name}` issues one",
        )
    identity = HubIdentity(hub, name, store)

    async def run_joining() -> bool:
        # The Manager takes a client made here: one whose TLS takes each new certificate.
        async with await identity.client() as client:
            manager = Manager(client, health=health, metrics=metrics)
            manager.add(ReportingAgent(client, member, config, identity=identity))
            try:
                return await manager.run(handle_signals=True)
            except JoinError as exc:  # denied, failed or deleted CSR: one line, exit 1
                fail(f"the hub did not issue the agent's certificate: {exc}")

    with contextlib.ExitStack() as held:
        try:
            # Before any CSR: the directory exists (0700 if made here), takes a file, and
            # no other agent runs with it.
            held.enter_context(store.locked())
        except StateDirError as exc:
            _fail_flag("--state-dir", str(exc))
        configure_logging(log_format)
        run_until_signal(run_joining)


@agent_app.command("unjoin")
def agent_unjoin(
    state_dir: _StateDir = DEFAULT_STATE_DIR,
) -> None:
    """Remove what the agent keeps on this member: its key, certificate and kubeconfig.

    Only the files the agent writes in --state-dir (and the directory, if that leaves it
    empty); the agent creates no object on the member. Refused while an agent runs with
    the directory. The hub's side (registration, RBAC, Lease, MemberReport, the consumers'
    token) stays until `cluster-inventory manager reject NAME` on the hub.
    """
    from cluster_inventory.agent import IdentityStore, StateDirError, stored_member

    store = IdentityStore(state_dir)
    member = stored_member(state_dir)
    try:
        removed = store.remove()
    except StateDirError as exc:
        _fail_flag("--state-dir", str(exc))
    if not removed:
        typer.echo(f"nothing of the agent's in {state_dir}")
        return
    for path in removed:
        typer.echo(f"removed {path}{'/' if path == state_dir else ''}")
    who = f"member {member}" if member else "the member"
    reject = f"manager reject {member}" if member else "manager reject NAME"
    typer.echo(
        f"{who}: the agent's identity is gone from this member; the hub keeps the member "
        f"accepted until `cluster-inventory {reject}` there"
    )

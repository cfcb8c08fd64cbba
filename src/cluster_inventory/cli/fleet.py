"""``cluster-inventory fleet ...``, ``demo`` and ``testing install-assets``: local control planes.

A fleet of real etcd and kube-apiserver processes on loopback (:mod:`cluster_inventory.testing`)
kept running for a person to explore, the demo on such a fleet, and the installer of the
binaries both need.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import signal
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from cluster_inventory.cli._errors import fail
from cluster_inventory.cli._table import format_table

__all__ = ["demo", "fleet_app", "testing_app"]

fleet_app = typer.Typer(
    help="A local fleet of real control planes (hub + members).", no_args_is_help=True
)
testing_app = typer.Typer(help="Test assets.", no_args_is_help=True)


@functools.cache
def _stderr() -> Any:
    """A rich Console on stderr (rich is imported only by the commands that draw progress)."""
    from rich.console import Console

    return Console(stderr=True)


def _kept_fleet_dir() -> Path:
    from cluster_inventory.testing import cache_root

    return cache_root() / "fleet"


def _build_assets(*, force: bool = False) -> Path:
    """Build (or find cached) the control-plane binaries.

    Progress shows as a spinner on a terminal and as plain lines elsewhere: off a terminal
    (CI) a spinner's refresh thread costs CPU the compile needs, and lines make a useful log.

    Raises:
        GoNotFoundError: Go is not installed.
        GoBuildError: A build failed.
    """
    from cluster_inventory.testing import install_assets

    status = _stderr().status("building control-plane assets") if _stderr().is_terminal else None
    with status if status is not None else contextlib.nullcontext():

        def progress(line: str) -> None:
            if status is not None:
                status.update(line)
            else:
                _stderr().print(line, highlight=False, soft_wrap=True)

        return install_assets(progress=progress, force=force)


@testing_app.command("install-assets")
def install_assets(
    force: Annotated[bool, typer.Option(help="Rebuild even if cached.")] = False,
) -> None:
    """Build etcd, kube-apiserver, kube-controller-manager and kubectl; print their directory.

    They come from Go modules through the module proxy and are cached under
    ~/.cache/cluster-inventory (Go is needed only for this). The fleet, the demo and the
    pytest plugin (cluster_inventory.testing) find them there, as envtest finds
    KUBEBUILDER_ASSETS. This repository's own suite needs more (upstream plugins, consumers,
    tools): `make assets` builds those with `cluster-inventory-workshop install-assets`.
    """
    from cluster_inventory.testing import GoBuildError, GoNotFoundError

    try:
        path = _build_assets(force=force)
    except (GoNotFoundError, GoBuildError) as exc:
        fail(str(exc))
    typer.echo(str(path))


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
        bool,
        typer.Option(
            help="Run kube-controller-manager on every cluster (on the hub also its CSR "
            "signer, so that member agents can join; docs/agent.md)."
        ),
    ] = True,
) -> None:
    """Start a hub and MEMBERS member clusters on loopback.

    Without --keep the fleet runs until Ctrl-C; with --keep it stays up until
    `cluster-inventory fleet down`. The hub signs agents' certificates and has the agents'
    RBAC the chart installs, so `docs/agent.md`'s join works on it (not with
    --no-controllers).
    """
    from cluster_inventory.testing import (
        DEFAULT_CONTROLLERS,
        AssetNotFoundError,
        ControlPlaneError,
        Fleet,
    )

    workdir = _kept_fleet_dir() if keep else None
    if workdir is not None and (workdir / "fleet.json").exists():
        fail(f"a kept fleet already runs in {workdir}; run `cluster-inventory fleet down` first")
    chosen = DEFAULT_CONTROLLERS if controllers else None
    fleet = Fleet(
        members,
        workdir=workdir,
        hub_controllers=chosen,
        member_controllers=chosen,
        agent_join=controllers,
        detach=keep,
    )
    started = time.monotonic()
    try:
        with _stderr().status(f"starting hub and {members} members"):
            asyncio.run(fleet.start())
    except (AssetNotFoundError, ControlPlaneError) as exc:
        fail(str(exc))
    state = {
        cp.name: {"server": cp.server, "kubeconfig": str(cp.kubeconfig_path)}
        for cp in fleet.clusters
    }
    stop = False

    def _on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    if not keep:
        # Before the table is printed: whoever reads it may signal at once, and a signal
        # between the table and the handlers would leave the control planes running.
        signal.signal(signal.SIGTERM, _on_signal)
        signal.signal(signal.SIGINT, _on_signal)
    _stderr().print(f"fleet ready in {time.monotonic() - started:.1f} s")
    _print_fleet(state, fleet.hub.name)
    if keep:
        typer.echo(f"kubectl --kubeconfig {fleet.hub.kubeconfig_path} get clusterprofiles -A")
        typer.echo("stop it with: cluster-inventory fleet down")
        return
    _stderr().print("press Ctrl-C to stop")
    try:
        while not stop:
            time.sleep(0.2)
    finally:
        asyncio.run(fleet.stop())


def demo(
    members: Annotated[int, typer.Option(min=1, max=10, help="Number of member clusters.")] = 3,
    keep: Annotated[
        bool, typer.Option(help="Leave the fleet and the cluster manager running afterwards.")
    ] = False,
) -> None:
    """Show the whole Cluster Inventory API on a local fleet of real control planes.

    Builds the binaries on first use, starts a hub and MEMBERS members, registers them into
    two inventories (member3 joins by its agent, in pull mode), runs the cluster manager,
    syncs a ConfigMap with the runtime, reaches every member as an RBAC-limited consumer
    through the secretreader exec plugin, and stops one member to show ControlPlaneHealthy
    turn False and recover. Tables go to stdout.
    """
    from cluster_inventory.cli.demo import Demo, DemoError
    from cluster_inventory.testing import GoBuildError, GoNotFoundError, missing_binaries

    if missing_binaries():
        _stderr().print("building the control-plane binaries from Go modules (first run only)")
        try:
            _build_assets()
        except (GoNotFoundError, GoBuildError) as exc:
            fail(str(exc))
    workdir = _kept_fleet_dir() if keep else None
    if workdir is not None and (workdir / "fleet.json").exists():
        fail(f"a kept fleet already runs in {workdir}; run `cluster-inventory fleet down` first")
    run = Demo(members, keep=keep, workdir=workdir, err=_stderr())
    started = time.monotonic()
    try:
        asyncio.run(run.run())
    except DemoError as exc:
        fail(str(exc))
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
        fail(f"no kept fleet found in {workdir}")
    pids = stop_detached(workdir)
    typer.echo(f"stopped {len(pids)} processes")


#: The member argument of ``fleet stop-member`` and ``fleet start-member``.
_KeptMember = Annotated[str, typer.Argument(help="Member cluster of the kept fleet.")]


@fleet_app.command("stop-member")
def fleet_stop_member(
    name: _KeptMember,
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
        fail(str(exc))
    how = "killed" if kill else "stopped"
    typer.echo(f"member {name}: kube-apiserver {how} (pid {pid})")


@fleet_app.command("start-member")
def fleet_start_member(
    name: _KeptMember,
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
        fail(str(exc))
    typer.echo(
        f"member {name}: kube-apiserver ready in {time.monotonic() - started:.1f} s (pid {pid})"
    )

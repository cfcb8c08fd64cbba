"""``cluster-inventory apply``: server-side apply manifests to the members an inventory selects.

Only typer and the standard library load with this module; delivery and the kube client are
imported when the command runs.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer

from cluster_inventory.api.constants import FIELD_MANAGER_APPLY
from cluster_inventory.cli._errors import fail
from cluster_inventory.cli._hub import context_namespace, hub_client
from cluster_inventory.cli._options import HubContext, HubKubeconfig, InventoryNamespace
from cluster_inventory.cli._table import format_table

__all__ = ["PROVIDER_FILE_ENV", "apply_cmd", "render_results"]

#: Environment variable naming the provider file when ``--provider-file`` is not given.
PROVIDER_FILE_ENV = "CLUSTER_INVENTORY_PROVIDER_FILE"


def render_results(rows: list[Any], *, wide: bool) -> str:
    """The result table: one row per member and object, as ``kubectl get`` lays tables out.

    Args:
        rows: :class:`~cluster_inventory.integrations.delivery.ObjectResult` values.
        wide: Add the member's server and always show the message column.

    Returns:
        The table text ("" when there are no rows).
    """
    if not rows:
        return ""
    headers = ["cluster", "namespace", "object", "result"]
    show_message = wide or any(r.message for r in rows)
    if wide:
        headers.append("server")
    if show_message:
        headers.append("message")
    body = []
    for r in rows:
        line = [r.cluster, r.namespace, r.object, r.action]
        if wide:
            line.append(r.server)
        if show_message:
            line.append(r.message)
        body.append(line)
    return format_table(headers, body)


def _summary(rows: list[Any]) -> str:
    clusters: dict[str, bool] = {}
    for r in rows:
        clusters[r.cluster] = clusters.get(r.cluster, False) or r.failed
    counts = Counter(r.action for r in rows)
    failed = sum(clusters.values())
    actions = ", ".join(f"{n} {a}" for a, n in sorted(counts.items()))
    return f"{len(clusters)} cluster(s), {failed} failed; {len(rows)} object result(s): {actions}"


def _watch(
    manifests: list[Any],
    providers: Any,
    *,
    namespace: str,
    profile: str | None,
    selector: str | None,
    placement: str | None,
    field_manager: str,
    default_namespace: str,
    resync: float,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """``apply --watch``: a :class:`FleetDelivery` on a fleet manager until SIGINT/SIGTERM.

    A :class:`~cluster_inventory.controller.Manager` without leader election or endpoints
    (one person's terminal, not a Deployment) running the runtime's fleet manager.
    """
    import sys

    from cluster_inventory import kube
    from cluster_inventory.api import objects
    from cluster_inventory.cli._process import run_until_signal
    from cluster_inventory.controller import Manager
    from cluster_inventory.integrations.delivery import FleetDelivery
    from cluster_inventory.runtime import FleetManager, control_plane_healthy

    def report(cluster: str, rows: list[Any]) -> None:
        for r in rows:
            line = f"{r.cluster}  {r.namespace or '-'}  {r.object}  {r.action}"
            sys.stdout.write(line + (f"  {r.message}" if r.message else "") + "\n")
        sys.stdout.flush()

    def readiness(p: Any) -> bool:
        return bool(objects.meta(p).get("name") == profile and control_plane_healthy(p))

    def fleet_delivery(hub: kube.ApiClient) -> FleetManager:
        options: dict[str, Any] = {"namespaces": [namespace]}
        if selector is not None:
            options["label_selector"] = selector
        if placement is not None:
            options["placement"] = (namespace, placement)
        if profile is not None:
            options["readiness"] = readiness
        fleet = FleetManager(hub, providers, **options)
        FleetDelivery(
            fleet,
            manifests,
            field_manager=field_manager,
            default_namespace=default_namespace,
            resync=resync,
            on_report=report,
        )
        return fleet

    try:
        connection = kube.load_connection(kubeconfig, context=context)
    except kube.KubeError as exc:
        fail(str(exc))
    typer.echo("watching; Ctrl-C stops (nothing is deleted from the members)", err=True)
    run_until_signal(Manager(connection).add(fleet_delivery))


def apply_cmd(
    filename: Annotated[
        list[str],
        typer.Option("--filename", "-f", help="File, directory or - (stdin); repeatable."),
    ],
    namespace: InventoryNamespace = None,
    profile: Annotated[
        str | None, typer.Option("--profile", help="Apply to this ClusterProfile's member.")
    ] = None,
    selector: Annotated[
        str | None,
        typer.Option("--selector", "-l", help="Apply to the members of matching profiles."),
    ] = None,
    placement: Annotated[
        str | None,
        typer.Option(
            "--placement",
            help="Apply to the clusters of this decision-key's PlacementDecisions.",
        ),
    ] = None,
    provider_file: Annotated[
        Path | None,
        typer.Option(
            "--provider-file",
            help=f"The consumer's access provider file (KEP-5339; default ${PROVIDER_FILE_ENV}).",
        ),
    ] = None,
    dry_run: Annotated[
        str, typer.Option("--dry-run", help="none or server (server-side dry run).")
    ] = "none",
    prune: Annotated[
        bool, typer.Option(help="Delete objects of the ApplySet that left the set (KEP-3659).")
    ] = False,
    applyset: Annotated[
        str | None,
        typer.Option(help="ApplySet parent ConfigMap name on each member (needed by --prune)."),
    ] = None,
    applyset_namespace: Annotated[
        str, typer.Option(help="Namespace of the ApplySet parent on the members.")
    ] = "default",
    member_namespace: Annotated[
        str, typer.Option(help="Namespace of namespaced objects that name none.")
    ] = "default",
    field_manager: Annotated[
        str, typer.Option(help="Server-side apply field manager.")
    ] = FIELD_MANAGER_APPLY,
    force_conflicts: Annotated[
        bool, typer.Option(help="Take over fields that another field manager owns.")
    ] = False,
    skip_unchanged: Annotated[
        bool,
        typer.Option(
            help="Send no apply for an object already as the manifest says, whose fields this "
            "field manager owns (--no-skip-unchanged sends every apply, as kubectl does)."
        ),
    ] = True,
    concurrency: Annotated[int, typer.Option(min=1, help="Members applied at once.")] = 32,
    timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds each member gets before its rows fail.")
    ] = 60.0,
    watch: Annotated[
        bool,
        typer.Option(
            "--watch",
            help="Keep applying: to members as they join, and again where objects drift "
            "(runs until interrupted).",
        ),
    ] = False,
    resync: Annotated[
        float, typer.Option(min=1, help="With --watch: seconds between full re-applies.")
    ] = 300.0,
    output: Annotated[str | None, typer.Option("--output", "-o", help="wide or json.")] = None,
    kubeconfig: HubKubeconfig = None,
    context: HubContext = None,
) -> None:
    """Server-side apply manifests to every member cluster an inventory selects.

    Members are chosen by --profile, -l or --placement and reached through the provider
    file's exec plugins. CRDs go first, then Namespaces, then the rest. One row per member
    and object (created, configured, unchanged, pruned, failed with the server's reason);
    the exit code is 1 if any member failed.
    """
    from cluster_inventory import credentials, kube
    from cluster_inventory.integrations import delivery

    if sum(x is not None for x in (profile, selector, placement)) != 1:
        fail("choose the members with exactly one of --profile, -l/--selector, --placement")
    if dry_run not in ("none", "server"):
        fail(f"--dry-run={dry_run} is not supported; use --dry-run=server or none")
    if output not in (None, "wide", "json"):
        fail(f"unknown output format {output!r}; use wide or json")
    if prune and not applyset:
        fail("--prune needs --applyset NAME (the parent ConfigMap on each member, KEP-3659)")
    provider_path = provider_file or (
        Path(os.environ[PROVIDER_FILE_ENV]) if os.environ.get(PROVIDER_FILE_ENV) else None
    )
    if provider_path is None:
        fail(f"--provider-file (or ${PROVIDER_FILE_ENV}) is required to reach the members")
    try:
        providers = credentials.load_provider_file(provider_path)
    except credentials.ProviderConfigError as exc:
        fail(str(exc))
    try:
        manifests = delivery.load_manifests(filename)
    except delivery.ManifestError as exc:
        fail(str(exc))
    if not manifests:
        fail(f"no objects passed to apply (read {', '.join(filename)})")
    ns = namespace or context_namespace(kubeconfig, context)
    if watch:
        if prune or dry_run != "none":
            fail("--watch cannot be combined with --prune or --dry-run")
        _watch(
            manifests,
            providers,
            namespace=ns,
            profile=profile,
            selector=selector,
            placement=placement,
            field_manager=field_manager,
            default_namespace=member_namespace,
            resync=resync,
            kubeconfig=kubeconfig,
            context=context,
        )
        return

    async def run() -> list[Any]:
        async with await hub_client(kubeconfig, context) as hub:
            profiles = await delivery.select_profiles(
                hub, ns, profile=profile, selector=selector, placement=placement
            )
        return await delivery.deliver(
            profiles,
            manifests,
            providers,
            concurrency=concurrency,
            timeout=timeout,
            field_manager=field_manager,
            dry_run=dry_run == "server",
            force_conflicts=force_conflicts,
            default_namespace=member_namespace,
            skip_unchanged=skip_unchanged,
            applyset=delivery.ApplySet(name=applyset, namespace=applyset_namespace)
            if prune and applyset
            else None,
        )

    try:
        rows = kube.run(run())  # uvloop where installed: thousands of requests in one pass
    except (kube.KubeError, delivery.DeliveryError) as exc:
        fail(str(exc))
    if not rows:
        fail(f"no ClusterProfile in {ns} matches; nothing applied")
    if output == "json":
        typer.echo(delivery.results_json(rows))
    else:
        typer.echo(render_results(rows, wide=output == "wide"), nl=False)
    typer.echo(_summary(rows), err=True)
    if any(r.failed for r in rows):
        raise typer.Exit(1)

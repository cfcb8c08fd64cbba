"""``cluster-inventory placement``: ask for clusters, see the decisions, run the scheduler.

Only typer and the standard library load with this module; the kube client and the
placement package are imported inside the commands (the CLI's start-up stays fast).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from cluster_inventory.api.constants import FIELD_MANAGER_CLI
from cluster_inventory.cli import _options as opt
from cluster_inventory.cli._errors import fail
from cluster_inventory.cli._hub import context_namespace, hub_client
from cluster_inventory.cli._process import hub_process, run_until_signal
from cluster_inventory.cli._table import age, format_table
from cluster_inventory.manager.rules.names import DEFAULT_NAMESPACE

__all__ = ["placement_app"]

placement_app = typer.Typer(
    help="Placements: choose member clusters and publish PlacementDecisions (KEP-5313).",
    no_args_is_help=True,
)

_Output = Annotated[str | None, typer.Option("--output", "-o", help="wide, json or yaml.")]


def _namespace(namespace: str | None, kubeconfig: Path | None, context: str | None) -> str:
    return namespace or context_namespace(kubeconfig, context)


def _run(coro: Any) -> Any:
    from cluster_inventory import kube

    try:
        return asyncio.run(coro)
    except kube.KubeError as exc:
        fail(str(exc))


def _dump(doc: Any, output: str) -> None:
    if output == "json":
        typer.echo(json.dumps(doc, indent=2))
    else:
        import yaml

        typer.echo(yaml.safe_dump(doc, sort_keys=False), nl=False)


@placement_app.command("create")
def create(
    name: Annotated[str, typer.Argument(help="Placement name (also the decision-key).")],
    selector: Annotated[
        str | None,
        typer.Option("--selector", "-l", help="Label selector on profiles, e.g. env=prod."),
    ] = None,
    where: Annotated[
        str | None,
        typer.Option(
            "--where",
            help="Selector on profile properties, e.g. 'region in (eu-west-1, eu-central-1)'.",
        ),
    ] = None,
    clusters: Annotated[
        int | None, typer.Option("--clusters", min=0, help="numberOfClusters (default: all).")
    ] = None,
    spread_by: Annotated[
        str | None, typer.Option(help="Spread the choice over this property's values.")
    ] = None,
    include_unhealthy: Annotated[
        bool, typer.Option(help="Also choose clusters whose control plane is not healthy.")
    ] = False,
    placement_key: Annotated[
        str | None, typer.Option(help="placement-key label value (default: the name).")
    ] = None,
    namespace: opt.InventoryNamespace = None,
    kubeconfig: opt.HubKubeconfig = None,
    context: opt.HubContext = None,
) -> None:
    """Create or update a Placement (server-side apply); the scheduler publishes its decisions."""
    from cluster_inventory import kube
    from cluster_inventory.integrations.placement import (
        PLACEMENTS,
        SelectorError,
        parse_selector,
        to_label_selector,
    )

    ns = _namespace(namespace, kubeconfig, context)
    try:
        labels = parse_selector(selector)
    except SelectorError as exc:
        fail(f"--selector: {exc}")
    try:
        properties = parse_selector(where)
    except SelectorError as exc:
        fail(f"--where: {exc}")
    spec: dict[str, Any] = {"includeUnhealthy": include_unhealthy}
    if labels:
        spec["clusterSelector"] = to_label_selector(labels)
    if properties:
        spec["propertySelector"] = to_label_selector(properties, match_key="matchProperties")
    if clusters is not None:
        spec["numberOfClusters"] = clusters
    if spread_by:
        spec["spreadByProperty"] = spread_by
    if placement_key:
        spec["placementKey"] = placement_key
    body = {"metadata": {"name": name, "namespace": ns}, "spec": spec}

    async def run() -> None:
        async with await hub_client(kubeconfig, context) as hub:
            await kube.apply(hub, PLACEMENTS, body, field_manager=FIELD_MANAGER_CLI, force=True)

    _run(run())
    typer.echo(f"placement.cluster-inventory.dev/{name} applied in {ns}")


@placement_app.command("get")
def get(
    name: Annotated[str | None, typer.Argument(help="Placement name (default: all).")] = None,
    namespace: opt.InventoryNamespace = None,
    output: _Output = None,
    kubeconfig: opt.HubKubeconfig = None,
    context: opt.HubContext = None,
) -> None:
    """List Placements: requested and selected clusters, the Satisfied condition, slices."""
    from cluster_inventory import kube
    from cluster_inventory.integrations.placement import PLACEMENTS

    if output not in (None, "wide", "json", "yaml"):
        fail(f"unknown output format {output!r}; use wide, json or yaml")
    ns = _namespace(namespace, kubeconfig, context)

    async def fetch() -> list[dict[str, Any]]:
        async with await hub_client(kubeconfig, context) as hub:
            if name:
                return [await kube.get(hub, PLACEMENTS, name, ns)]
            listed = await kube.list_objects(hub, PLACEMENTS, ns)
            return list(listed.get("items") or ())

    items = _run(fetch())
    from cluster_inventory.api import objects
    from cluster_inventory.kube.informer import strip_managed_fields

    for item in items:
        strip_managed_fields(item)
    if output in ("json", "yaml"):
        doc = items[0] if name else {"apiVersion": "v1", "kind": "List", "items": items}
        _dump(doc, output)
        return
    if not items:
        typer.echo(f"No resources found in {ns} namespace.", err=True)
        return
    headers = ["name", "requested", "selected", "satisfied", "decisions", "age"]
    if output == "wide":
        headers += ["message"]
    rows = []
    for item in items:
        spec, status = objects.spec(item), objects.status(item)
        conditions = {c.get("type"): c for c in status.get("conditions") or ()}
        satisfied = conditions.get("Satisfied") or conditions.get("Scheduled") or {}
        requested = spec.get("numberOfClusters")
        row = [
            str(objects.meta(item).get("name")),
            "all" if requested is None else str(requested),
            str(status.get("numberOfSelectedClusters", "")),
            str(satisfied.get("status", "")),
            ",".join(status.get("decisions") or ()),
            age(objects.meta(item).get("creationTimestamp")),
        ]
        if output == "wide":
            scheduled = conditions.get("Scheduled") or {}
            bad = scheduled if scheduled.get("status") == "False" else satisfied
            row.append(str(bad.get("message", "")))
        rows.append(row)
    typer.echo(format_table(headers, rows), nl=False)


@placement_app.command("decisions")
def decisions(
    decision_key: Annotated[
        str, typer.Argument(help="The decision-key (a Placement's name for ours).")
    ],
    namespace: opt.InventoryNamespace = None,
    output: _Output = None,
    kubeconfig: opt.HubKubeconfig = None,
    context: opt.HubContext = None,
) -> None:
    """Show the clusters of one decision, read from all of its PlacementDecision slices.

    Slices of any scheduler count (e.g. OCM's mirror); they are grouped by
    multicluster.x-k8s.io/decision-revision as a consumer should.
    """
    from cluster_inventory import kube
    from cluster_inventory.api import objects
    from cluster_inventory.api.constants import LABEL_DECISION_INDEX, LABEL_DECISION_KEY
    from cluster_inventory.runtime.decisions import group_decisions

    if output not in (None, "wide", "json", "yaml"):
        fail(f"unknown output format {output!r}; use wide, json or yaml")
    ns = _namespace(namespace, kubeconfig, context)

    async def fetch() -> list[dict[str, Any]]:
        async with await hub_client(kubeconfig, context) as hub:
            listed = await kube.list_objects(
                hub,
                kube.PLACEMENT_DECISIONS,
                ns,
                label_selector=f"{LABEL_DECISION_KEY}={decision_key}",
            )
            return list(listed.get("items") or ())

    items = _run(fetch())
    found = group_decisions(items, decision_key, namespace=ns)
    if output in ("json", "yaml"):
        _dump(
            {
                "namespace": ns,
                "decisionKey": decision_key,
                "revision": found.revision,
                "complete": found.complete,
                "slices": list(found.slices),
                "schedulerNames": list(found.scheduler_names),
                "clusters": list(found.clusters),
            },
            output,
        )
        return
    if not found.found:
        fail(f"no PlacementDecision with decision-key {decision_key} in {ns}")
    by_name = {objects.meta(i).get("name"): i for i in items}
    rows = []
    for slice_name in found.slices:
        item = by_name[slice_name]
        index = objects.labels_of(item).get(LABEL_DECISION_INDEX, "")
        for d in item.get("decisions") or ():
            ref = d.get("clusterProfileRef") or {}
            row = [f"{ref.get('namespace') or ns}/{ref.get('name')}", slice_name, index]
            if output == "wide":
                row += [str(item.get("schedulerName") or ""), str(d.get("reason") or "")]
            rows.append(row)
    headers = ["cluster", "slice", "index"] + (["scheduler", "reason"] if output == "wide" else [])
    if rows:
        typer.echo(format_table(headers, rows), nl=False)
    state = "complete" if found.complete else "INCOMPLETE (slices are being rewritten)"
    typer.echo(
        f"{len(found.clusters)} cluster(s) in {len(found.slices)} slice(s), revision "
        f"{found.revision or '<none>'}, {state}",
        err=True,
    )


@placement_app.command("delete")
def delete(
    name: Annotated[str, typer.Argument(help="Placement name.")],
    namespace: opt.InventoryNamespace = None,
    kubeconfig: opt.HubKubeconfig = None,
    context: opt.HubContext = None,
) -> None:
    """Delete a Placement; the scheduler then deletes its PlacementDecisions."""
    from cluster_inventory import kube
    from cluster_inventory.integrations.placement import PLACEMENTS

    ns = _namespace(namespace, kubeconfig, context)

    async def run() -> None:
        async with await hub_client(kubeconfig, context) as hub:
            await kube.delete(hub, PLACEMENTS, name, ns, missing_ok=False)

    _run(run())
    typer.echo(f'placement.cluster-inventory.dev "{name}" deleted')


@placement_app.command("run")
def run_scheduler(
    namespace: Annotated[
        list[str] | None,
        typer.Option(
            "--namespace", "-n", help="Inventory namespace to serve (repeatable; default: all)."
        ),
    ] = None,
    kubeconfig: opt.HubKubeconfig = None,
    context: opt.HubContext = None,
    leader_elect: opt.LeaderElect = True,
    lease_namespace: Annotated[
        str, typer.Option(help="Namespace of the Lease on the hub.")
    ] = DEFAULT_NAMESPACE,
    workers: Annotated[int, typer.Option(min=1, help="Placements reconciled at once.")] = 4,
    metrics_bind_address: opt.MetricsAddress = "0",
    health_probe_bind_address: opt.HealthAddress = "0",
    log_format: opt.LogFormat = "text",
) -> None:
    """Run the placement scheduler on the hub until SIGTERM (deploy/placement/ runs it).

    The Lease is `cluster-inventory-placement`; the identity `$POD_NAME`, else
    `<hostname>_<pid>`. The endpoints are off unless given (the Deployment gives both).
    """
    from cluster_inventory.integrations.placement import PlacementScheduler

    process = hub_process(
        kubeconfig,
        context,
        endpoints=(health_probe_bind_address, metrics_bind_address),
        log_format=log_format,
        lease=(lease_namespace, "cluster-inventory-placement") if leader_elect else None,
    )

    manager = process.manager()
    manager.add(lambda hub: PlacementScheduler(hub, namespaces=namespace or None, workers=workers))
    run_until_signal(manager)

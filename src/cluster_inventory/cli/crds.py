"""``cluster-inventory crds``: print, apply and migrate the CRDs (docs/crds.md, docs/upgrade.md).

``apply`` never moves a storage version back and refuses, as ``kubectl apply --server-side``
does, to take over fields another field manager owns unless ``--force-conflicts``; it says
what it changed (or, with ``--dry-run=server``, what it would). ``migrate`` moves the
storage of ClusterProfile and PlacementDecision between v1alpha1 and v1alpha2 and rewrites
every object, refusing to drop a field one version lacks unless ``--drop-fields``.

Only typer and the standard library load with this module; the kube client is imported
inside the commands.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from cluster_inventory.api.constants import GROUP, V1ALPHA2
from cluster_inventory.cli._errors import fail, run_or_fail
from cluster_inventory.cli._get import RESOURCE_TYPES
from cluster_inventory.cli._hub import hub_client
from cluster_inventory.cli._options import HubContext, HubKubeconfig

if TYPE_CHECKING:
    from cluster_inventory.kube import AppliedCRD, StorageMigration

__all__ = ["crds_app"]

crds_app = typer.Typer(help="The Cluster Inventory CRDs.", no_args_is_help=True)

_KIND = "customresourcedefinition.apiextensions.k8s.io"
#: What ``crds migrate`` moves by default: the two resources served in v1alpha1 and v1alpha2.
_MIGRATED = ("clusterprofiles", "placementdecisions")


def _errors(messages: list[str]) -> None:
    """Each message in the CLI's error form, then exit 1 (nothing when there are none)."""
    if not messages:
        return
    for message in messages[:-1]:
        sys.stderr.write(f"error: {message}\n")
    fail(messages[-1])


@crds_app.command("print")
def crds_print() -> None:
    """Print the CRDs as a multi-document YAML stream (pipe it to kubectl apply -f -)."""
    import yaml

    from cluster_inventory import api

    typer.echo(yaml.safe_dump_all(api.load_crds(), sort_keys=False), nl=False)


def _applied_lines(result: AppliedCRD) -> list[str]:
    suffix = " (server dry run)" if result.dry_run else ""
    lines = [f"{_KIND}/{result.name} {result.action}{suffix}"]
    lines += [f"  {change}" for change in result.changes]
    lines += [f"  took over {c.field} from {c.manager}" for c in result.taken_over]
    lines += [f"  note: {note}" for note in result.notes]
    return lines


@crds_app.command("apply")
def crds_apply(
    force_conflicts: Annotated[
        bool,
        typer.Option(
            "--force-conflicts",
            help="Take over fields another field manager owns (as kubectl apply --server-side).",
        ),
    ] = False,
    dry_run: Annotated[
        str,
        typer.Option(
            "--dry-run",
            metavar="none|server",
            help="server: the hub checks the CRDs and says what would change; nothing is stored.",
        ),
    ] = "none",
    kubeconfig: HubKubeconfig = None,
    context: HubContext = None,
) -> None:
    """Apply the CRDs to a hub (server-side apply) and wait until they are served.

    The hub's storage version is kept where it is newer than this release's (crds migrate
    moved it); fields another field manager owns (kubectl, Helm, another project) are not
    taken over without --force-conflicts. Each CRD says what changed.
    """
    from cluster_inventory import api, kube

    if dry_run not in ("none", "server"):
        fail(f'--dry-run must be "none" or "server" (crds apply has no client dry run): {dry_run}')

    async def run() -> list[kube.AppliedCRD]:
        async with await hub_client(kubeconfig, context) as client:
            return await kube.apply_crds(
                client,
                api.load_crds(),
                force_conflicts=force_conflicts,
                dry_run=dry_run == "server",
            )

    results = run_or_fail(run())
    for result in results:
        if result.error is None:
            typer.echo("\n".join(_applied_lines(result)))
    _errors([str(r.error) for r in results if r.error is not None])


def _migrated_lines(result: StorageMigration) -> list[str]:
    if result.engine == "none":
        head = f"{_KIND}/{result.crd} unchanged: stored as {result.to_version} alone"
    else:
        head = (
            f"{_KIND}/{result.crd} migrated: storage {result.storage_before} -> "
            f"{result.to_version}, storedVersions {list(result.stored_before)} -> "
            f"{list(result.stored_after)}"
        )
    lines = [head]
    if result.objects is not None:
        lines.append(
            f"  objects: {result.objects} ({result.rewritten} rewritten, {result.unchanged} "
            f"already stored as {result.to_version}, {result.changed_meanwhile} written by "
            "others meanwhile)"
        )
    lines += [f"  dropped {field}" for field in result.dropped]
    lines += [f"  note: {note}" for note in result.notes if result.engine != "none"]
    return lines


@crds_app.command("migrate")
def crds_migrate(
    resources: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[RESOURCE]...",
            help="clusterprofiles and/or placementdecisions (default: both).",
            show_default=False,
        ),
    ] = None,
    to: Annotated[
        str, typer.Option("--to", help="The storage version to move to: v1alpha2 or v1alpha1.")
    ] = V1ALPHA2,
    drop_fields: Annotated[
        bool,
        typer.Option(
            "--drop-fields",
            help="Rewrite objects holding fields the target version lacks (they are dropped "
            "and named); without it such objects stop the migration before any change.",
        ),
    ] = False,
    storage_migration_api: Annotated[
        bool,
        typer.Option(
            help="Use the hub's storagemigration.k8s.io/v1beta1 where it serves it "
            "(kube-controller-manager rewrites); else crds migrate rewrites itself.",
        ),
    ] = True,
    timeout: Annotated[
        float, typer.Option(help="Seconds each CRD's migration may take.", metavar="SECONDS")
    ] = 600.0,
    kubeconfig: HubKubeconfig = None,
    context: HubContext = None,
) -> None:
    """Move the storage version of ClusterProfile and PlacementDecision and rewrite objects.

    Every object is rewritten into the new storage version (a no-op update), then the CRD's
    status.storedVersions is set to it alone if the CRD did not change meanwhile (KEP-4192).
    An object holding a field the target version lacks (v1alpha1's credentialProviders, a
    certificate-authority path) stops the migration before any change: docs/crds.md says
    what happens to each such field.
    """
    from cluster_inventory import kube

    plurals = []
    for word in resources or _MIGRATED:
        plural = RESOURCE_TYPES.get(word)
        if plural is None:
            fail(f'unknown resource "{word}": crds migrate moves {" and ".join(_MIGRATED)}')
        plurals.append(plural)

    async def run() -> tuple[list[kube.StorageMigration], list[str]]:
        done, failed = [], []
        async with await hub_client(kubeconfig, context) as client:
            for plural in dict.fromkeys(plurals):
                try:
                    done.append(
                        await kube.migrate_storage(
                            client,
                            f"{plural}.{GROUP}",
                            to,
                            drop_fields=drop_fields,
                            use_api=storage_migration_api,
                            timeout=timeout,
                        )
                    )
                except kube.KubeAPIError as exc:
                    if exc.status == 0:
                        raise
                    failed.append(str(exc))
                except kube.StorageMigrationError as exc:
                    failed.append(str(exc))
        return done, failed

    done, failed = run_or_fail(run())
    for result in done:
        typer.echo("\n".join(_migrated_lines(result)))
    _errors(failed)

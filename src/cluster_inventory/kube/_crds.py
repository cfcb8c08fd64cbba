"""Apply CustomResourceDefinitions to a cluster and wait until the API server serves them.

An upgrade of the CRDs is a write to objects other tools may own, so :func:`apply_crds`
behaves as ``kubectl apply --server-side`` does, plus one rule of its own:

- it reads the cluster's CRD first and never moves its storage version back
  (:func:`~cluster_inventory.kube._crd_plan.plan_storage`);
- it applies without ``force``: a field another field manager owns and we would change is a
  409 conflict, reported with the fields and the managers (:class:`CRDConflictError`),
  unless ``force_conflicts`` (``--force-conflicts``) takes them over, as kubectl's flag does.
  Conflicts with this project's own managers (``crds apply`` and ``crds migrate``) are not
  another's: they are taken over without asking;
- ``dry_run`` asks the server (``dryRun=All``) and stores nothing;
- each CRD says what changed (:func:`~cluster_inventory.kube._crd_plan.changed_paths`), and
  one refused CRD does not stop the others.

:func:`ensure_crds`, the harness's and the demo's install, is the same with ``force``.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from cluster_inventory.api.constants import FIELD_MANAGER_CRDS, FIELD_MANAGER_STORAGE_MIGRATION
from cluster_inventory.kube._crd_plan import changed_paths, plan_storage
from cluster_inventory.kube._k8s import ApiClient
from cluster_inventory.kube._resources import apply, get, request
from cluster_inventory.kube.errors import ConflictError, KubeAPIError, KubeError, NotFoundError
from cluster_inventory.kube.resources import CUSTOM_RESOURCE_DEFINITIONS

__all__ = [
    "AppliedCRD",
    "CRDConflictError",
    "CRDNotEstablishedError",
    "FieldConflict",
    "apply_crds",
    "ensure_crds",
]

_CONFLICT_MANAGER = re.compile(r'conflict with "([^"]*)"')


class CRDNotEstablishedError(KubeError):
    """A CRD was accepted but did not become Established and served in time."""


@dataclass(frozen=True, kw_only=True)
class FieldConflict:
    """One field of a server-side apply that another field manager owns.

    Attributes:
        field: The field path as the server names it, e.g. ``.spec.versions``.
        manager: The field manager owning it, e.g. ``kubectl-client-side-apply``.
    """

    field: str
    manager: str


class CRDConflictError(KubeError):
    """Applying a CRD would change fields another field manager owns; nothing was applied.

    Attributes:
        crd: The CRD's name.
        conflicts: The fields and their managers, as the server's 409 listed them.
    """

    def __init__(self, crd: str, conflicts: Sequence[FieldConflict]) -> None:
        self.crd = crd
        self.conflicts = tuple(conflicts)
        fields = ", ".join(f"{c.field} (managed by {c.manager})" for c in self.conflicts)
        super().__init__(
            f"CustomResourceDefinition {crd}: not applied: it would change fields another "
            f"field manager owns: {fields}; --force-conflicts takes them over"
        )


@dataclass(frozen=True, kw_only=True)
class AppliedCRD:
    """What applying one CRD did (or would do, on a dry run).

    Attributes:
        name: The CRD's name.
        action: ``created``, ``configured`` or ``unchanged`` (kubectl's words); ``failed``
            when ``error`` is set.
        changes: :func:`~cluster_inventory.kube._crd_plan.changed_paths` lines.
        notes: About the storage version (kept, or moved forward).
        taken_over: Fields taken from other managers (``force_conflicts``).
        dry_run: The server stored nothing.
        error: Why this CRD was not applied (:class:`CRDConflictError`,
            :class:`~cluster_inventory.kube._crd_plan.CRDStorageError`, a refusal), or None.
    """

    name: str
    action: Literal["created", "configured", "unchanged", "failed"]
    changes: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    taken_over: tuple[FieldConflict, ...] = ()
    dry_run: bool = False
    error: KubeError | None = None


def _conflicts(error: ConflictError) -> list[FieldConflict]:
    found = []
    for cause in error.causes:
        if cause.reason == "FieldManagerConflict":
            match = _CONFLICT_MANAGER.search(cause.message)
            found.append(FieldConflict(field=cause.field, manager=match[1] if match else "?"))
    return found


async def _apply_one(
    client: ApiClient,
    crd: dict[str, Any],
    *,
    force_conflicts: bool,
    dry_run: bool,
    field_manager: str,
) -> AppliedCRD:
    name = str(crd["metadata"]["name"])
    try:
        hub: dict[str, Any] | None = await get(client, CUSTOM_RESOURCE_DEFINITIONS, name)
    except NotFoundError:
        hub = None
    plan = plan_storage(crd, hub)
    taken: list[FieldConflict] = []

    async def write(force: bool) -> dict[str, Any]:
        return await apply(
            client,
            CUSTOM_RESOURCE_DEFINITIONS,
            plan.manifest,
            field_manager=field_manager,
            force=force,
            dry_run=dry_run,
        )

    try:
        stored = await write(force=False)
    except ConflictError as exc:
        conflicts = _conflicts(exc)
        if not conflicts:
            raise
        ours = {field_manager, FIELD_MANAGER_STORAGE_MIGRATION}
        foreign = [c for c in conflicts if c.manager not in ours]
        if foreign and not force_conflicts:
            raise CRDConflictError(name, foreign) from None
        taken = foreign
        stored = await write(force=True)
    changes = tuple(changed_paths(hub, stored))
    if hub is None:
        action: Literal["created", "configured", "unchanged"] = "created"
    elif changes or taken:
        action = "configured"
    else:
        action = "unchanged"
    return AppliedCRD(
        name=name,
        action=action,
        changes=changes,
        notes=tuple(plan.notes()),
        taken_over=tuple(taken),
        dry_run=dry_run,
    )


async def apply_crds(
    client: ApiClient,
    crds: Sequence[dict[str, Any]],
    *,
    force_conflicts: bool = False,
    dry_run: bool = False,
    timeout: float = 30.0,
    field_manager: str = FIELD_MANAGER_CRDS,
) -> list[AppliedCRD]:
    """Server-side apply each CRD, keeping the cluster's newer storage version; wait served.

    Per CRD: one GET (the cluster's CRD), one apply without ``force``, and a second one with
    it only after a conflict that may be taken over. A CRD that cannot be applied is
    reported in its result and the others go on.

    Args:
        client: A client allowed to read and write CRDs.
        crds: CustomResourceDefinition objects (ours: :func:`cluster_inventory.api.load_crds`).
        force_conflicts: Take over fields other field managers own (kubectl's
            ``--force-conflicts``); without it such a CRD fails with :class:`CRDConflictError`.
        dry_run: The server checks and answers what it would store (``dryRun=All``); nothing
            is stored and nothing waited for.
        timeout: Seconds to wait until every applied CRD is served.
        field_manager: Server-side-apply field manager.

    Returns:
        One :class:`AppliedCRD` per CRD, in order; ``error`` is set on those not applied.

    Raises:
        CRDNotEstablishedError: An applied CRD was not served within ``timeout`` seconds.
        ServerUnavailableError: The cluster could not be reached.
    """
    results: list[AppliedCRD] = []
    for crd in crds:
        try:
            results.append(
                await _apply_one(
                    client,
                    crd,
                    force_conflicts=force_conflicts,
                    dry_run=dry_run,
                    field_manager=field_manager,
                )
            )
        except KubeAPIError as exc:
            if exc.status == 0:  # unreachable: every other CRD would fail the same way
                raise
            results.append(AppliedCRD(name=crd["metadata"]["name"], action="failed", error=exc))
        except KubeError as exc:  # CRDConflictError, CRDStorageError
            results.append(AppliedCRD(name=crd["metadata"]["name"], action="failed", error=exc))
    if not dry_run:
        applied = {r.name for r in results if r.error is None}
        await _wait_served(client, [c for c in crds if c["metadata"]["name"] in applied], timeout)
    return results


async def ensure_crds(
    client: ApiClient,
    crds: Sequence[dict[str, Any]],
    *,
    timeout: float = 30.0,
    field_manager: str = FIELD_MANAGER_CRDS,
) -> None:
    """Apply CRDs (server-side, taking over conflicts) and wait until each is served.

    :func:`apply_crds` with ``force_conflicts``: the install of a cluster this caller owns
    (the test harness, the demo). The storage version still never moves back.

    Args:
        client: A client allowed to write CRDs.
        crds: CustomResourceDefinition objects.
        timeout: Seconds to wait for all of them.
        field_manager: Server-side-apply field manager.

    Raises:
        KubeAPIError: The API server refused a CRD (the message names the field).
        CRDStorageError: The cluster's CRD stores a version ours does not serve.
        CRDNotEstablishedError: A CRD was not served within ``timeout`` seconds.
    """
    results = await apply_crds(
        client, crds, force_conflicts=True, timeout=timeout, field_manager=field_manager
    )
    for result in results:
        if result.error is not None:
            raise result.error


async def _wait_served(client: ApiClient, crds: Sequence[dict[str, Any]], timeout: float) -> None:
    """Wait until each CRD is Established and every served version answers a LIST."""
    deadline = time.monotonic() + timeout
    for crd in crds:
        name = crd["metadata"]["name"]
        group = crd["spec"]["group"]
        plural = crd["spec"]["names"]["plural"]
        versions = [v["name"] for v in crd["spec"]["versions"] if v.get("served")]
        while True:
            stored = await get(client, CUSTOM_RESOURCE_DEFINITIONS, name)
            conditions = {
                c["type"]: c["status"] for c in (stored.get("status") or {}).get("conditions") or []
            }
            if conditions.get("Established") == "True":
                try:
                    for version in versions:
                        await request(client, "GET", f"/apis/{group}/{version}/{plural}")
                    break
                except KubeAPIError:
                    pass
            if time.monotonic() > deadline:
                raise CRDNotEstablishedError(
                    f"CustomResourceDefinition {name} not established after {timeout:.0f} s"
                )
            await asyncio.sleep(0.05)

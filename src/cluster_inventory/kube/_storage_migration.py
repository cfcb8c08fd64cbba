"""Move a CRD's storage version and rewrite every object into it, losing nothing unsaid.

KEP-4192's steps, as kube-controller-manager's ``storage-version-migrator-controller``
(``pkg/controller/storageversionmigrator``) takes them:

1. **Check first.** With the ``None`` conversion (no webhook) an object stored in the new
   version keeps only what that version's schema names (:mod:`._pruning`). Every object is
   read through each version still listed in ``status.storedVersions`` (the one it is stored
   in shows all of it) and the fields the target schema would drop are named; any such field
   stops the migration before anything changes, unless the caller accepts the loss
   (``drop_fields``), and then the result names each field dropped.
2. **Switch.** ``spec.versions[].storage`` moves to the target (a server-side apply of the
   list under :data:`~cluster_inventory.api.constants.FIELD_MANAGER_STORAGE_MIGRATION`, with
   the CRD's resourceVersion as precondition), and the migration waits until discovery's
   ``storageVersionHash`` of every served version is the target's: from then on every write
   is stored in it.
3. **Rewrite.** Where the hub serves ``storagemigration.k8s.io/v1beta1`` (beta and off by
   default in 1.35; discovery says), a ``StorageVersionMigration`` asks kube-controller-
   manager to do it; if no controller gives it a status within :data:`API_GRACE` seconds it
   is deleted and the rewrite below runs instead. The in-tree controller rewrites through
   the resource's preferred version: where that would drop more than the target does (back
   to v1alpha1 while v1alpha2 is preferred) the rewrite below runs too. Our rewrite is the
   controller's: per object an empty server-side apply carrying its ``uid`` and
   ``resourceVersion``, through the target version, so a changed object is a 409 (already
   rewritten by its writer) and a deleted one is not recreated.
4. **Record.** ``status.storedVersions`` becomes the target alone only if the CRD's
   generation is still the one the rewrite started at (the ``StorageMigrating`` condition's
   ``observedGeneration``), set with the CRD's resourceVersion as precondition: a CRD
   changed meanwhile may have let objects be stored in another version.

An object this migration could not rewrite leaves ``storedVersions`` as it was and is named
in the error; the others are rewritten all the same.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from cluster_inventory._clock import utcnow
from cluster_inventory.api.constants import (
    CONDITION_STORAGE_MIGRATING,
    FIELD_MANAGER_STORAGE_MIGRATION,
    REASON_MIGRATION_FAILED,
    REASON_MIGRATION_RUNNING,
    REASON_MIGRATION_SUCCEEDED,
)
from cluster_inventory.api.versions import resource_entry
from cluster_inventory.kube._crd_plan import storage_version, version_priority
from cluster_inventory.kube._k8s import ApiClient
from cluster_inventory.kube._pruning import dropped_fields
from cluster_inventory.kube._resources import (
    apply,
    create,
    delete,
    get,
    list_pages,
    request,
)
from cluster_inventory.kube._storage_rewrite import (
    Move,
    RewriteTally,
    crd_resource,
    object_key,
    rewrite_objects,
    served_versions,
    stored_versions,
    version_schema,
)
from cluster_inventory.kube.errors import ConflictError, KubeError, NotFoundError
from cluster_inventory.kube.resources import CUSTOM_RESOURCE_DEFINITIONS, STORAGE_VERSION_MIGRATIONS

__all__ = [
    "API_GRACE",
    "ENGINE_API",
    "ENGINE_REWRITE",
    "Engine",
    "StorageMigration",
    "StorageMigrationError",
    "migrate_storage",
    "storage_version_hash",
    "unchanged_since",
]

#: Who rewrote the objects: kube-controller-manager's migrator, this module, or nobody.
Engine = Literal["storagemigration.k8s.io/v1beta1", "rewrite", "none"]
#: The engine name of a rewrite done by kube-controller-manager's migrator.
ENGINE_API: Engine = "storagemigration.k8s.io/v1beta1"
#: The engine name of the rewrite done here.
ENGINE_REWRITE: Engine = "rewrite"
#: Seconds a StorageVersionMigration may stay without any status before it is taken for one
#: no controller serves (the API enabled, kube-controller-manager's gate not) and replaced by
#: our own rewrite. The in-tree controllers give it one within a second when they run.
API_GRACE = 30.0
_RETRIES = 5
_OBJECTS_NAMED = 10
_POLL = 0.1


class StorageMigrationError(KubeError):
    """A storage migration stopped or could not finish; the message says what is left.

    Attributes:
        crd: The CRD's name.
        problem: What went wrong, in words a person can act on.
        objects: ``namespace/name: detail`` for each object concerned (fields it would lose,
            a refused rewrite); the message names the first ten.
    """

    def __init__(self, crd: str, problem: str, objects: Sequence[str] = ()) -> None:
        self.crd = crd
        self.problem = problem
        self.objects = tuple(objects)
        named = "".join(f"\n  {o}" for o in self.objects[:_OBJECTS_NAMED])
        more = len(self.objects) - _OBJECTS_NAMED
        tail = f"\n  ... and {more} more" if more > 0 else ""
        super().__init__(f"CustomResourceDefinition {crd}: {problem}{named}{tail}")


@dataclass(frozen=True, kw_only=True)
class StorageMigration:
    """What a storage migration did.

    Attributes:
        crd: The CRD's name.
        to_version: The storage version now.
        storage_before: The storage version before.
        stored_before: ``status.storedVersions`` before.
        stored_after: ``status.storedVersions`` after (the target alone on success).
        objects: Objects seen (our rewrite), or None when the hub's migrator rewrote them.
        rewritten: Objects written anew in the target version (our rewrite).
        unchanged: Objects already stored in it (their rewrite changed nothing).
        changed_meanwhile: Objects updated or deleted by others during the rewrite: their
            writer stored them in the target version.
        dropped: ``namespace/name: path`` of each field dropped (only with ``drop_fields``).
        engine: :data:`ENGINE_API`, :data:`ENGINE_REWRITE`, or ``none`` (nothing to do).
        notes: What a person should know (a fallback, a webhook conversion).
    """

    crd: str
    to_version: str
    storage_before: str | None
    stored_before: tuple[str, ...]
    stored_after: tuple[str, ...]
    objects: int | None = None
    rewritten: int = 0
    unchanged: int = 0
    changed_meanwhile: int = 0
    dropped: tuple[str, ...] = ()
    engine: Engine = ENGINE_REWRITE
    notes: tuple[str, ...] = ()


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """Discovery's ``storageVersionHash`` of a resource stored as ``group/version/kind``.

    apiserver's ``discovery.StorageVersionHash``: the first 8 bytes of the SHA-256 of
    ``group/version/kind``, base64. A changed hash is the signal storage migrators watch.
    """
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def unchanged_since(crd: Mapping[str, Any], generation: int, to: str) -> bool:
    """Whether storedVersions may become ``[to]``: the CRD is as the rewrite found it.

    The in-tree migration runner's rule (``finishCRDMigration``): the generation the rewrite
    started at is still the CRD's (a spec change meanwhile, another storage version among
    them, may have let objects be stored otherwise), and ``to`` is still the storage version.
    """
    return int((crd.get("metadata") or {}).get("generation") or 0) == generation and (
        storage_version(crd) == to
    )


async def _losses(
    client: ApiClient, crd: Mapping[str, Any], schema: Mapping[str, Any] | None
) -> dict[str, list[str]]:
    """Per object (``namespace/name``), the fields ``schema`` would drop.

    Each object is read through every version ``status.storedVersions`` lists: the one it is
    stored in shows all of it (a read through another shows only what both versions name).
    """
    found: dict[str, set[str]] = {}
    served = served_versions(crd)
    for version in stored_versions(crd):
        if version not in served:
            raise StorageMigrationError(
                str(crd["metadata"]["name"]),
                f"status.storedVersions lists {version}, which it does not serve, so what it "
                f"stores cannot be read to check what the migration would drop; serve "
                f"{version} again (crds apply), or accept the loss (--drop-fields)",
            )
        async for page in list_pages(client, crd_resource(crd, version)):
            for item in page.get("items") or ():
                lost = dropped_fields(item, schema)
                if lost:
                    found.setdefault(object_key(item.get("metadata") or {}), set()).update(lost)
    return {key: sorted(paths) for key, paths in sorted(found.items())}


async def _write_crd(
    client: ApiClient,
    name: str,
    part: Callable[[Mapping[str, Any]], dict[str, Any]],
    *,
    what: str,
    subresource: str | None = None,
    read: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Apply ``part(crd)`` to the CRD at the resourceVersion of the read it was decided from.

    A CRD changed between the read and the write (409) is read again and ``part`` decided
    again, as client-go's ``RetryOnConflict`` around a GET and an apply does.

    Args:
        client: The hub.
        name: The CRD's name.
        part: ``{"spec": ...}`` or ``{"status": ...}`` from the CRD as read.
        what: What is written, for the error.
        subresource: ``status`` for the status.
        read: The CRD as already read (no first GET), or None.
    """
    crd = read
    for _ in range(_RETRIES):
        if crd is None:
            crd = await get(client, CUSTOM_RESOURCE_DEFINITIONS, name)
        body = {
            "metadata": {"name": name, "resourceVersion": crd["metadata"]["resourceVersion"]},
            **part(crd),
        }
        try:
            return await apply(
                client,
                CUSTOM_RESOURCE_DEFINITIONS,
                body,
                field_manager=FIELD_MANAGER_STORAGE_MIGRATION,
                subresource=subresource,
            )
        except ConflictError:
            crd = None
    raise StorageMigrationError(name, f"it kept changing while its {what} was written")


async def _set_storage(client: ApiClient, crd: dict[str, Any], to: str) -> dict[str, Any]:
    """Mark ``to`` the storage version (a server-side apply of ``spec.versions``)."""

    def flags(now: Mapping[str, Any]) -> dict[str, Any]:
        versions = copy.deepcopy(now["spec"]["versions"])
        for version in versions:
            version["storage"] = version["name"] == to
        return {"spec": {"versions": versions}}

    name = str(crd["metadata"]["name"])
    return await _write_crd(client, name, flags, what="storage version", read=crd)


async def _wait_storage_hash(
    client: ApiClient, crd: Mapping[str, Any], to: str, deadline: float
) -> None:
    """Wait until every served version's discovery names ``to`` as the storage version."""
    resource = crd_resource(crd, to)
    want = storage_version_hash(resource.group, to, resource.kind)
    for version in served_versions(crd):
        path = f"/apis/{resource.group}/{version}"
        while True:
            try:
                doc = await request(client, "GET", path, target=f"discovery {path}")
            except NotFoundError:
                doc = None
            entry = resource_entry(doc, resource.plural) or {}
            if entry.get("storageVersionHash") == want:
                break
            if time.monotonic() > deadline:
                raise StorageMigrationError(
                    str(crd["metadata"]["name"]),
                    f"discovery of {path} still names another storage version than {to}; "
                    "the API server has not switched: run crds migrate again",
                )
            await asyncio.sleep(_POLL)


def _condition(status: str, reason: str, message: str, generation: int) -> dict[str, Any]:
    now = utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "type": CONDITION_STORAGE_MIGRATING,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
        "observedGeneration": generation,
    }


async def _write_status(
    client: ApiClient,
    name: str,
    condition: Callable[[Mapping[str, Any]], dict[str, Any]],
    stored: Callable[[Mapping[str, Any]], list[str] | None],
) -> dict[str, Any]:
    """Apply the CRD's ``StorageMigrating`` condition (and storedVersions), decided from a read."""

    def status(now: Mapping[str, Any]) -> dict[str, Any]:
        written: dict[str, Any] = {"conditions": [condition(now)]}
        versions = stored(now)
        if versions is not None:
            written["storedVersions"] = versions
        return {"status": written}

    return await _write_crd(client, name, status, what="status", subresource="status")


async def _serves_migrations(client: ApiClient) -> bool:
    path = f"/apis/{STORAGE_VERSION_MIGRATIONS.group}/{STORAGE_VERSION_MIGRATIONS.version}"
    try:
        doc = await request(client, "GET", path, target=f"discovery {path}")
    except NotFoundError:
        return False
    return resource_entry(doc, STORAGE_VERSION_MIGRATIONS.plural) is not None


def _true(conditions: Sequence[Mapping[str, Any]], kind: str) -> Mapping[str, Any] | None:
    """The condition of type ``kind`` if its status is True."""
    found = (c for c in conditions if c.get("type") == kind and c.get("status") == "True")
    return next(found, None)


async def _with_api(
    client: ApiClient, crd: Mapping[str, Any], deadline: float, grace: float
) -> str | None:
    """Run a StorageVersionMigration to its end; its name, or None if nothing served it."""
    name = str(crd["metadata"]["name"])
    resource = crd_resource(crd, storage_version(crd) or "")
    created = await create(
        client,
        STORAGE_VERSION_MIGRATIONS,
        {
            "metadata": {"generateName": f"{resource.plural}-"},
            "spec": {"resource": {"group": resource.group, "resource": resource.plural}},
        },
    )
    svm = str(created["metadata"]["name"])
    started = time.monotonic()
    while True:
        status = (await get(client, STORAGE_VERSION_MIGRATIONS, svm)).get("status") or {}
        conditions = list(status.get("conditions") or ())
        failed = _true(conditions, "Failed")
        if failed is not None:
            raise StorageMigrationError(
                name, f"StorageVersionMigration {svm} failed: {failed.get('message', '')}"
            )
        running = any(c.get("type") == "Running" for c in conditions)
        if _true(conditions, "Succeeded") and running and not _true(conditions, "Running"):
            return svm  # succeeded, and the runner has recorded it on the CRD
        if not status and time.monotonic() - started > grace:
            await delete(client, STORAGE_VERSION_MIGRATIONS, svm)
            return None
        if time.monotonic() > deadline:
            raise StorageMigrationError(
                name,
                f"StorageVersionMigration {svm} has not finished in time; it goes on "
                f"(kubectl get storageversionmigration {svm}); run crds migrate again after",
            )
        await asyncio.sleep(_POLL)


async def _through_api(
    client: ApiClient,
    crd: Mapping[str, Any],
    to: str,
    *,
    check: bool,
    deadline: float,
    grace: float,
    notes: list[str],
) -> tuple[str, ...] | None:
    """Let the hub's migrator rewrite; storedVersions after it, or None to rewrite here.

    None when the hub serves no ``storagemigration.k8s.io/v1beta1``, when its controller
    would rewrite through a preferred version that drops more than ``to`` does, or when no
    controller serves the request (each but the first says so in ``notes``).
    """
    name = str(crd["metadata"]["name"])
    if not await _serves_migrations(client):
        return None
    preferred = max(served_versions(crd), key=version_priority)
    if check and preferred != to:
        through = await _losses(client, crd, version_schema(crd, preferred))
        if through != await _losses(client, crd, version_schema(crd, to)):
            notes.append(
                f"the hub's StorageVersionMigration rewrites through {preferred}, which would "
                f"drop more than {to} does: rewritten here, through {to}"
            )
            return None
    svm = await _with_api(client, crd, deadline, grace)
    if svm is None:
        notes.append(
            f"the hub serves {ENGINE_API} but no controller gave a StorageVersionMigration "
            f"a status within {grace:g} s: rewritten here"
        )
        return None
    after = stored_versions(await get(client, CUSTOM_RESOURCE_DEFINITIONS, name))
    if after != (to,):
        raise StorageMigrationError(
            name,
            f"StorageVersionMigration {svm} succeeded but storedVersions is {list(after)}: "
            "the CRD changed during it; run crds migrate again",
        )
    notes.append(f"rewritten by StorageVersionMigration {svm}")
    return after


async def _rewrite_and_record(
    client: ApiClient, move: Move
) -> tuple[RewriteTally, tuple[str, ...]]:
    """Our rewrite between the CRD's ``StorageMigrating`` True and False; storedVersions after.

    Raises:
        StorageMigrationError: Objects were not rewritten, or the CRD's generation or storage
            version changed meanwhile (storedVersions is left as it was).
    """
    name, to = str(move.crd["metadata"]["name"]), move.to
    generation = int(move.crd["metadata"]["generation"])
    running = _condition("True", REASON_MIGRATION_RUNNING, "crds migrate is rewriting", generation)
    await _write_status(client, name, lambda _: running, lambda _: None)
    tally = await rewrite_objects(client, move)

    def same(now: Mapping[str, Any]) -> bool:
        return unchanged_since(now, generation, to)

    def ended(now: Mapping[str, Any]) -> dict[str, Any]:
        if tally.failures:
            message = f"{len(tally.failures)} objects were not rewritten"
            return _condition("False", REASON_MIGRATION_FAILED, message, generation)
        message = "The migration has succeeded" + (
            " and the stored versions have been updated"
            if same(now)
            else " but the stored versions have not been updated due to a generation mismatch"
        )
        return _condition("False", REASON_MIGRATION_SUCCEEDED, message, generation)

    written = await _write_status(
        client, name, ended, lambda now: [to] if not tally.failures and same(now) else None
    )
    after = stored_versions(written)
    if tally.failures:
        raise StorageMigrationError(
            name,
            f"storage is {to}, but these objects were not rewritten, so storedVersions stays "
            f"{list(after)} (each keeps its data until its next write)",
            tally.failures,
        )
    if after != (to,):
        raise StorageMigrationError(
            name,
            f"the CRD changed during the migration (generation {generation} is no longer "
            f"current); storedVersions stays {list(after)}: run crds migrate again",
        )
    return tally, after


async def migrate_storage(
    client: ApiClient,
    crd_name: str,
    to_version: str,
    *,
    drop_fields: bool = False,
    use_api: bool = True,
    timeout: float = 600.0,
    api_grace: float = API_GRACE,
) -> StorageMigration:
    """Store every object of a CRD in ``to_version`` and leave it alone in storedVersions.

    Args:
        client: A client allowed to read and write CRDs and the resource's objects (and
            ``storageversionmigrations`` where the hub serves them).
        crd_name: E.g. ``clusterprofiles.multicluster.x-k8s.io``.
        to_version: A version the CRD serves, e.g. ``v1alpha2``.
        drop_fields: Go on when objects hold fields ``to_version`` cannot store; they are
            dropped and named in the result. Without it such objects stop the migration
            before anything changes.
        use_api: Use the hub's ``storagemigration.k8s.io/v1beta1`` where it serves it.
        timeout: Seconds the whole migration may take (the discovery switch, a
            StorageVersionMigration, our rewrite).
        api_grace: Seconds a StorageVersionMigration may stay without status before our
            rewrite replaces it.

    Returns:
        What was done (:class:`StorageMigration`).

    Raises:
        NotFoundError: The CRD does not exist.
        StorageMigrationError: The CRD does not serve ``to_version``; objects would lose
            fields (nothing changed); objects could not be rewritten, or the CRD changed
            during the migration (storage is ``to_version``, storedVersions as it was).
        KubeError: The hub refused or could not be reached.
    """
    deadline = time.monotonic() + timeout
    crd = await get(client, CUSTOM_RESOURCE_DEFINITIONS, crd_name)
    served = served_versions(crd)
    if to_version not in served:
        raise StorageMigrationError(
            crd_name,
            f"it does not serve {to_version} (it serves {', '.join(served)}); "
            "apply this release's CRDs first (crds apply)",
        )
    before = storage_version(crd)
    stored_before = stored_versions(crd)
    done = StorageMigration(
        crd=crd_name,
        to_version=to_version,
        storage_before=before,
        stored_before=stored_before,
        stored_after=stored_before,
        engine="none",
        notes=(f"already stored as {to_version} alone: nothing to rewrite",),
    )
    if before == to_version and stored_before == (to_version,):
        return done
    notes: list[str] = []
    check = (crd["spec"].get("conversion") or {}).get("strategy", "None") == "None"
    if not check:
        notes.append(
            "the CRD converts with a webhook: objects are stored as it converts them, "
            "and the fields check of the None conversion was not made"
        )
    else:
        losses = await _losses(client, crd, version_schema(crd, to_version))
        if losses and not drop_fields:
            raise StorageMigrationError(
                crd_name,
                f"objects hold fields {to_version} cannot store, which a rewrite would drop; "
                "nothing was changed (--drop-fields drops them)",
                [f"{key}: {', '.join(paths)}" for key, paths in losses.items()],
            )
    if before != to_version:
        crd = await _set_storage(client, crd, to_version)
    await _wait_storage_hash(client, crd, to_version, deadline)
    if use_api:
        after = await _through_api(
            client, crd, to_version, check=check, deadline=deadline, grace=api_grace, notes=notes
        )
        if after is not None:
            return replace(done, stored_after=after, engine=ENGINE_API, notes=tuple(notes))
    move = Move(crd=crd, to=to_version, drop_fields=drop_fields, check=check)
    tally, after = await _rewrite_and_record(client, move)
    return replace(
        done,
        stored_after=after,
        objects=tally.objects,
        rewritten=tally.rewritten,
        unchanged=tally.unchanged,
        changed_meanwhile=tally.changed_meanwhile,
        dropped=tuple(tally.dropped),
        engine=ENGINE_REWRITE,
        notes=tuple(notes),
    )

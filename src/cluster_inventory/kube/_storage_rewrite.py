"""Rewrite every object of a CRD into its storage version, as KEP-4192's migrator does.

Step 3 of :mod:`._storage_migration` where no ``storagemigration.k8s.io`` controller does it
(and where the in-tree one would drop more than the target does): per object an empty
server-side apply carrying its ``uid`` and ``resourceVersion``, through the target version,
so a changed object is a 409 (already rewritten by its writer) and a deleted one is not
recreated (kube-controller-manager's ``storage-version-migrator-controller``). Also how one
CRD's versions read (served, stored, each version's schema), which the migration shares.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cluster_inventory.api.constants import FIELD_MANAGER_STORAGE_MIGRATION
from cluster_inventory.kube._k8s import ApiClient
from cluster_inventory.kube._pruning import dropped_fields
from cluster_inventory.kube._resources import Resource, apply, list_pages
from cluster_inventory.kube._tasks import gather_bounded
from cluster_inventory.kube.errors import ConflictError, KubeAPIError, NotFoundError

__all__ = [
    "Move",
    "RewriteTally",
    "crd_resource",
    "crd_versions",
    "object_key",
    "rewrite_object",
    "rewrite_objects",
    "served_versions",
    "stored_versions",
    "version_schema",
]

#: Objects rewritten at once.
_REWRITES_IN_FLIGHT = 8


def crd_resource(crd: Mapping[str, Any], version: str) -> Resource:
    spec = crd["spec"]
    return Resource(
        group=str(spec["group"]),
        version=version,
        plural=str(spec["names"]["plural"]),
        kind=str(spec["names"]["kind"]),
        namespaced=spec.get("scope") == "Namespaced",
    )


def crd_versions(crd: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(v["name"]): v for v in crd["spec"]["versions"]}


def served_versions(crd: Mapping[str, Any]) -> list[str]:
    return [name for name, v in crd_versions(crd).items() if v.get("served")]


def version_schema(crd: Mapping[str, Any], version: str) -> Mapping[str, Any] | None:
    schema = (crd_versions(crd)[version].get("schema") or {}).get("openAPIV3Schema")
    return schema if isinstance(schema, Mapping) else None


def object_key(meta: Mapping[str, Any]) -> str:
    return "/".join(str(x) for x in (meta.get("namespace"), meta.get("name")) if x)


def stored_versions(crd: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(v) for v in (crd.get("status") or {}).get("storedVersions") or ())


@dataclass
class RewriteTally:
    """The running tally of our rewrite."""

    objects: int = 0
    rewritten: int = 0
    unchanged: int = 0
    changed_meanwhile: int = 0
    dropped: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


async def rewrite_object(
    client: ApiClient, resource: Resource, meta: Mapping[str, Any], tally: RewriteTally
) -> None:
    body = {
        "metadata": {
            "name": meta["name"],
            **({"namespace": meta["namespace"]} if meta.get("namespace") else {}),
            "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
        }
    }
    try:
        stored = await apply(
            client, resource, body, field_manager=FIELD_MANAGER_STORAGE_MIGRATION, force=False
        )
    except (ConflictError, NotFoundError):
        tally.changed_meanwhile += 1  # updated or deleted since the list: by its writer
        return
    except KubeAPIError as exc:
        if exc.status == 0:
            raise
        tally.failures.append(f"{object_key(meta)}: {exc.message} ({exc.status} {exc.reason})")
        return
    if stored["metadata"].get("resourceVersion") == meta["resourceVersion"]:
        tally.unchanged += 1
    else:
        tally.rewritten += 1


@dataclass(frozen=True, kw_only=True)
class Move:
    """One CRD's move, as the rewrite needs it.

    Attributes:
        crd: The CRD as read after its storage version was switched.
        to: The target version.
        drop_fields: Objects losing fields are rewritten anyway.
        check: Fields are checked (the None conversion; not with a webhook).
    """

    crd: Mapping[str, Any]
    to: str
    drop_fields: bool
    check: bool


async def rewrite_objects(client: ApiClient, move: Move) -> RewriteTally:
    """Rewrite every object through ``move.to``; objects losing fields only if allowed.

    Objects are listed through every other version in ``status.storedVersions`` (each shows
    the objects stored in it whole), each object rewritten once.
    """
    crd, to, drop_fields, check = move.crd, move.to, move.drop_fields, move.check
    sources = [v for v in stored_versions(crd) if v != to]
    tally = RewriteTally()
    target = crd_resource(crd, to)
    schema = version_schema(crd, to)
    served = served_versions(crd)
    seen: set[str] = set()
    for version in [v for v in sources if v in served] or [to]:
        async for page in list_pages(client, crd_resource(crd, version)):
            calls: list[Callable[[], Awaitable[None]]] = []
            for item in page.get("items") or ():
                meta = item.get("metadata") or {}
                if meta.get("uid") in seen:
                    continue
                seen.add(str(meta.get("uid")))
                tally.objects += 1
                lost = dropped_fields(item, schema) if check else []
                if lost and not drop_fields:
                    tally.failures.append(f"{object_key(meta)}: would lose {', '.join(lost)}")
                    continue
                tally.dropped += [f"{object_key(meta)}: {path}" for path in lost]
                calls.append(functools.partial(rewrite_object, client, target, meta, tally))
            await gather_bounded(calls, _REWRITES_IN_FLIGHT)
    return tally

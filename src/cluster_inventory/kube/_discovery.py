"""From a kind (``group/version/Kind``) to the REST resource that serves it.

client-go's RESTMapper asks the server's discovery documents. We do the same, but only for
kinds this project does not already know (:mod:`cluster_inventory.kube.resources`), so that
engaging a thousand clusters does not cost a thousand discovery requests for ConfigMaps.
"""

from __future__ import annotations

import dataclasses as _dataclasses

from cluster_inventory.kube import resources as _known
from cluster_inventory.kube._k8s import ApiClient
from cluster_inventory.kube._resources import Resource, request
from cluster_inventory.kube.errors import KindNotFoundError, NotFoundError

__all__ = ["cluster_profiles_resource", "known_kind", "parse_kind", "resolve_kind"]

_KNOWN: dict[tuple[str, str, str], Resource] = {
    (r.group, r.version, r.kind): r
    for r in (getattr(_known, name) for name in _known.__all__)
    if isinstance(r, Resource)
}


def parse_kind(kind: str) -> tuple[str, str, str]:
    """Split ``group/version/Kind`` (or ``version/Kind`` for the core group) into its parts.

    ``apps/v1/Deployment`` gives ``("apps", "v1", "Deployment")`` and ``v1/ConfigMap``
    gives ``("", "v1", "ConfigMap")``; ``/v1/ConfigMap`` is accepted too.

    Raises:
        ValueError: Not two or three non-empty parts; the message quotes the value.
    """
    parts = kind.split("/")
    if len(parts) == 3 and parts[0] == "" and parts[1] and parts[2]:
        return "", parts[1], parts[2]
    if len(parts) == 2 and all(parts):
        return "", parts[0], parts[1]
    if len(parts) == 3 and all(parts):
        return parts[0], parts[1], parts[2]
    raise ValueError(f"kind {kind!r} is not group/version/Kind (core group: v1/Kind)")


def known_kind(kind: str) -> Resource | None:
    """The resource of a kind this project knows (no request), or None.

    Raises:
        ValueError: ``kind`` is malformed.
    """
    return _KNOWN.get(parse_kind(kind))


async def resolve_kind(client: ApiClient, kind: str) -> Resource:
    """Return the resource serving ``kind`` (``group/version/Kind``) on this cluster.

    Well-known kinds are answered without a request; others read the discovery document of
    their group version (``/api/v1`` or ``/apis/<group>/<version>``) and pick the resource,
    not a subresource, of that kind.

    Raises:
        ValueError: ``kind`` is malformed.
        KindNotFoundError: The cluster does not serve that group version or kind.
        KubeAPIError: Discovery failed for another reason.
        ServerUnavailableError: The cluster could not be reached.
    """
    known = known_kind(kind)
    if known is not None:
        return known
    group, version, name = parse_kind(kind)
    path = f"/apis/{group}/{version}" if group else f"/api/{version}"
    try:
        doc = await request(client, "GET", path, target=f"discovery {path}")
    except NotFoundError as exc:
        raise KindNotFoundError(f"{kind}: the cluster does not serve {path}") from exc
    for entry in (doc or {}).get("resources") or []:
        if entry.get("kind") == name and "/" not in str(entry.get("name", "")):
            return Resource(
                group=group,
                version=version,
                plural=str(entry["name"]),
                kind=name,
                namespaced=bool(entry.get("namespaced", True)),
            )
    raise KindNotFoundError(f"{kind}: no resource of kind {name!r} in {path}")


async def cluster_profiles_resource(client: ApiClient) -> Resource:
    """The ClusterProfile resource at the version a reader should use on this hub.

    ``multicluster.x-k8s.io/v1alpha2`` where the hub serves it (it is the preferred version
    once served, as kubectl sees it), else v1alpha1: hubs whose CRD serves only v1alpha1
    (OCM's, an older release) keep working. Writers stay on v1alpha1, the storage version,
    since a write through v1alpha2 drops v1alpha1-only fields such as ``credentialProviders``.

    Raises:
        KubeError: The hub did not answer the discovery request (a hub without the group at
            all gives v1alpha1, and the request that follows reports it).
    """
    try:
        group = await request(client, "GET", f"/apis/{_known.CLUSTER_PROFILES.group}")
    except NotFoundError:
        return _known.CLUSTER_PROFILES
    served = {v.get("version") for v in group.get("versions") or ()}
    if "v1alpha2" in served:
        return _dataclasses.replace(_known.CLUSTER_PROFILES, version="v1alpha2")
    return _known.CLUSTER_PROFILES

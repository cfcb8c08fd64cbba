"""From a kind (``group/version/Kind``) to the REST resource that serves it.

client-go's RESTMapper asks the server's discovery documents. We do the same, but only for
kinds this project does not already know (:mod:`cluster_inventory.kube.resources`), so that
engaging a thousand clusters does not cost a thousand discovery requests for ConfigMaps.
"""

from __future__ import annotations

import dataclasses as _dataclasses

from cluster_inventory.api.versions import NEWEST_VERSION_PATH, read_version
from cluster_inventory.kube import resources as _known
from cluster_inventory.kube._k8s import ApiClient
from cluster_inventory.kube._resources import Resource, request
from cluster_inventory.kube.errors import KindNotFoundError, NotFoundError

__all__ = [
    "cluster_profiles_resource",
    "known_kind",
    "parse_kind",
    "placement_decisions_resource",
    "resolve_kind",
    "served_resource",
]

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


async def served_resource(client: ApiClient, resource: Resource) -> Resource:
    """``resource`` (a ``multicluster.x-k8s.io`` one) at the version a reader should use.

    v1alpha2 where the hub's v1alpha2 discovery document lists this resource, else v1alpha1
    (:func:`cluster_inventory.api.versions.read_version`): the resource's own discovery, not
    the group's, so a ClusterProfile CRD serving v1alpha1 only beside a PlacementDecision
    CRD serving v1alpha2 (re-applying OCM's or upstream's v1alpha1 ClusterProfile CRD leaves
    that) is read through v1alpha1. One GET per call.

    Args:
        client: A hub client.
        resource: :data:`~cluster_inventory.kube.resources.CLUSTER_PROFILES` or
            :data:`~cluster_inventory.kube.resources.PLACEMENT_DECISIONS`.

    Raises:
        KubeError: The hub did not answer the discovery request (a 404, no v1alpha2 at all,
            gives v1alpha1, and the request that follows reports a missing CRD).
    """
    try:
        newest = await request(
            client, "GET", NEWEST_VERSION_PATH, target=f"discovery {NEWEST_VERSION_PATH}"
        )
    except NotFoundError:
        newest = None
    return _dataclasses.replace(resource, version=read_version(newest, resource.plural))


async def cluster_profiles_resource(client: ApiClient) -> Resource:
    """The ClusterProfile resource at the version a reader should use on this hub.

    :func:`served_resource` of ClusterProfile. Writers stay on v1alpha1, which every
    ClusterProfile CRD serves, since a write through v1alpha2 drops v1alpha1-only fields
    such as ``credentialProviders`` (docs/crds.md, "Fields of one version only").

    Raises:
        KubeError: The hub did not answer the discovery request.
    """
    return await served_resource(client, _known.CLUSTER_PROFILES)


async def placement_decisions_resource(client: ApiClient) -> Resource:
    """The PlacementDecision resource at the version a reader should use on this hub.

    :func:`served_resource` of PlacementDecision, resolved apart from ClusterProfile.

    Raises:
        KubeError: The hub did not answer the discovery request.
    """
    return await served_resource(client, _known.PLACEMENT_DECISIONS)

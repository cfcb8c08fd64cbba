"""Which version of a ``multicluster.x-k8s.io`` resource a reader reads on a hub.

Discovery per resource, not per group: re-applying OCM's or upstream's v1alpha1 ClusterProfile
CRD leaves a hub whose ClusterProfile serves v1alpha1 only while PlacementDecision serves
v1alpha2 as well, so the group's list of versions says nothing about one resource (the group
lists v1alpha2, and a ClusterProfile read through it answers 404). A reader asks the v1alpha2
``APIResourceList`` whether it lists the resource, as client-go's RESTMapper maps a resource,
not a group, to its versions.

Pure: the callers make the one GET (the CLI's fast ``get`` with the standard library,
``kube.served_resource`` with the full client) and hand the answer here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster_inventory.api.constants import GROUP, V1ALPHA1, V1ALPHA2

__all__ = ["NEWEST_VERSION_PATH", "read_version", "resource_entry"]

#: The discovery document (``APIResourceList``) of the newest version readers use.
NEWEST_VERSION_PATH = f"/apis/{GROUP}/{V1ALPHA2}"


def resource_entry(
    resource_list: Mapping[str, Any] | None, plural: str
) -> Mapping[str, Any] | None:
    """The ``APIResource`` entry for ``plural`` (not a subresource) in a discovery document.

    Args:
        resource_list: A decoded ``APIResourceList`` (``/apis/<group>/<version>``), or None
            when the hub answered 404 (it serves no resource of that group version).
        plural: The resource, e.g. ``clusterprofiles``.

    Returns:
        The entry (``name``, ``kind``, ``namespaced``, ``verbs``, ``storageVersionHash``), or
        None when the list does not name the resource. A malformed document reads as absent.
    """
    if not isinstance(resource_list, Mapping):
        return None
    entries = resource_list.get("resources")
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, Mapping) and entry.get("name") == plural:
            return entry
    return None


def read_version(newest: Mapping[str, Any] | None, plural: str) -> str:
    """The version to read ``plural`` through: v1alpha2 where its discovery lists it.

    Args:
        newest: The decoded ``APIResourceList`` at :data:`NEWEST_VERSION_PATH`, or None for a
            404 (no CRD of the group serves v1alpha2).
        plural: ``clusterprofiles`` or ``placementdecisions``.

    Returns:
        ``"v1alpha2"`` if the document lists ``plural``, else ``"v1alpha1"``, which every
        ClusterProfile and PlacementDecision CRD (upstream's v0.1.x, OCM's, ours) serves.
    """
    return V1ALPHA2 if resource_entry(newest, plural) is not None else V1ALPHA1

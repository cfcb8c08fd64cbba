"""The one step of a conformance run that reads: the hub's discovery and its ClusterProfiles."""

from __future__ import annotations

from typing import Any

from cluster_inventory.api.versions import NEWEST_VERSION_PATH, resource_entry
from cluster_inventory.api.views import ProfileView
from cluster_inventory.integrations.conformance._results import Served, evaluate, report

__all__ = ["run"]


async def run(client: Any, namespace: str, cluster_manager: str | None = None) -> dict[str, Any]:
    """Read the hub and return the report document.

    Args:
        client: An API client for the hub (:func:`cluster_inventory.kube.new_client`).
        namespace: The inventory namespace.
        cluster_manager: Check only profiles of this manager (``spec.clusterManager.name``).

    Raises:
        SourceUnavailableError: The namespace does not exist (nothing to judge: a typo is
            not a non-conformant inventory), or the hub serves no v1alpha2 and refuses the
            v1alpha1 LIST.
        KubeError: The hub could not be reached at all (the discovery request failed for
            another reason than the group being absent).
    """
    import dataclasses

    from cluster_inventory import kube

    try:
        await kube.get(client, kube.NAMESPACES, namespace)
    except kube.NotFoundError:
        raise kube.SourceUnavailableError(
            f"namespace {namespace}", "it does not exist on the hub"
        ) from None
    except kube.ForbiddenError:
        pass  # may not read namespaces; the LIST below still answers for the inventory
    v2 = dataclasses.replace(kube.CLUSTER_PROFILES, version="v1alpha2")
    served = Served(served=False, namespaced=False, listable=False, error="not served")
    profiles: list[dict[str, Any]] = []
    try:
        resources = await kube.request(client, "GET", NEWEST_VERSION_PATH)
    except kube.NotFoundError:
        resources = None
    entry = resource_entry(resources, v2.plural)
    if entry is not None:
        try:
            listed = await kube.list_objects(client, v2, namespace)
            profiles = list(listed.get("items") or ())
            served = Served(served=True, namespaced=bool(entry.get("namespaced")), listable=True)
            if not entry.get("namespaced"):
                served = dataclasses.replace(served, error="clusterprofiles is not namespaced")
        except kube.KubeAPIError as exc:
            served = Served(
                served=True,
                namespaced=bool(entry.get("namespaced")),
                listable=False,
                error=str(exc),
            )
    if not served.served:
        # A hub that serves only v1alpha1 still gets every other check, on what it stores.
        try:
            listed = await kube.list_objects(client, kube.CLUSTER_PROFILES, namespace)
        except kube.KubeAPIError as exc:
            # An inventory that cannot be read is not an empty one.
            raise kube.SourceUnavailableError(
                f"ClusterProfiles in namespace {namespace}", str(exc)
            ) from None
        profiles = list(listed.get("items") or ())
    if cluster_manager:
        profiles = [p for p in profiles if ProfileView.of(p).cluster_manager == cluster_manager]
    return report(evaluate(served, profiles), namespace=namespace, cluster_manager=cluster_manager)

"""Reading the Events about one object, as ``kubectl describe`` lists them.

Recording is :mod:`cluster_inventory.kube.events`; this is the other end, for the readers of
what happened (``cluster-inventory describe``, the dashboard's member page). The API server
picks the Events (a field selector on ``regarding``, as kubectl describe asks it), so a
reader never lists a namespace's Events to filter them here, and the object's UID keeps the
Events of an earlier object of the same name out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster_inventory.api import objects
from cluster_inventory.kube._k8s import ApiClient
from cluster_inventory.kube._resources import list_objects
from cluster_inventory.kube.resources import EVENTS

__all__ = ["events_about"]


async def events_about(
    client: ApiClient, obj: Mapping[str, Any], *, kind: str | None = None
) -> list[dict[str, Any]]:
    """The ``events.k8s.io/v1`` Events whose ``regarding`` is ``obj``: one LIST.

    Args:
        client: API client of the cluster holding ``obj``.
        obj: The object as stored (``kind``, ``metadata.name``, ``metadata.namespace`` and,
            when set, ``metadata.uid`` select the Events).
        kind: Its kind, where ``obj`` does not say (an item of a List may not).

    Returns:
        The Events, as the server listed them (decode each with
        :meth:`~cluster_inventory.api.views.EventView.of`).

    Raises:
        ForbiddenError: The reader may not list Events in the object's namespace (a reader
            of profiles often may not; callers show the rest without them).
        KubeError: The server could not be reached or refused otherwise.
    """
    meta = objects.meta(obj)
    about = {
        "regarding.kind": kind or str(obj.get("kind") or ""),
        "regarding.name": meta.get("name"),
    }
    if meta.get("uid"):
        about["regarding.uid"] = meta["uid"]
    selector = ",".join(f"{key}={value}" for key, value in about.items())
    namespace = meta.get("namespace") or None
    listed = await list_objects(client, EVENTS, namespace, field_selector=selector)
    return [e for e in listed.get("items") or () if isinstance(e, dict)]

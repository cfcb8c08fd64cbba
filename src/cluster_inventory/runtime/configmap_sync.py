"""Keep one hub ConfigMap in sync on every engaged member cluster.

:class:`ConfigMapSync` is the runtime's example controller, built only on the runtime's public
API (``docs/runtime.md``). ``examples/fleet_configmap_sync.py`` runs it as a process; it
ships in the package because ``cluster-inventory demo`` runs it as the demo's consumer:

- a reconciler for ``v1/ConfigMap`` in the target namespace of each member writes the hub's
  data there with server-side apply, and deletes the copy if the hub's ConfigMap is gone;
- a hub watch on the source ConfigMap queues it on every cluster when it changes, an engage
  hook queues it on each newly engaged cluster, and the member watch puts back any copy
  edited or deleted by hand.

Only copies carrying this controller's origin annotation are ever deleted.
"""

from __future__ import annotations

import contextlib
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    ANNOTATION_SYNCED_FROM,
    FIELD_MANAGER_CONFIGMAP_SYNC,
    LABEL_MANAGED_BY,
)
from cluster_inventory.controller import TerminalError
from cluster_inventory.runtime.cluster import EngagedCluster
from cluster_inventory.runtime.fleet import FleetManager
from cluster_inventory.runtime.reconciler import FleetController, Request, Result

__all__ = ["ConfigMapSync"]


class ConfigMapSync:
    """Copy the hub ConfigMap ``source_namespace/name`` to ``target_namespace`` on every cluster.

    Args:
        fleet: The fleet manager (not yet started).
        source_namespace: Namespace of the ConfigMap on the hub.
        name: Name of the ConfigMap (the same on the members).
        target_namespace: Namespace of the copies on the members (must exist there).
    """

    def __init__(
        self, fleet: FleetManager, source_namespace: str, name: str, target_namespace: str
    ) -> None:
        self.name = name
        self.target_namespace = target_namespace
        self.origin = f"{source_namespace}/{name}"
        self.source = fleet.watch_hub(
            "v1/ConfigMap",
            lambda _: self.controller.enqueue_all(target_namespace, name),
            namespace=source_namespace,
            field_selector=f"metadata.name={name}",
        )
        self.controller: FleetController = fleet.add_reconciler(
            "v1/ConfigMap",
            self.reconcile,
            name="configmap-sync",
            namespace=target_namespace,
            max_concurrent_reconciles=4,
        )
        fleet.on_engage(self.engaged)

    async def engaged(self, cluster: EngagedCluster) -> None:
        """A new cluster may lack the copy entirely (no watch event would say so)."""
        self.controller.enqueue(Request(cluster.name, self.target_namespace, self.name))

    async def reconcile(self, request: Request, cluster: EngagedCluster) -> Result | None:
        """Make the member's copy equal the hub's ConfigMap (level-based)."""
        if request.name != self.name:
            return None
        hub_copy = self.source.get(f"{self.source.namespace}/{self.name}")
        current = cluster.get("v1/ConfigMap", self.name, self.target_namespace)
        if hub_copy is None:
            if (
                current is not None
                and _annotations(current).get(ANNOTATION_SYNCED_FROM) == self.origin
            ):
                with contextlib.suppress(kube.NotFoundError):
                    await kube.delete(
                        cluster.client, kube.CONFIG_MAPS, self.name, self.target_namespace
                    )
            return None
        data = hub_copy.get("data") or {}
        if (
            current is not None
            and (current.get("data") or {}) == data
            and _annotations(current).get(ANNOTATION_SYNCED_FROM) == self.origin
        ):
            return None
        body = {
            "metadata": {
                "name": self.name,
                "namespace": self.target_namespace,
                "labels": {LABEL_MANAGED_BY: FIELD_MANAGER_CONFIGMAP_SYNC},
                "annotations": {ANNOTATION_SYNCED_FROM: self.origin},
            },
            "data": data,
        }
        try:
            await kube.apply(
                cluster.client,
                kube.CONFIG_MAPS,
                body,
                field_manager=FIELD_MANAGER_CONFIGMAP_SYNC,
                force=True,
            )
        except kube.InvalidError as exc:
            # The member refuses this object as it is: retrying cannot help until the hub's
            # ConfigMap changes (which queues it again).
            raise TerminalError(f"{cluster.name}: {exc}") from exc
        return None


def _annotations(obj: dict[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in objects.annotations_of(obj).items()}

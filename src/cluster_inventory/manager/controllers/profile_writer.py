"""The one writer of the cluster manager's ClusterProfiles: on change only, fenced, counted.

OCM's hub controllers write every status through one ``patcher.Patcher``; here every write
of a profile goes through :class:`ProfileWriter` (``docs/manager.md``, ``docs/scale.md``):

- its labels and spec (:meth:`ProfileWriter.metadata`), created once by the inventory
  controller and applied again by the status controller only when they differ;
- its status, applied only when
  :func:`~cluster_inventory.manager.rules.status.status_matches` says it differs
  (KEP-4322: fewer than one write per 30 s per profile; at rest, none), counted in
  ``cluster_inventory_profile_status_writes_total``; the echo of our own write (labels or
  status) is known by its resourceVersion (:meth:`ProfileWriter.is_echo`);
- sharded, every write is conditional on the resourceVersion read and names its holder
  (:mod:`~cluster_inventory.manager.rules.fence`); one the hub refuses with 409 is counted in
  ``cluster_inventory_shard_fenced_writes_total`` and raised as :class:`FencedWrite`;
- giving a profile up to another replica (:meth:`ProfileWriter.release`) and deleting it with
  its token Secret (:meth:`ProfileWriter.delete`);
- the ``cluster_inventory_profiles`` gauge, by namespace and ControlPlaneHealthy, counted as
  profiles are written and go.

Every write is server-side apply with the field manager ``cluster-inventory-manager``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api import check_storable, objects
from cluster_inventory.api.constants import (
    FIELD_MANAGER_CLUSTER_MANAGER,
    LABEL_CLUSTER_MANAGER,
    LABEL_INVENTORY_MEMBER_ID,
)
from cluster_inventory.manager.controllers.hub import HubView
from cluster_inventory.manager.rules.inventory import ProfileKey
from cluster_inventory.manager.rules.registration import Registration
from cluster_inventory.manager.rules.status import status_matches

__all__ = ["FencedWrite", "ProfileWriter"]


class FencedWrite(Exception):
    """The hub refused a fenced write: the profile changed since it was read (409).

    Another replica took it, or our cache is behind: read it again shortly, never overwrite.

    Attributes:
        key: The profile.
    """

    def __init__(self, key: ProfileKey) -> None:
        self.key = key
        super().__init__(f"ClusterProfile {key}: changed since it was read (fenced write)")


class ProfileWriter:
    """Writes this manager's ClusterProfiles; every write of one goes through here.

    Args:
        hub: The hub view (client, settings, metrics, and the fence once sharded).
    """

    def __init__(self, hub: HubView) -> None:
        self.hub = hub
        #: The resourceVersions our last two writes of each profile made, the latest last
        #: (their echoes are skipped): a claim writes the labels, then the status, and the
        #: labels' echo arriving between the two carries nothing new either.
        self.written: dict[ProfileKey, tuple[str, ...]] = {}
        #: ControlPlaneHealthy of each kept profile, counted into the profiles gauge.
        self._health: dict[ProfileKey, str] = {}
        self._counts: Counter[tuple[str, str]] = Counter()

    def is_echo(self, key: ProfileKey, version: object) -> bool:
        """True if ``version`` of profile ``key`` is what one of our last two writes made."""
        return version in self.written.get(key, ())

    def _made(self, key: ProfileKey, written: dict[str, Any]) -> None:
        """Record the version our write of ``key`` made (see :attr:`written`)."""
        version = str(objects.meta(written).get("resourceVersion"))
        self.written[key] = (*self.written.get(key, ())[-1:], version)

    def metadata(
        self, key: ProfileKey, reg: Registration, member_id: str, holder: str | None = None
    ) -> dict[str, Any]:
        """Labels and spec of a profile; sharded, the holder annotation too (ours by default).

        Every replica applies with the same field manager, so every apply carries every
        field (one left out would be removed).
        """
        name = self.hub.config.name
        body: dict[str, Any] = {
            "metadata": {
                "name": key.name,
                "namespace": key.namespace,
                "labels": {LABEL_CLUSTER_MANAGER: name, LABEL_INVENTORY_MEMBER_ID: member_id},
            },
            "spec": {"displayName": reg.display_name, "clusterManager": {"name": name}},
        }
        if self.hub.fence is not None:
            body["metadata"]["annotations"] = self.hub.fence.annotations(holder)
        return body

    async def create(
        self, key: ProfileKey, reg: Registration, member_id: str
    ) -> dict[str, Any] | None:
        """Create profile ``key``; None once created, else the profile that exists already.

        Raises:
            KubeAPIError: The hub refused (retried by the caller's queue).
        """
        try:
            await kube.create(
                self.hub.client, kube.CLUSTER_PROFILES, self.metadata(key, reg, member_id)
            )
        except kube.AlreadyExistsError:
            return await kube.get(
                self.hub.client, kube.CLUSTER_PROFILES, key.name, namespace=key.namespace
            )
        return None

    async def apply_metadata(
        self,
        key: ProfileKey,
        reg: Registration,
        member_id: str,
        current: dict[str, Any],
        version: str | None,
    ) -> str | None:
        """Apply the labels and spec of ``key`` over the cached ``current``.

        Args:
            key: The profile.
            reg: Its registration (display name).
            member_id: Its member-id label.
            current: The profile as cached (what the write is made on).
            version: Sharded, the resourceVersion the write is conditional on; else None.

        Returns:
            The version the next fenced write is conditional on (None unsharded).

        Raises:
            FencedWrite: Sharded, the profile changed since ``version``.
            KubeAPIError: The hub refused (retried by the caller's queue).
        """
        body = self.metadata(key, reg, member_id)
        if version is not None:
            body["metadata"]["resourceVersion"] = version
        written = await self._apply(key, body, version)
        self._made(key, written)
        if self.hub.fence is not None:
            return self.hub.fence.wrote(key, current, written)
        return version

    async def apply_status(
        self,
        key: ProfileKey,
        current: dict[str, Any],
        status: dict[str, Any],
        version: str | None,
    ) -> bool:
        """Apply ``status`` to profile ``key`` unless the cached ``current`` says it already.

        Checked as the hub would store it first (:func:`~cluster_inventory.api.check_storable`).

        Returns:
            True if it was written (counted), False if nothing changed.

        Raises:
            FencedWrite: Sharded, the profile changed since ``version``.
            StorableError: The status is one the hub would refuse.
            KubeAPIError: The hub refused (retried by the caller's queue).
        """
        if status_matches(status, current.get("status")):
            return False
        check_storable({"metadata": objects.meta(current), "status": status})
        meta: dict[str, Any] = {"name": key.name, "namespace": key.namespace}
        if version is not None:
            meta["resourceVersion"] = version
        # One member's change is one such write per inventory, all on the hub: no second
        # (strict) decoding of a body built from a dict (see kube.apply).
        written = await self._apply(key, {"metadata": meta, "status": status}, version, True)
        self._made(key, written)
        if self.hub.fence is not None:
            self.hub.fence.wrote(key, current, written)
        self.hub.metrics.status_writes.inc()
        return True

    async def release(self, key: ProfileKey, reg: Registration) -> None:
        """Give up holding a profile whose member moved to another replica (one write).

        Conditional on the cached resourceVersion: if another replica holds it already, or
        the cache is behind, the 409 means there is nothing left to give up.
        """
        fence = self.hub.fence
        current = self.hub.profiles.get(str(key))
        if fence is None or current is None:
            return
        holder, version = fence.holding(key, current)
        fence.forget(key)
        if holder != fence.identity:
            return
        member_id = str(objects.labels_of(current).get(LABEL_INVENTORY_MEMBER_ID))
        body = self.metadata(key, reg, member_id, "")
        body["metadata"]["resourceVersion"] = version
        try:
            await kube.apply(
                self.hub.client,
                kube.CLUSTER_PROFILES,
                body,
                field_manager=FIELD_MANAGER_CLUSTER_MANAGER,
            )
        except (kube.ConflictError, kube.NotFoundError):
            return
        self.count_health(key, None)

    async def delete(self, key: ProfileKey) -> None:
        """Delete profile ``key`` and its token Secret (one gone already is no error).

        Raises:
            KubeAPIError: The hub refused (retried by the caller's queue).
        """
        client = self.hub.client
        await kube.delete(client, kube.CLUSTER_PROFILES, key.name, namespace=key.namespace)
        await kube.delete(client, kube.SECRETS, key.name, namespace=key.namespace)
        self.written.pop(key, None)
        if self.hub.fence is not None:
            self.hub.fence.forget(key)
        self.count_health(key, None)

    def count_health(self, key: ProfileKey, status: str | None) -> None:
        """Record a profile's ControlPlaneHealthy (None: gone) in the profiles gauge."""
        before = self._health.get(key)
        if before == status:
            return
        # Counted as they change: a recount of every profile at each change was O(N) per
        # profile, 3.5% of a replica's CPU while it took 1,000 members over (py-spy).
        if before is not None:
            self._counts[key.namespace, before] -= 1
        if status is None:
            self._health.pop(key, None)
        else:
            self._health[key] = status
            self._counts[key.namespace, status] += 1
        gauge = self.hub.metrics.profiles
        for value in {"True", "False", "Unknown", before or "Unknown", status or "Unknown"}:
            gauge.labels(key.namespace, value).set(self._counts[key.namespace, value])

    async def _apply(
        self, key: ProfileKey, body: dict[str, Any], version: str | None, status: bool = False
    ) -> dict[str, Any]:
        try:
            return await kube.apply(
                self.hub.client,
                kube.CLUSTER_PROFILES,
                body,
                field_manager=FIELD_MANAGER_CLUSTER_MANAGER,
                subresource="status" if status else None,
                field_validation="Ignore" if status else None,
            )
        except kube.ConflictError:
            if version is None:
                raise
            self.hub.metrics.fenced_writes.inc()
            raise FencedWrite(key) from None

"""How a sync writes its target objects: ownership labels, apply, create, delete, Events.

The writes of :class:`~cluster_inventory.integrations.sync.ProfileMirror`, kept apart from its
loop. A target is applied only when it is this instance's (:meth:`TargetWrites.owns`), created
with POST so that a name taken by another owner is reported on the profile and left alone, and
deleted with its uid as a precondition.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api.constants import GROUP, LABEL_SYNC_INSTANCE, V1ALPHA1
from cluster_inventory.api.objects import meta as _meta
from cluster_inventory.integrations.sync._ownership import LABEL_MANAGED_BY, matches, owner_of
from cluster_inventory.kube.events import record_event
from cluster_inventory.kube.informer import object_key

__all__ = ["TargetWrites"]


class TargetWrites:
    """The target writes of a :class:`~cluster_inventory.integrations.sync.ProfileMirror`.

    A base of ``ProfileMirror``, which sets every attribute named here.
    """

    hub: kube.ApiClient
    resource: kube.Resource
    target_namespace: str | None
    field_manager: str
    reporting_controller: str
    instance: str
    identity: str
    log: logging.Logger
    writes: int
    blocked: set[str]
    _reported: dict[str, str]

    def targets_changed(self) -> None:
        """Called when one of our targets appeared or went (hook)."""

    def ownership_labels(self) -> dict[str, str]:
        """The labels every object this instance writes carries."""
        return {LABEL_MANAGED_BY: self.field_manager, LABEL_SYNC_INSTANCE: self.instance}

    def ownership_selector(self) -> str:
        """A label selector matching exactly this instance's objects (server-side)."""
        return ",".join(f"{k}={v}" for k, v in self.ownership_labels().items())

    def owns(self, obj: Mapping[str, Any]) -> bool:
        """True if ``obj`` is this instance's to write.

        Its labels name this sync and this instance, or this sync and no instance (written
        before instances existed: adopted).
        """
        labels = _meta(obj).get("labels") or {}
        return (
            labels.get(LABEL_MANAGED_BY) == self.field_manager
            and labels.get(LABEL_SYNC_INSTANCE, self.instance) == self.instance
        )

    # -- writes ------------------------------------------------------------------------
    def _target_key(self, name: str) -> str:
        return f"{self.target_namespace}/{name}" if self.target_namespace else name

    async def _apply(self, body: Mapping[str, Any]) -> None:
        self.writes += 1
        await kube.apply(self.hub, self.resource, body, field_manager=self.field_manager)

    async def _create(self, body: dict[str, Any], profile: Mapping[str, Any]) -> None:
        # POST, not apply: an existing object of that name that is not ours must stay as it is.
        self.writes += 1
        try:
            await kube.create(
                self.hub,
                self.resource,
                {"apiVersion": self.resource.api_version, "kind": self.resource.kind, **body},
            )
            return
        except kube.AlreadyExistsError:
            pass
        name = str(body["metadata"]["name"])
        existing = await kube.get(self.hub, self.resource, name, self.target_namespace)
        if self.owns(existing):
            # Ours, not yet in the cache: an earlier create that landed although its answer
            # was lost (a reset, a timeout), or one whose watch event is still on its way.
            # Applying the same content again would still be a write (the managed fields
            # move from the create to the apply), so it is applied only if it differs; an
            # object written before instances existed is applied over too.
            if not matches(existing, body):
                await self._apply(body)
            return
        if name not in self.blocked:
            self.blocked.add(name)
            self.targets_changed()
        where = self.resource.describe(self.target_namespace, name)
        owner = owner_of(existing, self.field_manager)
        whose = (
            f"is kept by instance {owner!r} of {self.field_manager}"
            if owner is not None
            else f"is not managed by {self.field_manager} (label {LABEL_MANAGED_BY})"
        )
        await self._warn(
            profile,
            "TargetNameTaken",
            "Sync",
            f"{where} exists and {whose}; it is left alone and no {self.resource.kind} is "
            f"kept for this profile by instance {self.instance!r}",
        )

    async def _delete(self, stored: Mapping[str, Any]) -> None:
        meta = _meta(stored)
        name = str(meta.get("name"))
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if meta.get("uid"):
            body["preconditions"] = {"uid": meta["uid"]}
        self.writes += 1
        try:
            await kube.request(
                self.hub,
                "DELETE",
                self.resource.path(self.target_namespace, name),
                body=body,
                target=self.resource.describe(self.target_namespace, name),
            )
        except (kube.NotFoundError, kube.ConflictError):
            pass  # gone already, or replaced by an object that is not ours to delete

    async def _warn(
        self,
        profile: Mapping[str, Any],
        reason: str,
        action: str,
        note: str,
        *,
        event_type: str = "Warning",
    ) -> None:
        meta = _meta(profile)
        uid = str(meta.get("uid") or "")
        dedupe = f"{uid}/{reason}/{note}"
        if self._reported.get(uid) == dedupe:
            return
        self._reported[uid] = dedupe
        level = logging.WARNING if event_type == "Warning" else logging.INFO
        self.log.log(level, "%s: %s", reason, note, extra={"object": object_key(profile)})
        await record_event(
            self.hub,
            {
                "apiVersion": f"{GROUP}/{V1ALPHA1}",
                "kind": "ClusterProfile",
                "name": meta.get("name"),
                "namespace": meta.get("namespace"),
                "uid": uid,
            },
            reason=reason,
            note=note,
            action=action,
            controller=self.reporting_controller,
            instance=self.identity,
            dedupe=dedupe,
            event_type=event_type,
        )

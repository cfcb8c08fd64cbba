"""One object per ClusterProfile, kept on the hub for a consumer that does not read profiles.

The Argo CD sync (cluster Secrets) and the MultiKueue sync (MultiKueueClusters) are the same
controller with a different renderer, so the loop lives here once, in client-go's shape:

- informers on ClusterProfiles (one per inventory namespace, optional label selector) and
  on the targets this controller made (a server-side label selector on its ownership label,
  so other objects of the kind are never even read);
- a *plan* (``target name -> profile``) computed by the integration's pure ``assign`` over all
  profiles, recomputed lazily: profile events only mark it stale, the next reconcile
  recomputes it once and queues every target whose assignment changed, so 1,000 ADDED
  events cost one computation, not 1,000;
- one work queue keyed by target name; a reconcile renders the assigned profile, compares a
  fingerprint of the rendered object with the one stored on the target (and the content, so
  an edit by hand is put back) and writes (server-side apply, fixed field manager) only when
  they differ; a target no profile is assigned to any more is deleted with its uid as a
  precondition.

Ownership never touches the producer's objects: no finalizer on ClusterProfiles, only our
labels on the targets: ``app.kubernetes.io/managed-by`` names the sync and
``cluster-inventory.dev/sync-instance`` the instance, so two instances of one sync (two
MultiKueue configs over disjoint profiles, say) each see, update and delete only their own
objects, cluster-scoped ones too. A target name taken by an object that is not this
instance's is reported as a Warning Event on the profile (naming the owner) and left alone
(created with POST, never applied over); an object of this sync written before instances
existed (no instance label) is adopted. A profile that cannot be rendered keeps its last
good target and gets a Warning Event naming the field; other profiles go on.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from prometheus_client import REGISTRY, CollectorRegistry, Gauge

from cluster_inventory import kube
from cluster_inventory.api.constants import (
    DEFAULT_SYNC_INSTANCE,
    FIELD_MANAGER_MIRROR,
    REPORTING_CONTROLLER_MIRROR,
)
from cluster_inventory.api.objects import meta as _meta
from cluster_inventory.controller import Controller, Result
from cluster_inventory.integrations.sync._assignment import Assignment, RenderError, RenderPending
from cluster_inventory.integrations.sync._ownership import (
    ANNOTATION_FINGERPRINT,
    fingerprint,
    validate_instance,
)
from cluster_inventory.integrations.sync._ownership import matches as _matches
from cluster_inventory.integrations.sync._targets import TargetWrites
from cluster_inventory.kube.endpoints import default_identity
from cluster_inventory.kube.informer import (
    DELETED,
    object_key,
    strip_managed_fields,
)

__all__ = ["MirrorOptions", "ProfileMirror"]

#: Queue key that recomputes the plan (no target is named with a NUL byte).
_PLAN = "\x00plan"


@dataclass(frozen=True)
class _MirrorMetrics(kube.PerRegistry):
    """The syncs' render failures, by controller.

    A gauge, not a counter: a failed render is not retried until the profile changes, so
    only "how many are failing now" can hold an alert until the cause is fixed.
    """

    render_failing: Gauge = kube.metric(
        Gauge,
        "cluster_inventory_sync_render_failing",
        "Targets whose ClusterProfile does not render (the last good target is kept)",
        ["controller"],
    )


class MirrorOptions(TypedDict, total=False):
    """The settings every sync passes on to :class:`ProfileMirror` (see its arguments)."""

    label_selector: str | None
    workers: int
    registry: CollectorRegistry
    identity: str | None
    instance: str


class ProfileMirror(Controller[str], TargetWrites, abc.ABC):
    """Keep one target object per assigned ClusterProfile (the shared controller loop).

    Subclasses set :attr:`resource`, :attr:`target_namespace`, :attr:`field_manager` and
    :attr:`controller` and implement :meth:`assign` and :meth:`render` (both pure).

    Args:
        hub: API client of the hub (the caller closes it).
        namespaces: Inventory namespaces whose profiles are mirrored.
        label_selector: Only profiles matching this label selector (server-side).
        workers: Targets reconciled at once.
        registry: Prometheus registry of the work queue and reconcile metrics.
        identity: Replica identity (Events' ``reportingInstance``, the Lease holder).
        instance: This sync instance's name (:func:`validate_instance`): its targets carry it
            in ``cluster-inventory.dev/sync-instance`` and it touches no other instance's.

    Raises:
        ValueError: ``workers`` < 1, no namespace, or a bad ``instance``.

    Attributes:
        writes: Write requests sent so far (applies, creates, deletes); an unchanged world
            costs none.
        reconciles: Target reconciles finished so far.
        synced: Set once every informer has listed once.
    """

    resource: kube.Resource
    target_namespace: str | None = None
    field_manager: str = FIELD_MANAGER_MIRROR
    controller: str = "mirror"
    #: Events' ``reportingController``.
    reporting_controller: str = REPORTING_CONTROLLER_MIRROR

    def __init__(
        self,
        hub: kube.ApiClient,
        *,
        namespaces: Sequence[str],
        label_selector: str | None = None,
        workers: int = 4,
        registry: CollectorRegistry = REGISTRY,
        identity: str | None = None,
        instance: str = DEFAULT_SYNC_INSTANCE,
    ) -> None:
        if not namespaces:
            raise ValueError("at least one inventory namespace is needed")
        self.instance = validate_instance(instance)
        self.log = logging.getLogger(f"cluster_inventory.integrations.{self.controller}")
        super().__init__(
            self.controller,
            self.reconcile,
            workers=workers,
            registry=registry,
            describe=self.describe,
            log=self.log,
        )
        self.hub = hub
        self.namespaces = tuple(dict.fromkeys(namespaces))
        self.identity = identity or default_identity()
        self.writes = 0
        self.reconciles = 0
        self.synced = asyncio.Event()
        cache = kube.InformerCache.for_client(hub)
        self._profiles = cache.informer(
            kube.CLUSTER_PROFILES,
            namespaces=self.namespaces,
            label_selector=label_selector,
            name=f"{self.controller} ClusterProfile",
            transform=strip_managed_fields,
        )
        self._targets = cache.informer(
            self.resource,
            namespaces=[self.target_namespace],  # [None]: a cluster-scoped kind
            label_selector=self.ownership_selector(),
            name=f"{self.controller} {self.resource.kind}",
            transform=strip_managed_fields,
        )
        #: Targets whose profile last failed to render (their last good target stays).
        self._render_failed: set[str] = set()
        self._render_failing = _MirrorMetrics.for_registry(registry).render_failing.labels(
            self.controller
        )
        self._render_failing.set(0)
        self._plan: dict[str, Assignment] = {}
        #: Target names held by an object that is not ours (reported, left alone).
        self.blocked: set[str] = set()
        self._by_profile: dict[str, str] = {}
        self._stale = True
        self._reported: dict[str, str] = {}
        # Targets first, then profiles: nothing is judged on half-listed caches. Last in the
        # constructor: a shared informer that holds objects already replays them at once.
        self.watch(self._targets, self._target_changed)
        self.watch(self._profiles, self._profile_changed)

    # -- to implement -----------------------------------------------------------------
    @abc.abstractmethod
    def assign(self, profiles: Sequence[Mapping[str, Any]]) -> dict[str, Assignment]:
        """Map target names to the profiles they are rendered from (pure).

        Args:
            profiles: Every profile of the inventory namespaces, in namespace order then
                name order.
        """

    @abc.abstractmethod
    def render(
        self, profile: Mapping[str, Any], name: str, assignment: Assignment
    ) -> dict[str, Any]:
        """Render the target object ``name`` from ``profile`` (pure).

        Returns:
            The object (``metadata`` with name, namespace, labels and annotations, and the
            kind's content) without the ownership label and fingerprint: the loop adds both.

        Raises:
            RenderError: The profile cannot be rendered (names the field).
        """

    def plan_changed(self) -> None:
        """Called after the plan changed (hook for objects that list every target)."""

    def targets_changed(self) -> None:
        """Called when one of our targets appeared or went (hook, like :meth:`plan_changed`)."""

    def kept(self) -> list[str]:
        """Names of the targets this controller keeps now: assigned and present with our label."""
        return sorted(n for n in self._plan if self._targets.get(self._target_key(n)) is not None)

    # -- events ----------------------------------------------------------------------
    def _profile_changed(
        self, event: str, profile: dict[str, Any], old: dict[str, Any] | None
    ) -> list[str]:
        keys = []
        if (
            event == DELETED
            or old is None
            or _meta(old).get("labels") != _meta(profile).get("labels")
        ):
            # A profile came, went or was relabelled: who gets which target may change.
            self._stale = True
            keys.append(_PLAN)
        target = self._by_profile.get(object_key(profile))
        if target is not None:
            keys.append(target)
        return keys

    def _target_changed(
        self, event: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[str]:
        if event == DELETED or old is None:
            self.targets_changed()
        return [str(_meta(obj).get("name"))]

    def profiles(self) -> list[dict[str, Any]]:
        """Every cached profile, in namespace order then name order."""
        out: list[dict[str, Any]] = []
        for informer in self._profiles.informers:
            out.extend(sorted(informer.items(), key=lambda p: str(_meta(p).get("name"))))
        return out

    def _profile(self, key: str) -> dict[str, Any] | None:
        return self._profiles.get(key)

    def _refresh_plan(self) -> None:
        if not self._stale:
            return
        self._stale = False
        plan = self.assign(self.profiles())
        changed = {n for n in plan.keys() | self._plan.keys() if plan.get(n) != self._plan.get(n)}
        self._plan = plan
        self._by_profile = {a.profile: name for name, a in plan.items()}
        for name in sorted(changed):
            self.queue.add(name)
        if changed:
            self.plan_changed()

    @property
    def plan(self) -> Mapping[str, Assignment]:
        """The current plan (target name to assignment)."""
        return dict(self._plan)

    # -- reconcile -------------------------------------------------------------------
    async def reconcile(self, key: str) -> Result | None:
        """Bring target ``key`` in line with its profile (or delete it if it has none).

        Raises:
            KubeAPIError: A write was refused (the work queue retries with backoff).
        """
        if key == _PLAN:
            self._refresh_plan()
            return None
        self._refresh_plan()
        try:
            return await self._reconcile(key)
        finally:
            self.reconciles += 1

    async def reconcile_extra(self, key: str) -> Result | None:
        """Reconcile a queue key that is not a target name (hook; default: nothing)."""
        return None

    async def _reconcile(self, name: str) -> Result | None:
        if name.startswith("\x00"):
            return await self.reconcile_extra(name)
        stored = self._targets.get(self._target_key(name))
        assignment = self._plan.get(name)
        profile = self._profile(assignment.profile) if assignment else None
        if assignment is None or profile is None:
            self._render_failed.discard(name)
            self._render_failing.set(len(self._render_failed))
            self.blocked.discard(name)
            if stored is not None:
                await self._delete(stored)
            return None
        try:
            body = self.render(profile, name, assignment)
        except RenderPending as exc:
            await self._warn(profile, "Pending", "Render", str(exc), event_type="Normal")
            return None
        except RenderError as exc:
            self._render_failed.add(name)
            self._render_failing.set(len(self._render_failed))
            await self._warn(profile, "RenderFailed", "Render", str(exc))
            return None  # the last good target stays; a profile change queues it again
        self._render_failed.discard(name)
        self._render_failing.set(len(self._render_failed))
        # Rendered again: a later failure, even the same one, is news worth an Event.
        self._reported.pop(str(_meta(profile).get("uid") or ""), None)
        body = self.stamped(body)
        if stored is not None:
            self.blocked.discard(name)
            if _matches(stored, body):
                return None
            await self._apply(body)
            return None
        await self._create(body, profile)
        return None

    def stamped(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` (a render) with this instance's ownership labels and its fingerprint.

        Args:
            body: A rendered target; changed in place.

        Returns:
            ``body``, as this sync writes it.
        """
        labels = dict(_meta(body).get("labels") or {})
        labels.update(self.ownership_labels())
        body["metadata"]["labels"] = labels
        digest = fingerprint(body)
        annotations = dict(_meta(body).get("annotations") or {})
        annotations[ANNOTATION_FINGERPRINT] = digest
        body["metadata"]["annotations"] = annotations
        return body

    # -- lifecycle -------------------------------------------------------------------
    def describe(self, key: str) -> dict[str, str]:
        """Log fields of one reconcile."""
        return {self.resource.kind: key.lstrip("\x00")}

    async def wait_synced(self) -> None:
        """Wait until the targets and the profiles have been listed once.

        Raises:
            KubeAPIError: A first LIST was refused (e.g. 404: a CRD is missing; 403: RBAC).
        """
        await super().wait_synced()
        self.synced.set()

"""The hub's state as the dashboard sees it: informers, one change counter, one overview.

:class:`HubState` keeps an :class:`~cluster_inventory.kube.Informer` per source (client-go's
list and watch, so a change on the hub reaches the page within a watch event's latency, not
a poll period): ClusterProfiles, Placements and PlacementDecisions of the watched inventory
namespaces (every namespace by default), the *metadata* of the Argo CD cluster Secrets our
sync writes (``PartialObjectMetadata``: their data never leaves the API server), and our
MultiKueueClusters. Every event bumps :attr:`HubState.generation` and wakes the waiters of
:meth:`HubState.changed`; the :class:`~cluster_inventory.dashboard.overview.Overview` is
built at most once per generation, when a page asks for it, and each profile is decoded once
per resourceVersion into a :class:`~cluster_inventory.api.views.ProfileView`.

Profiles are required: a hub that refuses them fails :meth:`HubState.start`. The other
sources are optional: one the viewer may not read (403) or that the hub does not serve (404,
no Kueue) is shown as unavailable, with the reason, and not retried.

Events are not watched: a member's page lists the Events about its profiles when it is
shown (:meth:`HubState.events_of`, one LIST per profile, the server filtering on
``regarding``), and a list is reused for :attr:`HubState.events_ttl` seconds, so open pages
refreshing cost the hub at most one LIST per profile per that time, and nothing at rest.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import LABEL_MANAGED_BY
from cluster_inventory.api.views import ProfileView
from cluster_inventory.dashboard.overview import Overview, build
from cluster_inventory.dashboard.rows import MemberRow
from cluster_inventory.integrations.placement import PLACEMENTS
from cluster_inventory.integrations.sync import argocd, multikueue
from cluster_inventory.kube.informer import object_key, strip_managed_fields
from cluster_inventory.kube.object_events import events_about

__all__ = ["HubState", "Source"]

_log = logging.getLogger(__name__)


@dataclasses.dataclass
class Source:
    """One watched collection.

    Attributes:
        name: What the page calls it (``ClusterProfiles``, ``Argo CD Secrets``, ...).
        informer: Its informer (over every watched namespace, or all).
        state: ``syncing``, ``ok`` or ``unavailable``.
        reason: Why it is unavailable, or why reading it fails now ("" when it works).
    """

    name: str
    informer: kube.NamespacedInformer
    state: str = "syncing"
    reason: str = ""

    def items(self) -> list[dict[str, Any]]:
        """Every cached object (none unless synced)."""
        if self.state != "ok":
            return []
        return self.informer.items()

    @property
    def failure(self) -> str:
        """Why reading fails right now (the cache keeps the last good view), or ""."""
        return self.informer.failure or ""


class HubState:
    """Watch the hub and serve :class:`Overview` snapshots of it.

    Args:
        client: An API client for the hub (the viewer's kubeconfig or a ServiceAccount).
        namespaces: Inventory namespaces to watch; empty for every namespace.
        argocd_namespace: Where the Argo CD sync writes cluster Secrets.
        events_ttl: Seconds a profile's listed Events are reused for.
        clock: Monotonic seconds (the reuse of Events).
    """

    def __init__(
        self,
        client: kube.ApiClient,
        namespaces: Sequence[str] = (),
        *,
        argocd_namespace: str = argocd.DEFAULT_NAMESPACE,
        events_ttl: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.namespaces = tuple(dict.fromkeys(namespaces))
        self.argocd_namespace = argocd_namespace
        self.generation = 0
        self.sources: dict[str, Source] = {}
        self.v1alpha2_served = True
        self._wake = asyncio.Event()
        self._views: dict[str, tuple[str, ProfileView]] = {}
        self._overview: tuple[int, Overview] | None = None
        self._tasks = kube.TaskSet("dashboard hub", logger=_log)
        #: Sources started and not stopped yet (each informer's users are counted).
        self._running: list[Source] = []
        self.events_ttl = events_ttl
        self._clock = clock
        #: Profile key and UID -> (when listed, its Events).
        self._events: dict[tuple[str, str], tuple[float, list[dict[str, Any]]]] = {}

    # -- change notification -----------------------------------------------------------
    def _bump(self, *_: object) -> None:
        self.generation += 1
        wake, self._wake = self._wake, asyncio.Event()
        wake.set()

    async def changed(self, since: int) -> int:
        """Wait until :attr:`generation` is past ``since``; return the new generation."""
        while self.generation <= since:
            await self._wake.wait()
        return self.generation

    # -- sources -----------------------------------------------------------------------
    def _informer(
        self, resource: kube.Resource, namespaces: Sequence[str | None], **options: Any
    ) -> kube.NamespacedInformer:
        informer = kube.InformerCache.for_client(self.client).informer(
            resource, namespaces=namespaces, name=f"dashboard {resource.kind}", **options
        )
        informer.add_handler(self._bump)
        informer.add_health_handler(self._bump)
        return informer

    async def start(self) -> None:
        """Start every informer; return once the profiles are listed.

        Raises:
            KubeAPIError: The hub refused to list ClusterProfiles (e.g. 403: the reader has
                no ``list`` on ``clusterprofiles``).
            KubeError: The hub could not be reached for discovery.
        """
        profiles = await kube.cluster_profiles_resource(self.client)
        self.v1alpha2_served = profiles.version == "v1alpha2"
        scoped: list[str | None] = list(self.namespaces) or [None]
        managed_by = f"{LABEL_MANAGED_BY}="
        self.sources = {
            "profiles": Source(
                "ClusterProfiles",
                self._informer(profiles, scoped, transform=strip_managed_fields),
            ),
            "placements": Source(
                "Placements", self._informer(PLACEMENTS, scoped, transform=strip_managed_fields)
            ),
            "decisions": Source(
                "PlacementDecisions",
                self._informer(kube.PLACEMENT_DECISIONS, scoped, transform=strip_managed_fields),
            ),
            "argocd": Source(
                f"Argo CD cluster Secrets ({self.argocd_namespace})",
                self._informer(
                    kube.SECRETS,
                    [self.argocd_namespace],
                    label_selector=f"{argocd.LABEL_SECRET_TYPE}=cluster,"
                    f"{managed_by}{argocd.FIELD_MANAGER}",
                    metadata_only=True,
                    transform=strip_managed_fields,
                ),
            ),
            "multikueue": Source(
                "MultiKueueClusters",
                self._informer(
                    multikueue.MULTIKUEUE_CLUSTERS,
                    [None],
                    label_selector=f"{managed_by}{multikueue.FIELD_MANAGER}",
                    transform=strip_managed_fields,
                ),
            ),
        }
        for source in self.sources.values():
            source.informer.start()
        self._running = list(self.sources.values())
        required = self.sources["profiles"]
        try:
            await self._synced(required)
        except BaseException:
            await self.stop()
            raise
        for key, source in self.sources.items():
            if key != "profiles":
                self._tasks.spawn(self._optional(source), name=f"list {source.name}")

    async def _synced(self, source: Source) -> None:
        await source.informer.wait_synced()
        source.state = "ok"
        self._bump()

    async def _optional(self, source: Source) -> None:
        try:
            await self._synced(source)
        except kube.KubeAPIError as exc:
            source.state, source.reason = "unavailable", _why(exc)
            _log.info("dashboard: %s: %s", source.name, source.reason)
            await source.informer.stop()
            self._bump()

    async def stop(self) -> None:
        """Stop every informer and task."""
        await self._tasks.stop()
        running, self._running = self._running, []
        for source in running:
            if source.state != "unavailable":  # an unavailable one was stopped already
                await source.informer.stop()
        self._bump()  # wake every waiter: a stream ends with the state

    # -- snapshots ---------------------------------------------------------------------
    def _view(self, obj: dict[str, Any]) -> ProfileView:
        key = object_key(obj)
        rv = str(objects.meta(obj).get("resourceVersion") or "")
        cached = self._views.get(key)
        if cached is not None and cached[0] == rv and rv:
            return cached[1]
        view = ProfileView.of(obj)
        self._views[key] = (rv, view)
        return view

    def overview(self) -> Overview:
        """The overview of the current generation (built once per generation)."""
        if self._overview is not None and self._overview[0] == self.generation:
            return self._overview[1]
        generation = self.generation
        raw = self.sources["profiles"].items() if self.sources else []
        views = [self._view(obj) for obj in raw]
        live = {v.key for v in views}
        for key in [k for k in self._views if k not in live]:
            del self._views[key]
        items = {k: s.items() for k, s in self.sources.items()}
        built = build(
            views,
            placements=items.get("placements", ()),
            decisions=items.get("decisions", ()),
            argocd_secrets=items.get("argocd", ()),
            multikueue_clusters=items.get("multikueue", ()),
            namespaces=self.namespaces,
            v1alpha2_served=self.v1alpha2_served,
        )
        self._overview = (generation, built)
        return built

    async def events_of(self, row: MemberRow) -> tuple[dict[str, list[dict[str, Any]]], str]:
        """The Events about each profile of ``row``, and why some could not be read.

        One LIST per profile (concurrently), each reused for :attr:`events_ttl` seconds.

        Returns:
            ``namespace/name`` -> its Events, and "" or the reason they are missing
            (``forbidden to this reader``: the viewer may read profiles but not Events).
        """
        now = self._clock()
        for key in [k for k, (at, _) in self._events.items() if now - at > self.events_ttl]:
            del self._events[key]

        async def listed(view: ProfileView) -> list[dict[str, Any]]:
            cached = self._events.get((view.key, view.uid))
            if cached is not None:
                return cached[1]
            found = await events_about(self.client, view.raw, kind=kube.CLUSTER_PROFILES.kind)
            self._events[(view.key, view.uid)] = (self._clock(), found)
            return found

        results = await asyncio.gather(*(listed(v) for v in row.profiles), return_exceptions=True)
        events: dict[str, list[dict[str, Any]]] = {}
        problems: list[str] = []
        for view, result in zip(row.profiles, results, strict=True):
            if isinstance(result, kube.KubeAPIError):
                problems.append(f"{view.key}: {_why(result)}")
            elif isinstance(result, kube.KubeError):
                problems.append(f"{view.key}: {result}")
            elif isinstance(result, BaseException):
                raise result
            else:
                events[view.key] = result
        return events, "; ".join(problems)

    @property
    def synced(self) -> bool:
        """The profiles have been listed."""
        source = self.sources.get("profiles")
        return source is not None and source.state == "ok"


def _why(exc: kube.KubeAPIError) -> str:
    if exc.status == 403:
        return "forbidden to this reader"
    if exc.status == 404:
        return "not served by this hub"
    return f"refused ({exc.status})"

"""The ClusterProfile provider: which member clusters to engage, found on the hub.

What multicluster-runtime's cluster-inventory-api provider does for Go, without its weak
spots (docs/runtime.md, "Compared with multicluster-runtime's provider"): readiness is
re-checked and an unhealthy cluster can be disengaged by policy; a cluster is rebuilt only when
its access inputs (the profile's access provider or this consumer's provider file) change,
not on every status update; profiles naming one member from several inventories can be
engaged once; engagement runs on several workers, so one unreachable member does not stall
the others.

Flow: an informer watches ClusterProfiles on the hub; each change queues the profile's key
(controller ``clusterprofile``); a worker reads the profile once through
:class:`~cluster_inventory.api.views.ProfileView`, asks
:func:`~cluster_inventory.runtime.engagement.plan_engagement` what to do and tells the
fleet manager (a :class:`~cluster_inventory.runtime.provider.ClusterAware`) to engage,
rebuild or disengage. Building clusters and running reconcilers is the fleet manager's part.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api.constants import LABEL_DECISION_KEY
from cluster_inventory.controller import Workers
from cluster_inventory.credentials import ProviderConfig
from cluster_inventory.kube.informer import (
    DELETED,
    EventHandler,
    Informer,
    object_key,
    strip_managed_fields,
)
from cluster_inventory.kube.workqueue import WorkQueue, WorkQueueMetrics
from cluster_inventory.runtime._metrics import FleetMetrics
from cluster_inventory.runtime.decisions import group_decisions
from cluster_inventory.runtime.engagement import EngagementPolicy, control_plane_healthy
from cluster_inventory.runtime.errors import FleetError
from cluster_inventory.runtime.providers._profile_engagement import (
    MEMBER_INDEX,
    ProfileEngagement,
    Readiness,
)
from cluster_inventory.runtime.providers.provider_file import ProviderFile

if TYPE_CHECKING:
    from cluster_inventory.controller import ShardMembership
    from cluster_inventory.runtime.cluster import EngagedCluster
    from cluster_inventory.runtime.provider import ClusterAware

__all__ = ["ClusterProfileOptions", "ClusterProfileProvider", "Readiness"]

ENGAGEMENT_CONTROLLER = "clusterprofile"
_log = logging.getLogger("cluster_inventory.runtime")


class ClusterProfileOptions(TypedDict, total=False):
    """The keyword options of :class:`ClusterProfileProvider` that a fleet manager passes on.

    :class:`~cluster_inventory.runtime.FleetManager` accepts them so that
    ``FleetManager(hub, "providers.json", namespaces=[...])`` builds this provider itself.
    """

    namespaces: Sequence[str] | None
    label_selector: str | None
    placement: tuple[str, str] | None
    readiness: Readiness
    allow_insecure: bool
    engage_workers: int
    provider_file_poll: float
    clock: Callable[[], float]


class ClusterProfileProvider(ProfileEngagement):
    """Engage a cluster for each ready ClusterProfile on the hub; disengage it when it goes.

    Satisfies :class:`~cluster_inventory.runtime.provider.ClusterProvider`.

    Args:
        hub: API client of the hub (the caller closes it).
        providers: This consumer's provider file (KEP-5339), loaded or as a path. A path is
            re-read when its content changes; an invalid new version is logged and the
            previous one kept.
        namespaces: Inventory namespaces to watch; None for all.
        label_selector: Only profiles matching this label selector.
        placement: ``(namespace, decision_key)``: engage only the clusters that the
            PlacementDecision slices of that key name (read as one set, grouped by revision,
            :func:`~cluster_inventory.runtime.decisions.group_decisions`); a cluster the
            decision drops is disengaged at once. While the slices are being rewritten the
            previous set stays. The named profiles must be in ``namespaces``.
        readiness: When a profile may be engaged (default: ``ControlPlaneHealthy=True``).
        policy: Disengagement, re-check and deduplication settings.
        allow_insecure: Honour ``insecure-skip-tls-verify`` on profiles.
        engage_workers: Profiles processed at once (engaging is I/O: plugin, LISTs).
        provider_file_poll: Seconds between checks of the provider file for changes.
        name: Name of the fleet it feeds (metrics label ``fleet``, queue name, logs).
        registry: Prometheus registry for every metric.
        clock: Monotonic clock in seconds (ill-health periods).

    Attributes:
        shard: This replica's shard membership, or None (this replica engages every ready
            cluster). Set before :meth:`start` (the Manager does it for ``--sharding``):
            then only the clusters this replica owns are engaged, by member id (the profile
            name without one), so the profiles of one member stay on one replica; a change
            of the live replicas re-checks every profile (``docs/scale.md``).

    Raises:
        ProviderConfigError: The provider file is invalid (at construction).
        ValueError: ``engage_workers`` is below 1.
    """

    def __init__(
        self,
        hub: kube.ApiClient,
        providers: ProviderConfig | str | os.PathLike[str],
        *,
        namespaces: Sequence[str] | None = None,
        label_selector: str | None = None,
        placement: tuple[str, str] | None = None,
        readiness: Readiness = control_plane_healthy,
        policy: EngagementPolicy | None = None,
        allow_insecure: bool = False,
        engage_workers: int = 16,
        provider_file_poll: float = 2.0,
        name: str = "fleet",
        registry: CollectorRegistry = REGISTRY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if engage_workers < 1:
            raise ValueError("engage_workers must be >= 1")
        self.hub = hub
        self.name = name
        self.readiness = readiness
        self.policy = policy or EngagementPolicy()
        self._allow_insecure = allow_insecure
        self._engage_workers = engage_workers
        self._clock = clock
        self._metrics = FleetMetrics.for_registry(registry)
        self._provider_file: ProviderFile | None = None
        if isinstance(providers, ProviderConfig):
            self._providers = providers
        else:
            self._provider_file = ProviderFile(
                providers,
                poll=provider_file_poll,
                on_change=self.reload_providers,
                count=lambda result: self._metrics.provider_reloads.labels(name, result).inc(),
            )
            self._providers = self._provider_file.config
        # The profiles' informer comes from the hub client's shared cache at start, once the
        # served version is known (v1alpha2 where the hub serves it).
        self._namespaces: list[str | None] = list(namespaces) if namespaces is not None else [None]
        self._label_selector = label_selector
        self._profiles: kube.NamespacedInformer | None = None
        self._profile_handlers: list[EventHandler] = [self._on_profile]
        self._created = asyncio.Event()
        #: The engagement work queue (``<name>-clusterprofile``), keyed by ``namespace/name``.
        self.queue: WorkQueue[str] = WorkQueue(
            f"{name}-{ENGAGEMENT_CONTROLLER}",
            controller=ENGAGEMENT_CONTROLLER,
            metrics=kube.collectors_for(WorkQueueMetrics, registry),
        )
        self._workers = Workers(
            self.queue,
            self._reconcile_profile,
            controller=ENGAGEMENT_CONTROLLER,
            count=self._engage_workers,
            registry=registry,
            describe=lambda key: {"fleet": self.name, "cluster": key},
            log=_log,
        )
        self._fleet: ClusterAware | None = None
        #: Clusters this provider engaged, by key.
        self._engaged: dict[str, EngagedCluster] = {}
        #: Keys being engaged right now (they hold their member id like engaged ones).
        self._engaging: set[str] = set()
        self._unhealthy_since: dict[str, float] = {}
        self._access_errors: dict[str, str] = {}
        #: The last decoded profiles of each key (see :meth:`_view`).
        self._decoded = {}
        self._provider_watch = kube.TaskSet(f"{self.name} provider file", logger=_log)
        self._started = False
        self._stopped = False
        #: Clusters the placement names (None: no placement restriction).
        self.placed: frozenset[str] | None = None
        self.shard: ShardMembership | None = None
        self._decisions: kube.NamespacedInformer | None = None
        if placement is not None:
            self.placed = frozenset()
            self._placement = placement
            self._decisions = kube.InformerCache.for_client(hub).informer(
                kube.PLACEMENT_DECISIONS,
                namespaces=[placement[0]],
                label_selector=f"{LABEL_DECISION_KEY}={placement[1]}",
                name=f"{name} hub {kube.PLACEMENT_DECISIONS.kind}",
            )
            self._decisions.add_handler(lambda _, __, ___: self._on_decision())

    @property
    def providers(self) -> ProviderConfig:
        """The provider configuration in use."""
        return self._providers

    def add_profile_handler(self, handler: EventHandler) -> None:
        """Also call ``handler`` for every ClusterProfile event (all of them if added early)."""
        self._profile_handlers.append(handler)
        if self._profiles is not None:
            self._profiles.add_handler(handler)

    @property
    def namespaces(self) -> list[str | None]:
        """The namespaces whose profiles it watches (``[None]``: every namespace)."""
        return list(self._namespaces)

    def _hub_informers(self) -> list[Informer | kube.NamespacedInformer]:
        profiles = [self._profiles] if self._profiles is not None else []
        return [*([self._decisions] if self._decisions else []), *profiles]

    # -- lifecycle -------------------------------------------------------------------
    async def start(self, fleet: ClusterAware) -> None:
        """Start watching profiles, the engagement workers and the provider file poll.

        Args:
            fleet: Where to engage and disengage clusters (the fleet manager).

        Raises:
            FleetError: The provider was stopped before (make a new one, as a process that
                lost its Lease restarts).
        """
        if self._started:
            return
        if self._stopped:
            raise FleetError(f"fleet {self.name}: the ClusterProfile provider was stopped")
        self._started = True
        self._fleet = fleet
        if self.shard is not None:
            self.shard.on_change(self._reshard)
        try:  # read profiles through v1alpha2 where the hub serves it (KEP-4322, upstream main)
            resource = await kube.cluster_profiles_resource(self.hub)
        except kube.KubeError as exc:
            resource = kube.CLUSTER_PROFILES  # always served; the informers retry the hub
            _log.warning("cannot discover ClusterProfile versions (%s); reading v1alpha1", exc)
        # Without managedFields (a third of a profile the manager applies): nothing here
        # reads them, and the syncs ask the cache for the same informer.
        self._profiles = kube.InformerCache.for_client(self.hub).informer(
            resource,
            namespaces=self._namespaces,
            label_selector=self._label_selector,
            name=f"{self.name} ClusterProfile",
            transform=strip_managed_fields,
        )
        self._profiles.add_indexer(
            MEMBER_INDEX, lambda p: [m] if (m := self._facts(p).member_id) else []
        )
        for handler in self._profile_handlers:
            self._profiles.add_handler(handler)
        self._created.set()
        for informer in self._hub_informers():
            informer.start()
        self._workers.start()
        if self._provider_file is not None:
            self._provider_watch.spawn(self._provider_file.watch(), name="watch")

    async def wait_synced(self) -> None:
        """Wait until the hub's profiles (and placement decisions) have been listed once.

        Waits for :meth:`start` first (the profiles' informer is made there).

        Raises:
            KubeAPIError: The first LIST was refused (401, 403, 404: CRD not installed).
        """
        await self._created.wait()
        for informer in self._hub_informers():
            await informer.wait_synced()

    async def stop(self) -> None:
        """Stop taking work, cancel engagements under way, stop the watches (idempotent).

        Engaged clusters stay engaged: the fleet manager disengages them after this.
        """
        if not self._started:
            return
        self._started = False
        self._stopped = True
        # The file poll is no reconcile: it never ends by itself, so it gets no grace period
        # (with it among the workers every stop took the full graceful_shutdown).
        await self._provider_watch.stop()
        # Engagement workers are cancelled at once, not given the grace period: an engagement
        # is the fleet's own work and safe to abort (the half-built cluster is closed), and
        # one stuck on an unreachable member would otherwise hold the process past SIGTERM
        # for the whole cache sync timeout. Reconciles, the user's work, get the grace.
        await self._workers.stop(0)
        for informer in self._hub_informers():
            await informer.stop()

    # -- events ----------------------------------------------------------------------
    def _on_decision(self) -> None:
        assert self._decisions is not None
        namespace, key = self._placement
        found = group_decisions(self._decisions.items(), key, namespace=namespace)
        if found.found and not found.complete:
            return  # slices being rewritten: keep acting on the previous set
        placed = frozenset(found.clusters)
        previous = self.placed or frozenset()
        if placed == previous:
            return
        self.placed = placed
        for name in sorted(placed ^ previous):
            self.queue.add(name)

    def _reshard(self) -> None:
        """The live replicas changed: every profile may have a new owner."""
        for key in self._keys():
            self.queue.add(key)

    def _on_profile(self, event: str, profile: dict[str, Any], old: dict[str, Any] | None) -> None:
        key = object_key(profile)
        self.queue.add(key)
        engaged = self._engaged.get(key)
        if engaged is not None:
            engaged.profile = profile
        if self.policy.dedupe_by_member_id:
            mids = {self._facts(profile).member_id, self._facts(old).member_id if old else None}
            for mid in mids - {None}:
                for sibling in self._group(str(mid)):
                    self.queue.add(sibling)
        if event == DELETED:
            self._decoded.pop(key, None)

    # -- provider file ---------------------------------------------------------------
    def reload_providers(self, providers: ProviderConfig | None = None) -> bool:
        """Use a new provider configuration and re-check every profile against it.

        Clusters whose resolved access changes are rebuilt; the others keep their client.

        Args:
            providers: The new configuration; None re-reads the provider file.

        Returns:
            False if the file was invalid (logged; the previous configuration stays).
        """
        if providers is None:
            if self._provider_file is None:
                return True
            providers = self._provider_file.reload()
            if providers is None:
                return False
        self._providers = providers
        self._access_errors.clear()
        for key in self._keys():
            self.queue.add(key)
        return True

    def _keys(self) -> Iterable[str]:
        keys = {k for informer in self.informers for k in informer.keys()}
        return sorted(keys | set(self._engaged))

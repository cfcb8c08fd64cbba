"""The fleet manager: run reconcilers on the member clusters a cluster provider engages.

multicluster-runtime's manager, in this project's terms. How clusters are found is a
provider's part (:mod:`cluster_inventory.runtime.providers`; by default the ClusterProfile
provider, built from the constructor's provider file and options); the fleet manager is what
the provider engages clusters on (:class:`~cluster_inventory.runtime.provider.ClusterAware`).

Engaging a cluster: take a connection from the shared pool (the exec plugin through the
shared credential cache), one informer per watched kind, wait for their sync (bounded by the
policy's ``cache_sync_timeout``), then the reconcilers' handlers and the engage hooks.
Disengaging: the disengage hooks, cancel running reconciles, let go of the connection. Both
are :class:`~cluster_inventory.runtime._fleet_engagement.FleetEngagement`'s, a base of
:class:`FleetManager`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from typing import Any, Unpack

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.controller import (
    DEFAULT_GRACEFUL_SHUTDOWN,
    LeaderElectedRunnable,
    ShardMembership,
)
from cluster_inventory.credentials import (
    CredentialCache,
    CredentialMetrics,
    ProviderConfig,
)
from cluster_inventory.kube.informer import EventHandler, Informer
from cluster_inventory.kube.leaderelection import LeaderElector
from cluster_inventory.kube.workqueue import WorkQueue
from cluster_inventory.runtime._fleet_engagement import ClusterHook, FleetEngagement
from cluster_inventory.runtime._metrics import FleetMetrics
from cluster_inventory.runtime.cluster import ConnectionPool, EngagedCluster, WatchSpec
from cluster_inventory.runtime.engagement import EngagementPolicy
from cluster_inventory.runtime.errors import ClusterNotEngaged, FleetError
from cluster_inventory.runtime.provider import ClusterProvider
from cluster_inventory.runtime.providers.clusterprofile import (
    ClusterProfileOptions,
    ClusterProfileProvider,
    Readiness,
)
from cluster_inventory.runtime.reconciler import FleetController, Reconciler

__all__ = ["ClusterHook", "FleetManager", "Readiness"]


class FleetManager(LeaderElectedRunnable, FleetEngagement):
    """Run reconcilers across the member clusters a provider engages.

    ``FleetManager(hub, "providers.json", namespaces=[...])`` engages ClusterProfiles from
    the hub (a :class:`~cluster_inventory.runtime.providers.ClusterProfileProvider` built
    from ``providers`` and ``options``); ``FleetManager(hub, provider=...)`` takes any
    :class:`~cluster_inventory.runtime.provider.ClusterProvider` instead.

    Args:
        hub: API client of the hub (the caller closes it): the Lease, hub watches.
        providers: This consumer's provider file (KEP-5339), loaded or as a path, for the
            ClusterProfile provider; give either this or ``provider``.
        provider: The cluster provider, when it is not the ClusterProfile one.
        policy: Engagement settings; the fleet manager uses ``cache_sync_timeout``, the
            ClusterProfile provider (when built here) the rest.
        credential_cache: Shared exec credential cache (default: a new one).
        graceful_shutdown: Seconds running reconciles get to finish on :meth:`stop`
            (:data:`~cluster_inventory.controller.reconcile.DEFAULT_GRACEFUL_SHUTDOWN`); a
            :class:`~cluster_inventory.controller.Manager` running this fleet sets it to its
            own, and :meth:`run` with a Lease runs one with this value.
        name: Name of this fleet manager (metrics label ``fleet``, logs).
        registry: Prometheus registry for every metric.
        **options: The ClusterProfile provider's options (``namespaces``,
            ``label_selector``, ``placement``, ``readiness``, ``allow_insecure``,
            ``engage_workers``, ``provider_file_poll``, ``clock``), see
            :class:`~cluster_inventory.runtime.providers.ClusterProfileProvider`.

    Attributes:
        provider: The cluster provider feeding this fleet.
        profiles: The ClusterProfile provider when it is ``provider``, else None.
        elector: The leader elector while :meth:`run` runs with leader election.

    Raises:
        ProviderConfigError: The provider file is invalid (at construction).
        TypeError: Neither or both of ``providers`` and ``provider``, or ``options`` with
            ``provider``.
    """

    def __init__(
        self,
        hub: kube.ApiClient,
        providers: ProviderConfig | str | os.PathLike[str] | None = None,
        *,
        provider: ClusterProvider | None = None,
        policy: EngagementPolicy | None = None,
        credential_cache: CredentialCache | None = None,
        graceful_shutdown: float = DEFAULT_GRACEFUL_SHUTDOWN,
        name: str = "fleet",
        registry: CollectorRegistry = REGISTRY,
        **options: Unpack[ClusterProfileOptions],
    ) -> None:
        if (providers is None) == (provider is None):
            raise TypeError(f"fleet {name}: give a provider file (providers) or a provider")
        if provider is not None and options:
            raise TypeError(f"fleet {name}: {sorted(options)} are ClusterProfile provider options")
        self.hub = hub
        self.name = name
        self.policy = policy or EngagementPolicy()
        self.registry = registry
        self.profiles: ClusterProfileProvider | None = None
        if provider is None:
            assert providers is not None
            provider = self.profiles = ClusterProfileProvider(
                hub, providers, policy=self.policy, name=name, registry=registry, **options
            )
        self.provider: ClusterProvider = provider
        self._cache = credential_cache or CredentialCache(
            metrics=kube.collectors_for(CredentialMetrics.create, registry)
        )
        self.graceful_shutdown = graceful_shutdown
        self._metrics = FleetMetrics.for_registry(registry)
        self._pool = ConnectionPool(
            self._cache, on_change=self._metrics.connections.labels(name).set
        )
        self._clusters: dict[str, EngagedCluster] = {}
        self._controllers: list[FleetController] = []
        self._on_engage: list[ClusterHook] = []
        self._on_disengage: list[ClusterHook] = []
        self._hub_watches: list[Informer] = []
        self._started = False
        self._stopped = False
        self.elector: LeaderElector | None = None

    # -- registration ----------------------------------------------------------------
    def add_reconciler(
        self,
        kind: str,
        reconcile: Reconciler,
        *,
        name: str | None = None,
        namespace: str | None = None,
        label_selector: str | None = None,
        max_concurrent_reconciles: int = 1,
        reconcile_timeout: float | None = None,
    ) -> FleetController:
        """Run ``reconcile`` for every object of ``kind`` on every engaged cluster.

        Args:
            kind: ``group/version/Kind`` (``v1/ConfigMap`` for the core group).
            reconcile: ``async (request, cluster) -> Result | None``.
            name: Controller name (default: the kind in lower case).
            namespace: Watch only this namespace on each cluster.
            label_selector: Watch only objects matching this selector.
            max_concurrent_reconciles: Workers of this controller (controller-runtime: 1).
            reconcile_timeout: Seconds after which a reconcile is cancelled and retried.

        Returns:
            The controller (for :meth:`FleetController.enqueue` /
            :meth:`FleetController.enqueue_all`).

        Raises:
            ValueError: ``kind`` is malformed, a name is taken, or the fleet already started.
        """
        kube.parse_kind(kind)
        if self._started or self._stopped:
            raise ValueError(f"fleet {self.name}: add reconcilers before start()")
        controller_name = name or kind.rsplit("/", 1)[-1].lower()
        if any(c.name == controller_name for c in self._controllers):
            raise ValueError(f"fleet {self.name}: a controller named {controller_name} exists")
        controller = FleetController(
            controller_name,
            WatchSpec(kind, namespace, label_selector),
            reconcile,
            self._clusters,
            max_concurrent_reconciles=max_concurrent_reconciles,
            reconcile_timeout=reconcile_timeout,
            registry=self.registry,
        )
        self._controllers.append(controller)
        return controller

    def reconciler(self, kind: str, **options: Any) -> Callable[[Reconciler], Reconciler]:
        """Decorator form of :meth:`add_reconciler`; the function is returned unchanged."""

        def register(func: Reconciler) -> Reconciler:
            self.add_reconciler(kind, func, **options)
            return func

        return register

    def on_engage(self, hook: ClusterHook) -> ClusterHook:
        """Register ``hook`` to run after each engagement (a decorator).

        A hook that raises fails the engagement, which is retried with backoff.
        """
        self._on_engage.append(hook)
        return hook

    def on_disengage(self, hook: ClusterHook) -> ClusterHook:
        """Register ``hook`` to run before each disengagement (errors are logged only)."""
        self._on_disengage.append(hook)
        return hook

    def watch_hub(
        self,
        kind: str,
        on_change: Callable[[dict[str, Any]], None],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Informer:
        """Watch objects on the hub for as long as the fleet runs (a hub-side source).

        ``on_change`` gets every added, modified and deleted object and typically calls
        :meth:`FleetController.enqueue_all`. It runs inline in the watch: it must not block.

        Args:
            kind: A kind this project knows on the hub (e.g. ``v1/ConfigMap``, ``v1/Secret``,
                ``multicluster.x-k8s.io/v1alpha1/PlacementDecision``).
            on_change: Called with the object (for a delete: its last known state).
            namespace: Only this namespace.
            label_selector: Server-side label selector.
            field_selector: Server-side field selector (e.g. ``metadata.name=x``).

        Returns:
            The hub informer (its store is complete once :meth:`wait_synced` returned).

        Raises:
            ValueError: Unknown kind, or the fleet already started.
        """
        resource = kube.known_kind(kind)
        if resource is None:
            raise ValueError(f"fleet {self.name}: watch_hub supports known kinds, not {kind!r}")
        if self._started or self._stopped:
            raise ValueError(f"fleet {self.name}: add hub watches before start()")
        informer = Informer(
            self.hub,
            resource,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            name=f"{self.name} hub {resource.kind}",
        )
        informer.add_handler(lambda _, obj, __: on_change(obj))
        self._hub_watches.append(informer)
        return informer

    # -- queries ---------------------------------------------------------------------
    @property
    def clusters(self) -> Mapping[str, EngagedCluster]:
        """Engaged clusters by name (``namespace/name`` of their ClusterProfile)."""
        return dict(self._clusters)

    def cluster(self, name: str) -> EngagedCluster:
        """The engaged cluster ``name``.

        Raises:
            ClusterNotEngaged: No such cluster is engaged.
        """
        found = self._clusters.get(name)
        if found is None:
            raise ClusterNotEngaged(f"fleet {self.name}: cluster {name} is not engaged")
        return found

    # -- the ClusterProfile provider's part, kept here for the fleet manager's callers --
    def _clusterprofile(self) -> ClusterProfileProvider:
        if self.profiles is None:
            raise FleetError(f"fleet {self.name}: its provider is not the ClusterProfile one")
        return self.profiles

    @property
    def providers(self) -> ProviderConfig:
        """The provider configuration in use (ClusterProfile provider only).

        Raises:
            FleetError: Another provider feeds this fleet.
        """
        return self._clusterprofile().providers

    @property
    def queue(self) -> WorkQueue[str]:
        """The engagement queue ``<name>-clusterprofile`` (ClusterProfile provider only)."""
        return self._clusterprofile().queue

    @property
    def placed(self) -> frozenset[str] | None:
        """Clusters the placement names, None without one (ClusterProfile provider only)."""
        return self._clusterprofile().placed

    @property
    def readiness(self) -> Readiness:
        """When a profile may be engaged (ClusterProfile provider only)."""
        return self._clusterprofile().readiness

    def _add_profile_handler(self, handler: EventHandler) -> None:
        # Every ClusterProfile event, for bench/runtime_engage.py's baseline handler.
        self._clusterprofile().add_profile_handler(handler)

    def reload_providers(self, providers: ProviderConfig | None = None) -> bool:
        """Use a new provider configuration: :meth:`ClusterProfileProvider.reload_providers`.

        Raises:
            FleetError: Another provider feeds this fleet.
        """
        return self._clusterprofile().reload_providers(providers)

    @property
    def shard(self) -> ShardMembership | None:
        """This replica's shard membership (the provider's, when it shards), or None."""
        found: ShardMembership | None = getattr(self.provider, "shard", None)
        return found

    @shard.setter
    def shard(self, membership: ShardMembership | None) -> None:
        if not hasattr(self.provider, "shard"):
            raise FleetError(f"fleet {self.name}: its provider cannot share clusters by shard")
        setattr(self.provider, "shard", membership)  # noqa: B010 - not in the Protocol

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> None:
        """Start the hub watches, the reconcilers' workers and the provider.

        Raises:
            FleetError: The fleet manager was stopped before (make a new one, as a process
                that lost its Lease restarts).
        """
        if self._started:
            return
        if self._stopped:
            raise FleetError(f"fleet {self.name} was stopped; create a new FleetManager")
        self._started = True
        for informer in self._hub_watches:
            informer.start()
        for controller in self._controllers:
            controller.start()
        await self.provider.start(self)

    async def wait_synced(self) -> None:
        """Wait until the hub watches and the provider's source have been read once.

        Raises:
            KubeAPIError: The first LIST was refused (401, 403, 404: CRD not installed).
        """
        for informer in self._hub_watches:
            await informer.wait_synced()
        await self.provider.wait_synced()

    async def stop(self) -> None:
        """Stop gracefully (idempotent).

        The provider stops (no new engagements; those under way are cancelled), running
        reconciles get the grace period to finish, the hub watches stop and every cluster
        is disengaged (tasks cancelled, clients closed).
        """
        if not self._started:
            return
        self._started = False
        self._stopped = True
        await asyncio.gather(
            self.provider.stop(), *(c.stop(self.graceful_shutdown) for c in self._controllers)
        )
        for informer in self._hub_watches:
            await informer.stop()
        for name in list(self._clusters):
            await self.disengage(name, "stopped")

"""The hub as the cluster manager's controllers see it: client, shared cache, clock, metrics.

controller-runtime hands each reconciler the manager's client and cache; OCM's hub controllers
take their clients, informers and recorder in their constructors. Every controller of the
cluster manager is built with one :class:`HubView` (and small Protocols for what it asks of the
others), never with the runnable that wires them (``docs/architecture.md``).

The hub informers of the manager come from the hub client's
:class:`~cluster_inventory.kube.InformerCache` (the Manager-owned cache): another component of
the process watching the same objects reads the same informer.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Awaitable, Callable, Hashable, Iterator
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    ANNOTATION_SHARD_HOLDER,
    LABEL_CLUSTER_MANAGER,
    LABEL_INVENTORY_MEMBER_ID,
    LABEL_TOKEN_FOR,
)
from cluster_inventory.api.views import ProfileView
from cluster_inventory.controller import Controller, Result, ShardMembership
from cluster_inventory.kube.informer import strip_managed_fields
from cluster_inventory.manager._metrics import ManagerMetrics
from cluster_inventory.manager.config import ManagerConfig
from cluster_inventory.manager.rules.fence import ProfileFence
from cluster_inventory.manager.rules.status import trim_status

__all__ = ["PROFILES_BY_MEMBER_ID", "PROFILES_BY_NAME", "HubView"]

K = TypeVar("K", bound=Hashable)
_log = logging.getLogger("cluster_inventory.manager")

#: The profile cache's index by profile name (every inventory's profile of one member).
PROFILES_BY_NAME = "profiles-by-name"
#: The profile cache's index by ``inventory/member id`` (their member-id label).
PROFILES_BY_MEMBER_ID = "profiles-by-member-id"


def _inventory_member_id(profile: dict[str, Any]) -> list[str]:
    member_id = objects.labels_of(profile).get(LABEL_INVENTORY_MEMBER_ID)
    return [f"{objects.meta(profile).get('namespace')}/{member_id}"] if member_id else []


class HubView:
    """One cluster manager's view of its hub, shared by its controllers.

    Args:
        client: Hub client (the manager's own credential).
        config: The manager's settings.
        now: Wall clock (condition times, token rotation, Event times).
        registry: Prometheus registry of the manager's metrics.
        identity: This replica's identity (the Events' ``reportingInstance``).

    Attributes:
        cache: The hub client's informer cache.
        metrics: The manager's collectors in ``registry``.
        namespaces: Every hub Namespace (inventories are read from them).
        profiles: This manager's ClusterProfiles (label ``x-k8s.io/cluster-manager``),
            without managedFields; sharded, another replica's trimmed (:meth:`_trim_profile`);
            indexed by name (:data:`PROFILES_BY_NAME`) and by inventory and member id
            (:data:`PROFILES_BY_MEMBER_ID`).
        token_secrets: Metadata of this manager's token Secrets (no token in the cache), in
            every namespace, or only in the fixed inventories when ``inventory_namespaces_only``.
        shard: This replica's shard membership, or None (one replica serves every member);
            set by :meth:`shard_with` before the controllers prepare.
        fence: Who holds each profile and the version to write on (sharded only).
    """

    def __init__(
        self,
        client: kube.ApiClient,
        config: ManagerConfig,
        *,
        now: Callable[[], dt.datetime],
        registry: CollectorRegistry,
        identity: str,
    ) -> None:
        self.client = client
        self.config = config
        self.now = now
        self.registry = registry
        self.identity = identity
        self.metrics = ManagerMetrics.for_registry(registry)
        self.cache = kube.InformerCache.for_client(client)
        self.shard: ShardMembership | None = None
        self.fence: ProfileFence | None = None
        self.namespaces = self.cache.informer(
            kube.NAMESPACES, namespaces=[None], name="hub Namespaces"
        )
        self.profiles = self.cache.informer(
            kube.CLUSTER_PROFILES,
            namespaces=[None],
            label_selector=f"{LABEL_CLUSTER_MANAGER}={config.name}",
            name="hub ClusterProfiles",
            transform=self._trim_profile,
        )
        self.profiles.add_indexer(PROFILES_BY_NAME, lambda p: [str(objects.meta(p)["name"])])
        self.profiles.add_indexer(PROFILES_BY_MEMBER_ID, _inventory_member_id)
        # One cluster-wide watch, or one per fixed inventory when the manager may read
        # Secrets only there (a cluster-wide list would be forbidden).
        self.token_secrets = self.cache.informer(
            kube.SECRETS,
            namespaces=(
                sorted(config.inventory_namespaces) if config.inventory_namespaces_only else [None]
            ),
            label_selector=f"{LABEL_CLUSTER_MANAGER}={config.name},{LABEL_TOKEN_FOR}",
            name="hub token Secrets",
            # Labels and versions are all the manager reads: no token in the cache.
            metadata_only=True,
            transform=strip_managed_fields,
        )

    def controller(
        self,
        name: str,
        reconcile: Callable[[K], Awaitable[Result | None]],
        *,
        workers: int = 1,
        describe: Callable[[K], dict[str, str]] | None = None,
    ) -> Controller[K]:
        """A controller of this manager: its metrics in the manager's registry, its logs its.

        Args:
            name: The controller's name (its work queue and metrics; ``clustermanager-...``).
            reconcile: ``async (key) -> Result | None``.
            workers: Keys reconciled at once.
            describe: A key's log fields (default: ``object=<key>``).
        """
        return Controller(
            name,
            reconcile,
            workers=workers,
            registry=self.registry,
            describe=describe or (lambda key: {"object": str(key)}),
            log=_log,
        )

    def shard_with(self, shard: ShardMembership) -> None:
        """Serve only ``shard``'s share of the members, every profile write fenced."""
        self.shard = shard
        self.fence = ProfileFence(shard)

    def owns(self, member: str) -> bool:
        """True if this replica serves registration ``member`` (always, unsharded)."""
        return self.shard is None or self.shard.owns(member)

    def held_profiles(self) -> Iterator[ProfileView]:
        """The profiles this replica holds now, from the cache (nothing is fetched).

        Unsharded, every profile of this manager (one replica runs at a time: the leader);
        sharded, those whose holder annotation names this replica, so two replicas never
        hold one (a profile being handed over is briefly held by none). The profile series
        of ``docs/observability.md`` are built from them at each scrape.
        """
        fence = self.fence
        for obj in self.profiles.items():
            if fence is not None and (
                objects.annotations_of(obj).get(ANNOTATION_SHARD_HOLDER) != fence.identity
            ):
                continue
            yield ProfileView.of(obj)

    def _trim_profile(self, obj: dict[str, Any]) -> dict[str, Any]:
        """What the cache keeps of a profile: no managedFields; sharded, another's trimmed.

        Of a profile another replica holds, the status is kept without its access providers
        (their CA data is most of a profile's 3-4 KB; a digest stands for them,
        :func:`~cluster_inventory.manager.rules.status.trim_status`): the rest is what a
        takeover needs, the last holder's verdict to start from and the transition and
        observed times to keep, so a profile taken over is written without reading it again
        (``docs/scale.md``).
        """
        strip_managed_fields(obj)
        if self.fence is not None:
            holder = objects.annotations_of(obj).get(ANNOTATION_SHARD_HOLDER)
            status = obj.get("status")
            if holder and holder != self.fence.identity and isinstance(status, dict):
                trim_status(status)
        return obj

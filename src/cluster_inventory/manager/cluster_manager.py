"""The cluster manager: registrations in, ClusterProfiles with true status out.

Level-based: every event only queues a key (``placement`` or a profile), and each
reconcile reads the informers' current state and converges (``docs/manager.md``):

- *placement* computes the desired profiles (:mod:`.placement`), creates and deletes
  profiles of this manager, starts and stops member connections. Its events also note which
  registrations they touched, and a pass reads the current state of those only
  (:mod:`.placement_state`); a change of inventories or replicas places everything;
- a *profile* reconcile applies its status (server-side apply, only when something
  changed), its labels, and the consumer token Secret ``<inventory>/<profile>`` with the
  token's expiry beside it, and requeues itself for the next rotation;
- a *grants* reconcile (a member connection) removes what the manager holds on the member
  and its inventories no longer need (:mod:`.grant_controller`).

One bad registration or member never stops the others: a registration error becomes an
Event on its Secret; an unreachable member becomes a condition on its profiles.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    ANNOTATION_SHARD_HOLDER,
    LABEL_CLUSTER_MANAGER,
    LABEL_INVENTORY_MEMBER_ID,
    LABEL_TOKEN_FOR,
)
from cluster_inventory.controller import Controller, Result, ShardMembership, gc_pauses
from cluster_inventory.kube.informer import DELETED, strip_managed_fields
from cluster_inventory.manager._metrics import ManagerMetrics
from cluster_inventory.manager.config import ManagerConfig
from cluster_inventory.manager.controllers.agent_approver import AgentApprover
from cluster_inventory.manager.controllers.findings import ManagerReports
from cluster_inventory.manager.controllers.grant_controller import GrantController
from cluster_inventory.manager.controllers.inventory_controller import PlacementController
from cluster_inventory.manager.controllers.status_controller import StatusController
from cluster_inventory.manager.controllers.token_controller import TokenController
from cluster_inventory.manager.members.agent_credentials import AgentCredentials
from cluster_inventory.manager.members.agent_member import AgentReports, agent_member_controller
from cluster_inventory.manager.members.pool import MemberPool
from cluster_inventory.manager.rules.fence import ProfileFence
from cluster_inventory.manager.rules.grants import Needs
from cluster_inventory.manager.rules.inventory import (
    Inventory,
    ProfileKey,
    fallback_member_id,
    held_members,
)
from cluster_inventory.manager.rules.member_keys import MemberKey, member_label
from cluster_inventory.manager.rules.registration import Registration
from cluster_inventory.manager.rules.status import Observation, seed_observation, trim_status
from cluster_inventory.manager.sources.combined import build_source
from cluster_inventory.manager.sources.source import RegistrationSource

__all__ = ["PLACEMENT", "ClusterManagerRunnable", "fallback_member_id", "held_members"]

#: Seconds between placements while members are still starting.
_PLACEMENT_BATCH = 1.0
#: Members started since the last settle of the garbage collector that make another worth it:
#: at least this many, and at least this share of the members held (a settle walks the whole
#: heap: a takeover that lands in batches settles once or twice, not once per batch).
_SETTLE_AFTER = 64
_SETTLE_SHARE = 0.25
#: The work-queue key of the placement reconcile.
PLACEMENT = "placement"
_CONTROLLER = "clustermanager"
_log = logging.getLogger("cluster_inventory.manager")


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class ClusterManagerRunnable:
    """Run the cluster manager against one hub.

    Args:
        hub: Hub client (the manager's own credential).
        config: Settings.
        source: Registration source; defaults to what ``config.sources`` names (Secrets in
            ``config.namespace`` unless told otherwise).
        now: Wall clock (condition times, token rotation).
        registry: Prometheus registry for the manager's metrics.
        identity: Reported as the Events' ``reportingInstance``.

    Attributes:
        shard: This replica's shard membership, or None (one replica serves every member).
            Set by :class:`~cluster_inventory.controller.Manager` before :meth:`prepare`.
            Sharded, a replica places, connects to and writes only the members it owns
            (by registration name, so all profiles of a member stay together), learns the
            member ids of the others from their profiles (a member registered twice is still
            kept once per inventory), and fences every profile write: it holds the profile
            (annotation ``cluster-inventory.dev/shard-holder``) and writes conditionally on
            the resourceVersion it read, so a replica whose view of the peers is behind gets a
            409 instead of overwriting (``docs/scale.md``).
    """

    def __init__(
        self,
        hub: kube.ApiClient,
        config: ManagerConfig,
        *,
        source: RegistrationSource | None = None,
        now: Callable[[], dt.datetime] = _utcnow,
        registry: CollectorRegistry = REGISTRY,
        identity: str = "cluster-inventory-manager",
    ) -> None:
        self.hub = hub
        self.config = config
        self.source = source or build_source(hub, config)
        self.now = now
        self.identity = identity
        self.registry = registry
        self.metrics = ManagerMetrics.for_registry(registry)
        self.reports = ManagerReports(hub, self.metrics, identity=identity, now=now)
        # From the hub client's shared cache (kube.InformerCache): another component of this
        # process watching the same objects reads the same informer.
        cache = kube.InformerCache.for_client(hub)
        self.namespaces = cache.informer(kube.NAMESPACES, namespaces=[None], name="hub Namespaces")
        self.profiles = cache.informer(
            kube.CLUSTER_PROFILES,
            namespaces=[None],
            label_selector=f"{LABEL_CLUSTER_MANAGER}={config.name}",
            name="hub ClusterProfiles",
            transform=self._trim_profile,
        )
        # One cluster-wide watch, or one per fixed inventory when the manager may read
        # Secrets only there (a cluster-wide list would be forbidden).
        self.token_secrets = cache.informer(
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
        #: Agent members' reports and heartbeats (docs/agent.md), read by their pool members.
        self.agents = AgentReports(hub, config)
        #: One connection per member, shared by every controller of this manager.
        self.members = MemberPool(
            config,
            on_change=self._member_changed,
            on_started=self._on_started,
            now=now,
            registry=registry,
            agents=self.agents,
            needs=self._grant_needs,
        )
        #: (member id, observed) of each member connection as placement last heard of it.
        self._member_seen: dict[MemberKey, tuple[str | None, bool]] = {}
        #: Profiles that exist but belong to another cluster manager (left untouched).
        self.conflicts: set[ProfileKey] = set()
        self._prepared = False
        self.synced = asyncio.Event()
        self.shard: ShardMembership | None = None
        self.fence: ProfileFence | None = None
        #: The reconcilers over this cache and member pool, and the controllers running
        #: them (controller-runtime's builder: a name, a reconciler, what it watches).
        self.placement = PlacementController(self)
        self.status = StatusController(self)
        self.tokens = TokenController(self, AgentCredentials(hub, config))
        self._started_since_settle = 0
        self.placing: Controller[str] = (
            self._controller(f"{_CONTROLLER}-placement", lambda _: self.placement.reconcile(), 1)
            .watch(
                self.namespaces,
                lambda *event: [PLACEMENT] if self.placement.touch_namespace(*event) else [],
            )
            .watch(self.profiles, self._profile_placement)
        )
        self.statuses: Controller[ProfileKey] = self._controller(
            _CONTROLLER, self.status.reconcile, config.workers
        ).watch(self.profiles, self._profile_keys)
        # A quarter as many workers: status (what every consumer reads first) is never
        # queued behind token minting.
        self.token_secret_writers: Controller[ProfileKey] = self._controller(
            f"{_CONTROLLER}-tokens", self.tokens.reconcile, max(1, config.workers // 4)
        ).watch(self.token_secrets, self._token_keys)
        self.token_secret_writers.watch(self.tokens.agents.secrets, self.tokens.agent_keys)
        # Grants are few member requests, and only on a change: a quarter as many workers.
        self.grant_keepers: Controller[MemberKey] = self._controller(
            f"{_CONTROLLER}-grants",
            lambda conn: self.grants.reconcile(conn),
            max(1, config.workers // 4),
            describe=lambda conn: {"cluster": member_label(conn)},
        )
        self.grants = GrantController(
            state=self.placement.state,
            members=self.members,
            profiles=self.profiles,
            queue=self.grant_keepers.queue.add,
        )
        self.agent_members: Controller[str] = agent_member_controller(
            self.agents, self.members.get, self._controller, on_report=self.reports.report_problems
        )
        self.queue = self.statuses.queue
        self.token_queue = self.token_secret_writers.queue
        #: Approves accepted agent members' CSRs (docs/agent.md); None when turned off.
        self.agent_approver = (
            AgentApprover(hub, config, registry=registry, identity=identity, now=now)
            if config.agent_approval
            else None
        )

    # -- wiring ----------------------------------------------------------------------
    async def prepare(self) -> None:
        """Start the registration source and the hub caches and wait until each has read once.

        Called before leader election (controller-runtime starts its caches on every replica
        too), so that a source that cannot be read ends the process before any write. Safe
        to call more than once.

        Raises:
            SourceUnavailableError: The registration source, or a first LIST on the hub
                (Namespaces, ClusterProfiles, token Secrets), cannot be read.
        """
        if self._prepared:
            return
        self._prepared = True
        if self.shard is not None:
            self.fence = ProfileFence(self.shard)
            self.shard.on_change(lambda *_: self._place(self.placement.touch_all))
        self.source.start(lambda *_: self._place(self.placement.touch_source))
        self.members.start()
        await self.source.wait_synced()
        for controller in self._controllers():
            await controller.prepare()

    def _controllers(self) -> tuple[Controller[Any], ...]:
        own = (
            self.placing,
            self.statuses,
            self.token_secret_writers,
            self.grant_keepers,
            self.agent_members,
        )
        return own if self.agent_approver is None else (*own, self.agent_approver.controller)

    async def run(self) -> None:
        """Watch, reconcile, and clean up when cancelled.

        Raises:
            SourceUnavailableError: See :meth:`prepare`; nothing was written.
        """
        try:
            await self.prepare()
            self.placing.queue.add(PLACEMENT)
            for controller in self._controllers():
                await controller.start()
            self.synced.set()
            await asyncio.gather(*(controller.run() for controller in self._controllers()))
        finally:
            await self.close()

    def ready(self) -> bool:
        """``/readyz``: the sources and caches have been read and the workers run."""
        return self.synced.is_set()

    async def stop(self) -> None:
        """Stop what :meth:`prepare` started (the Manager's way out); see :meth:`close`."""
        await self.close()

    async def close(self) -> None:
        """Stop the controllers (and their caches), then the source and every member connection.

        In that order: a reconcile still running must not find its member's client closed.
        Its reconciles are cancelled at once rather than given a Manager's
        ``graceful_shutdown``: they are ours, level-based and write conditionally, so the next
        leader redoes whatever one left half done, and the Lease goes sooner.
        """
        self.tokens.close()
        await asyncio.gather(
            *(controller.stop(grace=0.0) for controller in self._controllers()),
            return_exceptions=True,
        )
        await asyncio.gather(self.source.stop(), self.members.close(), return_exceptions=True)

    def _trim_profile(self, obj: dict[str, Any]) -> dict[str, Any]:
        """What the cache keeps of a profile: no managedFields; sharded, another's trimmed.

        Of a profile another replica holds, the status is kept without its access providers
        (their CA data is most of a profile's 3-4 KB; a digest stands for them,
        :func:`~.status.trim_status`): the rest is what a takeover needs, the last holder's
        verdict to start from and the transition and observed times to keep, so a profile
        taken over is written without reading it again (``docs/scale.md``).
        """
        strip_managed_fields(obj)
        if self.fence is not None:
            holder = objects.annotations_of(obj).get(ANNOTATION_SHARD_HOLDER)
            status = obj.get("status")
            if holder and holder != self.fence.identity and isinstance(status, dict):
                trim_status(status)
        return obj

    def seed_for(self, key: ProfileKey) -> Observation | None:
        """The observation a new connection for ``key``'s member may start from, or None.

        From the profile's stored status (:func:`~.status.seed_observation`): the last
        holder's verdict when another replica held it, this manager's own otherwise (a
        restart).
        """
        current = self.profiles.get(str(key))
        if current is None or "status" not in current:
            return None
        member_id = objects.labels_of(current).get(LABEL_INVENTORY_MEMBER_ID)
        return seed_observation(current["status"], member_id)

    def _profile_keys(
        self, event: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[ProfileKey]:
        meta = objects.meta(obj)
        key = ProfileKey(str(meta.get("namespace")), str(meta.get("name")))
        if event == DELETED or key not in self.desired:
            return []
        # The echo of our own write carries nothing new; anything else is reconciled.
        return [key] if self.status.written.get(key) != meta.get("resourceVersion") else []

    def _token_keys(
        self, event: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[ProfileKey]:
        meta = objects.meta(obj)
        key = ProfileKey(
            str(meta.get("namespace")), str((meta.get("labels") or {}).get(LABEL_TOKEN_FOR))
        )
        return [key] if key in self.desired else []

    @property
    def desired(self) -> dict[ProfileKey, tuple[Registration, Inventory]]:
        """The profiles this replica keeps, with their registration and inventory."""
        return self.placement.state.desired

    @property
    def by_member(self) -> dict[MemberKey, set[ProfileKey]]:
        """Profiles of each member connection (the keys a member's change queues)."""
        return self.placement.state.by_member

    def _profile_placement(
        self, event: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[str]:
        if self.placement.touch_profile(event, obj, old):
            self.place_soon()
        return []

    def _grant_needs(self, conn: MemberKey, member_id: str | None) -> Needs:
        """What a member needs of this manager (:meth:`GrantController.needs`)."""
        return self.grants.needs(conn, member_id)

    def _member_changed(self, conn: MemberKey) -> None:
        self.grants.member_changed(conn)
        for key in self.by_member.get(conn, ()):
            self.queue.add(key)
        member = self.members.get(conn)
        seen = (member.observation.member_id, member.observed) if member else (None, False)
        # Placement dedups members by their id, and waits for a member's first verdict. A
        # member calls before it marks its first verdict, so a change of a member not yet
        # observed is placed too (a placement runs later than the mark).
        if self._member_seen.get(conn) != seen or not seen[1]:
            self._member_seen[conn] = seen
            self.placement.touch_member(conn)
            self.place_soon()

    async def reconcile_token(self, key: ProfileKey) -> float | None:
        """One profile's consumer token Secret (:meth:`TokenController.reconcile`)."""
        return await self.tokens.reconcile(key)

    def _controller(
        self,
        name: str,
        reconcile: Callable[[Any], Coroutine[Any, Any, float | None]],
        workers: int,
        describe: Callable[[Any], dict[str, str]] | None = None,
    ) -> Controller[Any]:
        """A controller whose ``reconcile`` returns a requeue delay in seconds, or None.

        ``describe`` gives a key's log fields (default: ``object=<key>``).
        """

        async def as_result(key: Any) -> Result | None:
            delay = await reconcile(key)
            return None if delay is None else Result(requeue_after=delay)

        return Controller(
            name,
            as_result,
            workers=workers,
            registry=self.registry,
            describe=describe or (lambda key: {"object": str(key)}),
            log=_log,
        )

    def _on_started(self, conn: MemberKey) -> None:
        # Its profiles can be placed now: one placement per second at most while many
        # members start.
        self.placement.touch_member(conn)
        self.place_soon()
        self.grants.started(conn)
        self._started_since_settle += 1
        if not self.members.starting:
            self.tokens.release()
            self.grants.release()
            if self._started_since_settle >= max(_SETTLE_AFTER, _SETTLE_SHARE * len(self.members)):
                # A start-up or a takeover has settled: what it built lives long; later full
                # collections need not walk it (controller.gc_pauses, docs/scale.md).
                self._started_since_settle = 0
                gc_pauses.settle()

    def _place(self, touch: Callable[[], None]) -> None:
        """Note what an event touched and queue a placement at once."""
        touch()
        self.placing.queue.add(PLACEMENT)

    def place_soon(self) -> None:
        """Queue a placement: at once, or batched (one per second) while members start.

        Every member's first answer changes what placement sees (its member id). A placement
        places only what changed since the last one, but each has its own cost (a reconcile,
        the reports): batching keeps their number low while thousands of members start.
        """
        self.placing.queue.add_after(
            PLACEMENT, 0 if not self.members.starting else _PLACEMENT_BATCH
        )

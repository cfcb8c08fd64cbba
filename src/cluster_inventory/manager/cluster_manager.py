"""The cluster manager: registrations in, ClusterProfiles with true status out. The wiring.

:class:`ClusterManagerRunnable` builds the parts and says who hears what; each part is built
with what it needs and nothing more (controller-runtime's ``main``: reconcilers given their
client and cache; ``docs/architecture.md``):

- one hub view (:mod:`.controllers.hub`: client, the Manager-owned cache, clock, metrics),
  one registration source, one member pool, one profile writer;
- the controllers, each a :class:`~cluster_inventory.controller.Controller` over its own keys:
  inventory (which profiles exist, which members are connected), status, tokens, grants,
  agent members, and the CSR approver;
- the events between them, as channels (controller-runtime's ``source.Channel``): what the
  member pool, the inventory controller and the status controller send, the others map to
  keys of their own queues. No controller calls into another;
- while it runs (leading, or sharded), the kube-state-metrics-style series of the profiles
  this replica holds in its registry (:class:`~cluster_inventory.controller.ProfileSeries`,
  ``docs/observability.md``).

Level-based: every event only queues a key, and each reconcile reads the caches' current
state and converges (``docs/manager.md``). One bad registration or member never stops the
others: a registration error becomes an Event on its Secret; an unreachable member becomes a
condition on its profiles.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
from collections.abc import Callable
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory import kube
from cluster_inventory._clock import utcnow
from cluster_inventory.controller import Controller, ProfileSeries, ShardMembership, gc_pauses
from cluster_inventory.manager.config import ManagerConfig
from cluster_inventory.manager.controllers.agent_approver import AgentApprover
from cluster_inventory.manager.controllers.agent_member_controller import AgentMemberController
from cluster_inventory.manager.controllers.findings import ManagerFindings
from cluster_inventory.manager.controllers.grant_controller import GrantController
from cluster_inventory.manager.controllers.hub import HubView
from cluster_inventory.manager.controllers.inventory_controller import (
    PLACEMENT,
    InventoryController,
)
from cluster_inventory.manager.controllers.profile_writer import ProfileWriter
from cluster_inventory.manager.controllers.status_controller import StatusController
from cluster_inventory.manager.controllers.targets import ProfileTargets
from cluster_inventory.manager.controllers.token_controller import TokenController
from cluster_inventory.manager.members.agent_credentials import AgentCredentials
from cluster_inventory.manager.members.agent_reports import AgentReports
from cluster_inventory.manager.members.pool import MemberPool
from cluster_inventory.manager.rules.grants import member_needs
from cluster_inventory.manager.rules.inventory_state import InventoryState
from cluster_inventory.manager.rules.member_keys import MemberKey
from cluster_inventory.manager.sources.combined import build_source
from cluster_inventory.manager.sources.source import RegistrationSource

__all__ = ["PLACEMENT", "ClusterManagerRunnable"]

#: Members started since the last settle of the garbage collector that make another worth it:
#: at least this many, and at least this share of the members held (a settle walks the whole
#: heap: a takeover that lands in batches settles once or twice, not once per batch).
_SETTLE_AFTER = 64
_SETTLE_SHARE = 0.25


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
        hub: The hub view every controller reads and writes through.
        shard: This replica's shard membership, or None (one replica serves every member).
            Set by :class:`~cluster_inventory.controller.Manager` before :meth:`prepare`.
            Sharded, a replica places, connects to and writes only the members it owns
            (by registration name, so all profiles of a member stay together), learns the
            member ids of the others from their profiles (a member registered twice is still
            kept once per inventory), and fences every profile write: it holds the profile
            (annotation ``cluster-inventory.dev/shard-holder``) and writes conditionally on
            the resourceVersion it read, so a replica whose view of the peers is behind gets a
            409 instead of overwriting (``docs/scale.md``).
        state: The desired profiles, kept up to date name by name.
        members: One connection per member, shared by every controller.
        targets: What a profile key stands for (the status and token controllers' view).
        inventory, status, tokens, grants, agent_members: The controllers.
        agent_approver: Approves accepted agent members' CSRs (``docs/agent.md``); None when
            ``config.agent_approval`` is off.
    """

    def __init__(
        self,
        hub: kube.ApiClient,
        config: ManagerConfig,
        *,
        source: RegistrationSource | None = None,
        now: Callable[[], dt.datetime] = utcnow,
        registry: CollectorRegistry = REGISTRY,
        identity: str = "cluster-inventory-manager",
    ) -> None:
        self.config = config
        self.now = now
        self.registry = registry
        self.identity = identity
        self.hub = HubView(hub, config, now=now, registry=registry, identity=identity)
        self.metrics = self.hub.metrics
        self.source = source or build_source(hub, config)
        self.shard: ShardMembership | None = None
        self.synced = asyncio.Event()
        self._prepared = False
        self._started_since_settle = 0
        self._unexport: Callable[[], None] | None = None
        #: Agent members' reports and heartbeats (docs/agent.md), read by their pool members.
        self.agents = AgentReports(hub, config)
        self.state = InventoryState()
        self.members = MemberPool(
            config,
            now=now,
            registry=registry,
            agents=self.agents,
            needs=functools.partial(member_needs, self.state, self.hub.profiles.get),
        )
        findings = ManagerFindings(hub, self.metrics, identity=identity, now=now)
        writer = ProfileWriter(self.hub)
        self.targets = ProfileTargets(self.state, self.hub.profiles, self.members)
        self.inventory = InventoryController(
            self.hub, self.source, self.state, self.members, writer, self.targets, findings
        )
        self.status = StatusController(self.hub, self.targets, writer)
        self.tokens = TokenController(
            self.hub, self.targets, self.members, AgentCredentials(hub, config), self.status
        )
        self.grants = GrantController(self.hub, self.members)
        self.agent_members = AgentMemberController(self.hub, self.agents, self.members, findings)
        self.agent_approver = (
            AgentApprover(
                hub,
                config,
                joined=self.agents.joined,
                registry=registry,
                identity=identity,
                now=now,
            )
            if config.agent_approval
            else None
        )
        self._wire()

    def _wire(self) -> None:
        """Who hears what: each event mapped to the keys of the controllers it concerns."""
        members, inventory = self.members, self.inventory
        members.changed.subscribe(self.grants.member_changed)
        members.changed.subscribe(self.status.member_changed)
        members.changed.subscribe(inventory.member_changed)
        members.started.subscribe(inventory.member_started)
        members.started.subscribe(self.grants.started)
        members.started.subscribe(self._settle_gc)
        members.settled.subscribe(lambda _: self.tokens.release())
        members.settled.subscribe(lambda _: self.grants.release())
        inventory.placed.subscribe(self.status.queue)
        inventory.deleted.subscribe(self.tokens.profile_deleted)
        inventory.deleted.subscribe(self.grants.profile_deleted)
        inventory.inventories_changed.subscribe(lambda _: self.grants.touch_all())
        self.status.joined.subscribe(self.tokens.queue)

    def _controllers(self) -> tuple[Controller[Any], ...]:
        own = (
            self.inventory.controller,
            self.status.controller,
            self.tokens.controller,
            self.grants.controller,
            self.agent_members.controller,
        )
        return own if self.agent_approver is None else (*own, self.agent_approver.controller)

    # -- the Runnable ----------------------------------------------------------------------
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
            self.hub.shard_with(self.shard)
            self.shard.on_change(lambda *_: self.inventory.touch_all())
        self.source.start(lambda *_: self.inventory.touch_source())
        self.members.start()
        await self.source.wait_synced()
        for controller in self._controllers():
            await controller.prepare()

    async def run(self) -> None:
        """Watch, reconcile, and clean up when cancelled.

        Raises:
            SourceUnavailableError: See :meth:`prepare`; nothing was written.
        """
        try:
            await self.prepare()
            self.inventory.controller.queue.add(PLACEMENT)
            for controller in self._controllers():
                await controller.start()
            # Exported only while this replica writes them: a standby holds none.
            self._unexport = ProfileSeries.for_registry(self.registry).add(self.hub.held_profiles)
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
        if self._unexport is not None:
            self._unexport()
            self._unexport = None
        self.tokens.close()
        await asyncio.gather(
            *(controller.stop(grace=0.0) for controller in self._controllers()),
            return_exceptions=True,
        )
        await asyncio.gather(self.source.stop(), self.members.close(), return_exceptions=True)

    def _settle_gc(self, conn: MemberKey) -> None:
        """Once a start-up or a takeover settled, what it built lives long: settle the heap.

        Later full collections then need not walk it (``controller.gc_pauses``,
        ``docs/scale.md``).
        """
        self._started_since_settle += 1
        if not self.members.starting and self._started_since_settle >= max(
            _SETTLE_AFTER, _SETTLE_SHARE * len(self.members)
        ):
            self._started_since_settle = 0
            gc_pauses.settle()

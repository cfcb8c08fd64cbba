"""Members shared among replicas: a Lease per replica and rendezvous hashing.

How replicas of one component (the cluster manager, a fleet's runtime) divide the member
clusters among themselves, the way multicluster-runtime's sharded provider and Argo CD's
consistent-hashing sharding do, without a Lease per member (``docs/scale.md``):

- **Peers**: every replica holds one ``coordination.k8s.io/v1`` Lease in a hub namespace,
  labelled ``cluster-inventory.dev/shard-group=<group>``, and renews it every
  ``renew_interval`` seconds: the hub takes ``replicas / renew_interval`` writes per second at
  rest, whatever the number of members. A replica watches the group's Leases; a peer is live
  while its Lease record changed less than ``leaseDurationSeconds`` ago, measured on *our*
  monotonic clock from when we saw the record change (client-go's rule for leader election:
  the peer's clock is never trusted). A replica that stops cleanly deletes its Lease, so its
  members move at once; a killed one is noticed after ``lease_duration``.
- **Owner**: a member belongs to the live replica with the highest hash of
  ``(replica, member)`` (rendezvous hashing): a replica joining or leaving moves about 1/N of
  the members, and every replica that sees the same peers computes the same owner.
- **Fence**: views of the peers differ for a moment while a replica joins or dies, so owning
  is not enough to write; what a component writes for a member carries the writing replica
  and every write is conditional on the object's ``resourceVersion`` (the cluster manager's
  ``cluster-inventory.dev/shard-holder`` annotation), so a second writer's write is refused
  (409). A replica whose renewals fail keeps its view: the others take its members once its
  Lease is old, and the fence refuses its writes to what they took.

One replica alone owns every member and behaves as an unsharded one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory import kube
from cluster_inventory._clock import utcnow
from cluster_inventory.api import format_micro_time, objects
from cluster_inventory.api.constants import (
    FIELD_MANAGER_SHARD,
)
from cluster_inventory.controller.rendezvous import (
    LABEL_SHARD_GROUP,
    ShardConfig,
    lease_name,
    rendezvous_owner,
)
from cluster_inventory.controller.shard_metrics import ShardMetrics
from cluster_inventory.kube.informer import Informer

__all__ = [
    "LABEL_SHARD_GROUP",
    "ShardConfig",
    "ShardMembership",
    "ShardMetrics",
    "rendezvous_owner",
]

_UNKNOWN = object()
_log = logging.getLogger("cluster_inventory.controller.sharding")


class ShardMembership:
    """This replica's place in a shard group: its Lease, the live peers, who owns a member.

    A :class:`~cluster_inventory.controller.Runnable` that runs on every replica (no leader
    election); :class:`~cluster_inventory.controller.Manager` adds it first when given a
    :class:`ShardConfig` and hands it to every runnable with a ``shard`` attribute.

    The Lease is renewed, and the group's Leases watched, on a loop of their own
    (:func:`cluster_inventory.kube.lease_loop`, with a connection of their own to the hub), so
    a replica whose main loop is busy with thousands of members still renews on time and
    still sees its peers' renewals when they happen (a peer's renewal read late would count
    it gone). Changes of the live set reach this loop's handlers through
    ``call_soon_threadsafe``.

    Args:
        hub: Client of the hub holding the Leases (cloned for the Lease loop).
        config: Group, identity and timings.
        clock: Monotonic seconds.
        registry: Where the shard metrics are registered.
        background: The loop running renewals and the Lease watch (the process's Lease
            loop by default).
    """

    needs_leader_election = False

    def __init__(
        self,
        hub: kube.ApiClient,
        config: ShardConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        registry: CollectorRegistry = REGISTRY,
        background: kube.BackgroundLoop | None = None,
    ) -> None:
        self.hub = hub
        self.config = config
        self.lease = lease_name(config.group, config.identity)
        self._clock = clock
        self._metrics = ShardMetrics.for_registry(registry)
        self._lateness = kube.LeaseMetrics.for_registry(registry).lateness.labels("shard")
        self._background = background or kube.lease_loop()
        self._main: asyncio.AbstractEventLoop | None = None
        # On the Lease loop: its client, the Leases' watch, what it saw and our renewals.
        self._lease_hub: kube.ApiClient | None = None
        self._leases: Informer | None = None
        self._leases_name = f"shard group {config.group} Leases"
        #: Lease name -> (record, when we saw it change, duration in seconds).
        self._seen: dict[str, tuple[tuple[Any, ...], float, float]] = {}
        self._renewed_at: float | None = None
        self._view: tuple[str, ...] = ()
        # On the main loop: the live replicas as last published, and the handlers.
        self._replicas: tuple[str, ...] = ()
        #: Owner of each member asked about, for the current ``_replicas``.
        self._owners: dict[str, str | None] = {}
        self._handlers: list[Callable[[], None]] = []
        self._prepared = False
        #: The renewals, started when we joined (not when the Manager runs us).
        self._keeping: concurrent.futures.Future[None] | None = None
        self._settled = False
        self._owned = 0

    # -- the view (main loop) ----------------------------------------------------------
    @property
    def replicas(self) -> tuple[str, ...]:
        """Live replica identities, sorted (this one included while its Lease is good)."""
        return self._replicas

    def owner(self, member: str) -> str | None:
        """The live replica owning ``member`` (None before this replica has settled)."""
        if not self._settled:
            return None
        found = self._owners.get(member, _UNKNOWN)
        if found is _UNKNOWN:
            # Memoized per view: a placement asks for every registration at once.
            found = self._owners[member] = rendezvous_owner(member, self._replicas)
        return found  # type: ignore[return-value]

    def owns(self, member: str) -> bool:
        """True if this replica owns ``member`` now (see the module docstring)."""
        return self.owner(member) == self.config.identity

    def is_live(self, identity: str) -> bool:
        """True if ``identity`` is a live replica of the group in this replica's view."""
        return identity in self._replicas

    def on_change(self, handler: Callable[[], None]) -> None:
        """Call ``handler()`` (no arguments, must not block) whenever the live replicas change."""
        self._handlers.append(handler)

    def report_owned(self, count: int) -> None:
        """Record how many members the component owns (``..._shard_owned_members``)."""
        self._owned = count
        self._metrics.owned_members.labels(self.config.group).set(count)

    def _publish(self, live: tuple[str, ...]) -> None:
        if live == self._replicas:
            return
        self._replicas = live
        self._owners.clear()
        if self._settled:
            self._notify()

    def _notify(self) -> None:
        for handler in self._handlers:
            try:
                handler()
            except Exception:  # one faulty handler must not stop the membership
                _log.exception("shard membership handler failed")

    # -- the Lease loop ----------------------------------------------------------------
    def _live(self, now: float) -> tuple[str, ...]:
        assert self._leases is not None
        live: set[str] = set()
        for lease in self._leases.items():
            identity = str(objects.spec(lease).get("holderIdentity") or "")
            if not identity or identity == self.config.identity:
                continue
            name = str(objects.meta(lease).get("name"))
            _, seen_at, duration = self._seen.get(name, ((), now, 0.0))
            if now - seen_at < duration:
                live.add(identity)
        if self._renewed_at is not None:
            # Once joined, a replica stays live in its own view even while its renewals fail:
            # dropping its members would stop and later restart thousands of connections on
            # a replica that is only slow. The others take its members once its Lease is
            # old; the fence then refuses its writes to the profiles they took.
            live.add(self.config.identity)
        return tuple(sorted(live))

    def _refresh(self) -> None:
        if self._leases is None:
            return
        now = self._clock()
        for lease in self._leases.items():
            name = str(objects.meta(lease).get("name"))
            spec = objects.spec(lease)
            record = (spec.get("holderIdentity"), spec.get("renewTime"))
            known = self._seen.get(name)
            duration = float(spec.get("leaseDurationSeconds") or self.config.lease_duration)
            if known is None or known[0] != record:
                self._seen[name] = (record, now, duration)
        present = {str(objects.meta(lease).get("name")) for lease in self._leases.items()}
        for gone in set(self._seen) - present:
            del self._seen[gone]
        live = self._live(now)
        if live == self._view:
            return
        joined, left = set(live) - set(self._view), set(self._view) - set(live)
        self._view = live
        self._metrics.replicas.labels(self.config.group).set(len(live))
        if self._settled:
            self._metrics.membership_changes.labels(self.config.group).inc()
        _log.info(
            "shard group %s: %d replicas (joined %s, left %s)",
            self.config.group,
            len(live),
            sorted(joined) or "-",
            sorted(left) or "-",
            extra={"object": self.config.identity},
        )
        if self._main is not None:
            self._main.call_soon_threadsafe(self._publish, live)

    def _body(self) -> dict[str, Any]:
        cfg = self.config
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": self.lease,
                "namespace": cfg.namespace,
                "labels": {LABEL_SHARD_GROUP: cfg.group},
            },
            "spec": {
                "holderIdentity": cfg.identity,
                "leaseDurationSeconds": max(1, round(cfg.lease_duration)),
                "renewTime": format_micro_time(utcnow()),
            },
        }

    async def renew(self) -> bool:
        """Write our Lease once (server-side apply; on the Lease loop); True if the hub took it."""
        started = self._clock()
        hub = self._lease_hub or self.hub
        try:
            await asyncio.wait_for(
                kube.apply(hub, kube.LEASES, self._body(), field_manager=FIELD_MANAGER_SHARD),
                timeout=self.config.renew_interval * 2,
            )
        except (kube.KubeError, TimeoutError) as exc:
            why = str(exc) or f"no answer within {self.config.renew_interval * 2:g} s"
            _log.warning("shard group %s: renewing our Lease failed: %s", self.config.group, why)
            return False
        self._renewed_at = started
        return True

    async def _join(self) -> None:
        """On the Lease loop: a client, the Lease watch listed once, our Lease written."""
        self._lease_hub = await kube.clone_client(self.hub)
        self._leases = Informer(
            self._lease_hub,
            kube.LEASES,
            namespace=self.config.namespace,
            label_selector=f"{LABEL_SHARD_GROUP}={self.config.group}",
            name=self._leases_name,
        )
        self._leases.add_handler(lambda *_: self._refresh())
        self._leases.start()
        try:
            await self._leases.wait_synced()
        except kube.KubeAPIError as exc:
            raise kube.SourceUnavailableError(self._leases_name, str(exc)) from None
        if not await self.renew():
            raise kube.SourceUnavailableError(
                f"shard Lease {self.config.namespace}/{self.lease}", "cannot be written"
            )
        self._refresh()

    async def _settle(self) -> None:
        """On the Lease loop: publish the view; count membership changes from now on."""
        self._view = ()
        self._refresh()
        self._settled = True

    async def _keep(self) -> None:
        """On the Lease loop: renew on schedule and expire silent peers, until cancelled."""
        cfg = self.config
        next_renew = self._clock() + cfg.renew_interval
        while True:
            now = self._clock()
            wake = [next_renew]
            wake += [seen + dur for _, seen, dur in self._seen.values() if seen + dur > now]
            if self._renewed_at is not None:
                wake.append(self._renewed_at + cfg.lease_duration)
            await asyncio.sleep(max(0.05, min(wake) - now + 0.01))
            now = self._clock()
            if now >= next_renew:
                self._lateness.observe(now - next_renew)
                await self.renew()
                next_renew = self._clock() + cfg.renew_interval
            self._refresh()

    async def _leave(self) -> None:
        """On the Lease loop: delete our Lease, stop the watch, close the client."""
        if self._renewed_at is not None and self._lease_hub is not None:
            with contextlib.suppress(kube.KubeError, TimeoutError):
                await asyncio.wait_for(
                    kube.delete(
                        self._lease_hub, kube.LEASES, self.lease, namespace=self.config.namespace
                    ),
                    timeout=3,
                )
        self._renewed_at = None
        if self._leases is not None:
            await self._leases.stop()
        if self._lease_hub is not None:
            await self._lease_hub.close()
            self._lease_hub = None

    # -- Runnable ----------------------------------------------------------------------
    async def prepare(self) -> None:
        """Join: write our Lease, list the group's Leases, wait ``settle`` for peers.

        Raises:
            SourceUnavailableError: The hub's Leases cannot be listed, or our Lease cannot be
                written (RBAC: the replica needs get, list, watch, create, patch and delete
                on ``leases`` in the namespace).
        """
        if self._prepared:
            return
        self._prepared = True
        self._main = asyncio.get_running_loop()
        await self._background.run(self._join())
        if self.config.settle:
            await asyncio.sleep(self.config.settle)
        await self._background.run(self._settle())
        await asyncio.sleep(0)  # the published view is handled before we report it
        _log.info(
            "shard group %s: joined as %s with %d replicas",
            self.config.group,
            self.config.identity,
            len(self._replicas),
        )
        self._notify()
        # Renewals start now: the other runnables prepare after us (their caches list), and
        # at 10,000 members that took longer than the Lease: every peer counted us gone.
        self._keeping = self._background.submit(self._keep())

    async def run(self) -> None:
        """Renew our Lease and expire silent peers (on the Lease loop) until cancelled."""
        await self.prepare()
        assert self._keeping is not None
        await asyncio.wrap_future(self._keeping)

    def ready(self) -> bool:
        """``/readyz``: joined the group (our Lease written, peers listed)."""
        return self._settled

    async def stop(self) -> None:
        """Leave: delete our Lease (peers take our members at once), stop the watch."""
        if not self._prepared:
            return
        self._prepared = False
        self._settled = False
        if self._keeping is not None:
            self._keeping.cancel()
            self._keeping = None
        await self._background.run(self._leave())

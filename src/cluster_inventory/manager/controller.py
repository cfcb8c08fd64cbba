"""The cluster manager: registrations in, ClusterProfiles with true status out.

Level-based: every event only queues a key (``placement`` or a profile), and each
reconcile reads the informers' current state and converges (``docs/manager.md``):

- *placement* computes the desired profiles (:mod:`.placement`), creates and deletes
  profiles of this manager, starts and stops member connections;
- a *profile* reconcile applies its status (server-side apply, only when something
  changed), its labels, and the consumer token Secret ``<inventory>/<profile>`` with the
  token's expiry beside it, and requeues itself for the next rotation.

One bad registration or member never stops the others: a registration error becomes an
Event on its Secret; an unreachable member becomes a condition on its profiles.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api import check_storable, format_time, objects
from cluster_inventory.api.constants import (
    GROUP,
    LABEL_CLUSTER_MANAGER,
    LABEL_INVENTORY_MEMBER_ID,
    V1ALPHA1,
)
from cluster_inventory.controller import Result, ShardMembership, Workers
from cluster_inventory.kube.informer import Informer, lookup
from cluster_inventory.kube.workqueue import WorkQueue
from cluster_inventory.manager._metrics import ManagerMetrics
from cluster_inventory.manager.config import ManagerConfig
from cluster_inventory.manager.fence import ProfileFence, member_ids_elsewhere
from cluster_inventory.manager.member import (
    FIRST_PROBES_IN_FLIGHT,
    MemberConnection,
    add_members,
    connection_key,
    start_member,
)
from cluster_inventory.manager.names import (
    FIELD_MANAGER,
    LABEL_TOKEN_FOR,
)
from cluster_inventory.manager.placement import (
    Inventory,
    ProfileKey,
    desired_profiles,
    duplicate_members,
    fallback_member_id,
    held_members,
    inventories,
    plan,
)
from cluster_inventory.manager.registration import (
    Registration,
    RegistrationSource,
)
from cluster_inventory.manager.reporting import ManagerReports
from cluster_inventory.manager.sources import build_source
from cluster_inventory.manager.status import (
    Observation,
    access_provider,
    build_status,
    status_matches,
)
from cluster_inventory.manager.tokens import token_secret, token_secret_data

__all__ = ["PLACEMENT", "ClusterManager", "fallback_member_id", "held_members"]

#: Seconds between placements while members are still starting.
_PLACEMENT_BATCH = 1.0
#: Seconds a first token waits while members are still starting (see reconcile_token).
_TOKENS_AFTER_START = 2.0
#: The work-queue key of the placement reconcile.
PLACEMENT = "placement"
_CONTROLLER = "clustermanager"
_log = logging.getLogger("cluster_inventory.manager")


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class ClusterManager:
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
        self.namespaces = Informer(hub, kube.NAMESPACES, name="hub Namespaces")
        self.profiles = Informer(
            hub,
            kube.CLUSTER_PROFILES,
            label_selector=f"{LABEL_CLUSTER_MANAGER}={config.name}",
            name="hub ClusterProfiles",
        )
        # One cluster-wide watch, or one per fixed inventory when the manager may read
        # Secrets only there (a cluster-wide list would be forbidden).
        self.token_secrets = [
            Informer(
                hub,
                kube.SECRETS,
                namespace=ns,
                label_selector=f"{LABEL_CLUSTER_MANAGER}={config.name},{LABEL_TOKEN_FOR}",
                name=f"hub token Secrets {ns}" if ns else "hub token Secrets",
            )
            for ns in (
                sorted(config.inventory_namespaces) if config.inventory_namespaces_only else [None]
            )
        ]
        self.queue: WorkQueue[Any] = WorkQueue(_CONTROLLER)
        self.token_queue: WorkQueue[ProfileKey] = WorkQueue(f"{_CONTROLLER}-tokens")
        self.members: dict[kube.ClusterConnection, MemberConnection] = {}
        self.desired: dict[ProfileKey, tuple[Registration, Inventory]] = {}
        self._by_member: dict[kube.ClusterConnection, set[ProfileKey]] = {}
        self._member_ids: dict[kube.ClusterConnection, str | None] = {}
        self._conflicts: set[ProfileKey] = set()
        self._written: dict[ProfileKey, str] = {}
        self._prepared = False
        #: ControlPlaneHealthy of each kept profile, counted into the profiles gauge.
        self._health: dict[ProfileKey, str] = {}
        self.synced = asyncio.Event()
        self.shard: ShardMembership | None = None
        self.fence: ProfileFence | None = None
        #: Members being started (paced: FIRST_PROBES_IN_FLIGHT at once).
        self._starting: dict[kube.ClusterConnection, asyncio.Task[None]] = {}
        self._start_gate = asyncio.Semaphore(FIRST_PROBES_IN_FLIGHT)

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
        placement = lambda *_: self.queue.add(PLACEMENT)  # noqa: E731
        if self.shard is not None:
            self.fence = ProfileFence(self.shard)
            self.shard.on_change(placement)
        self.source.start(placement)
        self.namespaces.add_handler(placement)
        self.profiles.add_handler(self._on_profile)
        for informer in self.token_secrets:
            informer.add_handler(self._on_token_secret)
        for informer in (self.namespaces, self.profiles, *self.token_secrets):
            informer.start()
        await self.source.wait_synced()
        for informer in (self.namespaces, self.profiles, *self.token_secrets):
            try:
                await informer.wait_synced()
            except kube.KubeAPIError as exc:
                raise kube.SourceUnavailableError(f"hub {informer.name}", str(exc)) from None

    async def run(self) -> None:
        """Watch, reconcile, and clean up when cancelled.

        Raises:
            SourceUnavailableError: See :meth:`prepare`; nothing was written.
        """
        workers = [
            self._workers(self.queue, self._reconcile_main, _CONTROLLER, self.config.workers),
            self._workers(
                self.token_queue,
                self.reconcile_token,
                f"{_CONTROLLER}-tokens",
                max(1, self.config.workers // 4),
            ),
        ]
        try:
            await self.prepare()
            self.queue.add(PLACEMENT)
            for pool in workers:
                pool.start()
            self.synced.set()
            await asyncio.gather(*(pool.wait() for pool in workers))
        finally:
            await asyncio.gather(*(pool.stop() for pool in workers))
            await self.close()

    def ready(self) -> bool:
        """``/readyz``: the sources and caches have been read and the workers run."""
        return self.synced.is_set()

    async def stop(self) -> None:
        """Stop what :meth:`prepare` started (the Manager's way out); see :meth:`close`."""
        await self.close()

    async def close(self) -> None:
        """Stop the source, the caches and every member connection (idempotent)."""
        await kube.cancel_and_wait(*self._starting.values())
        self._starting.clear()
        await asyncio.gather(
            self.source.stop(),
            self.namespaces.stop(),
            self.profiles.stop(),
            *(informer.stop() for informer in self.token_secrets),
            *(m.stop() for m in self.members.values()),
            return_exceptions=True,
        )
        self.members.clear()

    def _on_profile(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        meta = objects.meta(obj)
        key = ProfileKey(str(meta.get("namespace")), str(meta.get("name")))
        if event == "DELETED":
            self.queue.add(PLACEMENT)
        elif key in self.desired and self._written.get(key) != meta.get("resourceVersion"):
            # The echo of our own write carries nothing new; anything else is reconciled.
            self.queue.add(key)

    def _on_token_secret(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        meta = objects.meta(obj)
        key = ProfileKey(
            str(meta.get("namespace")), str((meta.get("labels") or {}).get(LABEL_TOKEN_FOR))
        )
        if key in self.desired:
            self.token_queue.add(key)

    def _member_changed(self, conn: kube.ClusterConnection) -> None:
        for key in self._by_member.get(conn, ()):
            self.queue.add(key)
        member = self.members.get(conn)
        member_id = member.observation.member_id if member is not None else None
        if self._member_ids.get(conn) != member_id:  # placement dedups members by their id
            self._member_ids[conn] = member_id
            self.queue.add(PLACEMENT)

    async def _reconcile_main(self, key: Any) -> float | None:
        if key == PLACEMENT:
            return await self.reconcile_placement()
        return await self.reconcile_profile(key)

    def _workers(
        self,
        queue: WorkQueue[Any],
        reconcile: Callable[[Any], Coroutine[Any, Any, float | None]],
        controller: str,
        count: int,
    ) -> Workers[Any]:
        """Workers of one queue; ``reconcile`` returns a requeue delay in seconds, or None."""

        async def as_result(key: Any) -> Result | None:
            delay = await reconcile(key)
            return None if delay is None else Result(requeue_after=delay)

        return Workers(
            queue,
            as_result,
            controller=controller,
            count=count,
            registry=self.registry,
            describe=lambda key: {"object": str(key)},
            log=_log,
        )

    # -- placement -------------------------------------------------------------------
    async def reconcile_placement(self) -> float | None:
        """Create and delete profiles and start or stop member connections.

        Returns:
            None (placement is event-driven).
        """
        registrations, invalid = self.source.snapshot()
        self.reports.source_failures(self.source.failures())
        await self.reports.invalid_registrations(invalid)
        held = held_members(registrations, [error for _, error in invalid])
        invs = inventories(
            self.namespaces.items(),
            self.config.inventory_namespaces,
            self.config.default_member_role,
            fixed_only=self.config.inventory_namespaces_only,
        )
        owned = {name: reg for name, reg in registrations.items() if self._mine(name)}
        if self.shard is not None:
            self.shard.report_owned(len(owned))
        # Every member any inventory wants is connected and probed once before its profiles
        # are created or deleted, so that registrations reaching one member are known as such
        # the first time (otherwise each would get a profile, deleted again at the next
        # placement). Members start in the background, paced; each first probe queues the
        # placement again, so profiles appear as their members answer.
        candidates = desired_profiles(owned, invs)
        needed = {connection_key(reg.connection) for reg, _ in candidates.values()}
        not_ready = {
            connection_key(reg.connection): reg.not_ready
            for reg, _ in candidates.values()
            if reg.not_ready
        }
        self._start_members(needed - set(self.members), not_ready)
        pending = {
            name
            for name, reg in owned.items()
            if (member := self.members.get(connection_key(reg.connection))) is not None
            and not member.observed
        }
        member_ids = member_ids_elsewhere(self.profiles.items(), registrations, owned) | {
            name: member.observation.member_id
            for name, reg in owned.items()
            if (member := self.members.get(connection_key(reg.connection))) is not None
            and member.observation.member_id
        }
        desired = {
            key: entry
            for key, entry in desired_profiles(registrations, invs, member_ids).items()
            if key.name in owned
        }
        for dup in duplicate_members(registrations, invs, member_ids):
            if dup.registration in owned:
                await self.reports.duplicate(dup, registrations[dup.registration])
        existing = {
            key
            for key in (ProfileKey(*k.split("/", 1)) for k in self.profiles.keys())
            if self._mine(key.name)
        }
        todo = plan(desired, existing, invs)
        self.reports.held([k for k in todo.delete if held is None or k.name in held])
        deletions = [k for k in todo.delete if held is not None and k.name not in held | pending]
        creations = [k for k in todo.create if k.name not in pending]
        by_member: dict[kube.ClusterConnection, set[ProfileKey]] = {}
        for key, (reg, _) in desired.items():
            by_member.setdefault(connection_key(reg.connection), set()).add(key)
        previous = self.desired
        self.desired, self._by_member = desired, by_member
        await kube.gather_bounded(
            [functools.partial(self._create_profile, key, *desired[key]) for key in creations],
            self.config.workers * 2,
        )
        await kube.gather_bounded(
            [functools.partial(self._delete_profile, key, previous.get(key)) for key in deletions],
            self.config.workers * 2,
        )
        for conn in set(self.members) - needed:
            starting = self._starting.pop(conn, None)
            await kube.cancel_and_wait(starting)
            await self.members.pop(conn).stop()
        if self.shard is not None:
            moved = [k for k in previous.keys() - desired.keys() if k not in deletions]
            await kube.gather_bounded(
                [functools.partial(self._release, key, *previous[key]) for key in moved],
                self.config.workers * 2,
            )
        # New entries, and those whose registration or inventory changed; the others are
        # queued by their own events (member observations, profile updates). Queueing every
        # key at every placement cost O(N) reconciles per placement, and placements come once
        # per member start-up during a cold start.
        for key, entry in desired.items():
            if previous.get(key) != entry:
                self.queue.add(key)
        return None

    # -- sharding --------------------------------------------------------------------
    def _mine(self, member: str) -> bool:
        """True if this replica serves ``member`` (always, unsharded)."""
        return self.shard is None or self.shard.owns(member)

    async def _release(self, key: ProfileKey, reg: Registration, inv: Inventory) -> None:
        """Give up holding a profile whose member moved to another replica (one write).

        Conditional on the cached resourceVersion: if another replica holds it already, or
        the cache is behind, the 409 means there is nothing left to give up.
        """
        current = self.profiles.get(str(key))
        assert self.fence is not None
        if current is None:
            return
        holder, version = self.fence.holding(key, current)
        self.fence.forget(key)
        if holder != self.fence.identity:
            return
        labels = objects.labels_of(current)
        body = self._profile_metadata(key, reg, str(labels.get(LABEL_INVENTORY_MEMBER_ID)), "")
        body["metadata"]["resourceVersion"] = version
        try:
            await kube.apply(self.hub, kube.CLUSTER_PROFILES, body, field_manager=FIELD_MANAGER)
        except (kube.ConflictError, kube.NotFoundError):
            return
        self._count_health(key, None)

    def _start_members(
        self,
        conns: set[kube.ClusterConnection],
        not_ready: Mapping[kube.ClusterConnection, tuple[str, str]],
    ) -> None:
        """Add member connections and start them in the background (paced)."""
        for member in add_members(
            self.members,
            conns,
            not_ready,
            config=self.config,
            on_change=self._member_changed,
            now=self.now,
        ):
            conn = connection_key(member.connection)
            self._starting[conn] = asyncio.get_running_loop().create_task(
                self._start_one(conn, member), name=f"start {member.label}"
            )

    async def _start_one(self, conn: kube.ClusterConnection, member: MemberConnection) -> None:
        async with self._start_gate:
            await start_member(member)
        self._starting.pop(conn, None)
        # Its profiles can be placed now: one placement per second at most while many
        # members start (each placement reads every registration).
        self.queue.add_after(PLACEMENT, 0 if not self._starting else _PLACEMENT_BATCH)

    def _profile_metadata(
        self, key: ProfileKey, reg: Registration, member_id: str, holder: str | None = None
    ) -> dict[str, Any]:
        """Labels and spec of a profile; sharded, the holder annotation too (ours by default).

        Every replica applies with the same field manager, so every apply carries every
        field (one left out would be removed).
        """
        body: dict[str, Any] = {
            "apiVersion": f"{GROUP}/{V1ALPHA1}",
            "kind": "ClusterProfile",
            "metadata": {
                "name": key.name,
                "namespace": key.namespace,
                "labels": {
                    LABEL_CLUSTER_MANAGER: self.config.name,
                    LABEL_INVENTORY_MEMBER_ID: member_id,
                },
            },
            "spec": {"displayName": reg.display_name, "clusterManager": {"name": self.config.name}},
        }
        if self.fence is not None:
            body["metadata"]["annotations"] = self.fence.annotations(holder)
        return body

    def _member_id(self, reg: Registration) -> str:
        member = self.members.get(connection_key(reg.connection))
        observed = member.observation.member_id if member else None
        return observed or fallback_member_id(self.config.name, reg.name)

    async def _create_profile(self, key: ProfileKey, reg: Registration, inv: Inventory) -> None:
        body = self._profile_metadata(key, reg, self._member_id(reg))
        try:
            await kube.create(self.hub, kube.CLUSTER_PROFILES, body)
        except kube.AlreadyExistsError:
            found = await kube.get(
                self.hub, kube.CLUSTER_PROFILES, key.name, namespace=key.namespace
            )
            owner = (objects.spec(found).get("clusterManager") or {}).get("name")
            if owner != self.config.name and key not in self._conflicts:
                self._conflicts.add(key)
                _log.warning(
                    "profile exists and belongs to cluster manager %r; left untouched",
                    owner,
                    extra={"object": str(key), "cluster": reg.name},
                )
            return
        self._conflicts.discard(key)
        _log.info("created profile", extra={"object": str(key), "cluster": reg.name})

    async def _delete_profile(
        self, key: ProfileKey, was: tuple[Registration, Inventory] | None
    ) -> None:
        await kube.delete(self.hub, kube.CLUSTER_PROFILES, key.name, namespace=key.namespace)
        await kube.delete(self.hub, kube.SECRETS, key.name, namespace=key.namespace)
        self._written.pop(key, None)
        if self.fence is not None:
            self.fence.forget(key)
        self._count_health(key, None)
        _log.info("deleted profile", extra={"object": str(key)})
        if was is None:
            return
        conn = connection_key(was[0].connection)
        member = self.members.get(conn)
        still_used = any(k.namespace == key.namespace for k in self._by_member.get(conn, ()))
        if member is not None and not still_used:
            await member.forget_inventory(key.namespace)

    # -- one profile -----------------------------------------------------------------
    def _target(
        self, key: ProfileKey
    ) -> tuple[Registration, Inventory, dict[str, Any] | None, MemberConnection | None] | None:
        """What a reconcile of ``key`` works on, or None when the profile is not ours to keep.

        Its registration and inventory, the stored profile and the member connection (either
        of the last two None while it does not exist yet).
        """
        entry = self.desired.get(key)
        if entry is None or key in self._conflicts:
            return None
        reg, inv = entry
        return (
            reg,
            inv,
            self.profiles.get(str(key)),
            self.members.get(connection_key(reg.connection)),
        )

    async def reconcile_profile(self, key: ProfileKey) -> float | None:
        """Apply one profile's labels and status if they changed; queue its token Secret.

        Returns:
            A short retry (seconds) while the profile or its member connection does not exist
            yet; None otherwise.

        Raises:
            KubeAPIError: A write to the hub or the member failed (the key is retried).
        """
        target = self._target(key)
        if target is None:
            return None
        reg, _, current, member = target
        if current is None or member is None:
            return 1.0
        if not member.observed:
            return None  # its first probe queues the placement, which queues this key
        version: str | None = None  # sharded: every write is conditional on it (the fence)
        claim = False
        if self.fence is not None:
            holder, version = self.fence.holding(key, current)
            if self.fence.blocked_by(holder):
                # Its holder has not let it go yet (its view of the peers is behind ours);
                # its release is a profile update, which queues this key again.
                return self.fence.membership.config.renew_interval
            claim = holder != self.fence.identity
        obs = member.observation
        labels = objects.labels_of(current)
        spec = objects.spec(current)
        member_id = obs.member_id or labels.get(LABEL_INVENTORY_MEMBER_ID)
        try:
            if (
                claim
                or labels.get(LABEL_INVENTORY_MEMBER_ID) != member_id
                or spec.get("displayName") != reg.display_name
            ):
                body = self._profile_metadata(
                    key, reg, member_id or fallback_member_id(self.config.name, reg.name)
                )
                if version is not None:
                    body["metadata"]["resourceVersion"] = version
                written = await kube.apply(
                    self.hub, kube.CLUSTER_PROFILES, body, field_manager=FIELD_MANAGER
                )
                if self.fence is not None:
                    version = self.fence.wrote(key, current, written)
            return await self._apply_status(key, reg, current, obs, version)
        except kube.ConflictError:
            if version is None:
                raise
            # Fenced: someone else wrote the profile since we read it (another replica took
            # it, or our cache is behind). Read again shortly; never overwrite.
            self.metrics.fenced_writes.inc()
            return 0.2

    async def _apply_status(
        self,
        key: ProfileKey,
        reg: Registration,
        current: dict[str, Any],
        obs: Observation,
        version: str | None,
    ) -> float | None:
        provider = (
            None
            if reg.not_ready
            else access_provider(self.config.access_provider, reg.connection, key.name)
        )
        status = build_status(
            obs,
            provider,
            current.get("status"),
            self.now(),
            source_properties=reg.properties,
        )
        if not status_matches(status, current.get("status")):
            check_storable({"metadata": objects.meta(current), "status": status})
            meta: dict[str, Any] = {"name": key.name, "namespace": key.namespace}
            if version is not None:
                meta["resourceVersion"] = version
            written = await kube.apply(
                self.hub,
                kube.CLUSTER_PROFILES,
                {
                    "apiVersion": f"{GROUP}/{V1ALPHA1}",
                    "kind": "ClusterProfile",
                    "metadata": meta,
                    "status": status,
                },
                field_manager=FIELD_MANAGER,
                subresource="status",
                # One member's change is one such write per inventory, all on the hub: no
                # second (strict) decoding of a body built from a dict (see kube.apply).
                field_validation="Ignore",
            )
            self._written[key] = str(objects.meta(written).get("resourceVersion"))
            if self.fence is not None:
                self.fence.wrote(key, current, written)
            self.metrics.status_writes.inc()
        self._count_health(key, obs.healthy.status)
        if obs.joined.status == "True":
            self.token_queue.add(key)
        return None

    def _count_health(self, key: ProfileKey, status: str | None) -> None:
        """Record a profile's ControlPlaneHealthy (None: gone) in the profiles gauge."""
        if self._health.get(key) == status:
            return
        if status is None:
            self._health.pop(key, None)
        else:
            self._health[key] = status
        counts = {"True": 0, "False": 0, "Unknown": 0}
        for other, value in self._health.items():
            if other.namespace == key.namespace:
                counts[value] = counts.get(value, 0) + 1
        for value, count in counts.items():
            self.metrics.profiles.labels(key.namespace, value).set(count)

    async def reconcile_token(self, key: ProfileKey) -> float | None:
        """Keep the consumer token Secret ``<inventory>/<profile>`` current.

        Runs on its own queue with fewer workers, so that status (what every consumer reads
        first) is never queued behind token minting; and a token not minted yet waits while
        members are still starting (a cold start, a dead replica's share): minting takes five
        requests per member, and on a busy fleet it made the first probes of the others fail.

        Returns:
            Seconds until the token's rotation is due (or until members have started), or
            None.

        Raises:
            KubeAPIError: Minting on the member or writing the Secret failed (retried).
        """
        target = self._target(key)
        if target is None:
            return None
        _, inv, current, member = target
        if current is None or member is None or member.observation.joined.status != "True":
            return None
        if self._starting and member.rotation_due(inv.namespace, inv.member_role, 1.0) is None:
            return _TOKENS_AFTER_START
        token = await member.token_for(
            inv.namespace,
            inv.member_role,
            lifetime=self.config.token_lifetime,
            fraction=self.config.rotation_fraction,
        )
        await self._store_token(key, current, token)
        due = member.rotation_due(inv.namespace, inv.member_role, self.config.rotation_fraction)
        return max(1.0, (due - self.now()).total_seconds()) if due else None

    async def _store_token(
        self, key: ProfileKey, profile: dict[str, Any], token: kube.ServiceAccountToken
    ) -> None:
        data = token_secret_data(token)
        existing = lookup(self.token_secrets, str(key))
        if existing is not None and existing.get("data") == data:
            return
        secret = token_secret(
            key, profile_uid=objects.meta(profile).get("uid"), manager=self.config.name, data=data
        )
        await kube.apply(self.hub, kube.SECRETS, secret, field_manager=FIELD_MANAGER)
        _log.info(
            "stored member token",
            extra={"object": str(key), "expires": format_time(token.expiration)},
        )

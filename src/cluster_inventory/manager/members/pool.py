"""The member pool: one connection per member, started at the pace this replica can take.

Every controller of the cluster manager (inventory, status, tokens, grants) works on the same
:class:`MemberPool`: a :class:`~cluster_inventory.manager.members.connection.MemberConnection` per
distinct connection (server, CA, credential), started in the background and stopped when no
registration needs it any more.

Start-up is paced by an :class:`~cluster_inventory.controller.overload.AdaptiveLimit`
instead of a fixed number: a start (the client, its first probe, the first ClusterProperty
list) that answered while this replica kept up lets one more start at once; our own event
loop lagging, or a member answering 429 or timing out, halves the pace. A replica taking
thousands of members (a cold start, a dead peer's share) so starts as fast as it and the
members can answer, and never so fast that its own probes time out (``docs/scale.md``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import logging
import time
from collections.abc import Callable, Iterator, Mapping

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory import kube
from cluster_inventory._clock import utcnow
from cluster_inventory.api import objects
from cluster_inventory.controller.channel import Channel
from cluster_inventory.controller.overload import (
    AdaptiveLimit,
    CpuPressure,
    LoopLag,
    OverloadMetrics,
)
from cluster_inventory.manager.config import ManagerConfig
from cluster_inventory.manager.members.accounts import NOTHING_KNOWN, list_grants, remove_grants
from cluster_inventory.manager.members.agent_member import AgentMember, AgentReports
from cluster_inventory.manager.members.connection import MemberConnection
from cluster_inventory.manager.rules.grants import Needs, unneeded
from cluster_inventory.manager.rules.member_keys import AgentMemberKey, MemberKey
from cluster_inventory.manager.rules.status import Observation

__all__ = ["Member", "MemberPool"]

#: A member of the pool: dialled and probed, or observed through its agent's report.
Member = MemberConnection | AgentMember

_log = logging.getLogger("cluster_inventory.manager")
#: Lag during a member's start, as a share of the probe timeout, that halves the start pace.
_START_LAG_FRACTION = 0.5
#: Members added at once, none starting, that restart the start limit's slow start.
_BURST = 32
#: Longest wait (seconds) between two tries to remove a departed member's grants.
_RETIRE_BACKOFF_MAX = 60.0


class _NotRemoved(Exception):
    """Why a member's consumer accounts cannot be removed yet (in the retry's warning)."""


class MemberPool:
    """The cluster manager's member connections, keyed by member (see :func:`member_key`).

    What happens to members is sent on three channels (controller-runtime's
    ``source.Channel``), which each controller subscribes to and maps to the keys of its own
    queue.

    Args:
        config: The manager's settings.
        now: Wall clock (token rotation).
        registry: Where the manager's and the pool's metrics are registered.
        lag: This process's event-loop lag (one is made and started with the pool if None).
        agents: The hub's agent reports, for members keyed by
            :class:`~cluster_inventory.manager.rules.member_keys.AgentMemberKey` (None: every
            member is dialled).
        needs: ``(connection key, member id) -> what that member needs of the manager``
            (:class:`.grants.Needs`): the grants its accounts keep, and what a member that
            left keeps (another registration may reach the same member).

    Attributes:
        changed: Sends a member's key whenever its observation changes.
        started: Sends a member's key once it started (its first probe answered, its
            properties listed or given up on).
        settled: Sends None whenever no member is starting any more (:attr:`starting`).
    """

    def __init__(
        self,
        config: ManagerConfig,
        *,
        now: Callable[[], dt.datetime] = utcnow,
        registry: CollectorRegistry = REGISTRY,
        lag: LoopLag | None = None,
        agents: AgentReports | None = None,
        needs: Callable[[MemberKey, str | None], Needs] = (lambda conn, member_id: NOTHING_KNOWN),
    ) -> None:
        self.config = config
        self.agents = agents
        self._needs = needs
        self.now = now
        self.registry = registry
        self.changed: Channel[MemberKey] = Channel("member observation changed")
        self.started: Channel[MemberKey] = Channel("member started")
        self.settled: Channel[None] = Channel("no member starting")
        self._own_lag = lag is None
        window = max(60.0, 2 * config.probe_interval)
        self.lag = lag or LoopLag(
            registry=registry, window=window, pressure=CpuPressure.for_process()
        )
        gauge = OverloadMetrics.for_registry(registry).start_limit
        self.limit = AdaptiveLimit(initial=32, minimum=8, maximum=256, on_change=gauge.set)
        #: Probes in flight at once, over every member: halved when one is deferred (we were
        #: behind), so a busy replica sends fewer probes instead of more re-probes.
        self.probes = AdaptiveLimit(initial=64, minimum=8, maximum=1024)
        self._members: dict[MemberKey, Member] = {}
        # Its starts and retirements: a crash is logged when it happens (and raised by close).
        self._tasks = kube.TaskSet("member pool", logger=_log)
        self._starting: dict[MemberKey, asyncio.Task[None]] = {}
        #: Members that left the manager, whose grants are being removed (retried until the
        #: member answers; cancelled if the member comes back).
        self._retiring: dict[MemberKey, asyncio.Task[None]] = {}
        #: Members no inventory selects whose grants were checked once by :meth:`sweep`.
        self._swept: set[MemberKey] = set()

    # -- the mapping -------------------------------------------------------------------
    def __contains__(self, conn: object) -> bool:
        return conn in self._members

    def __iter__(self) -> Iterator[MemberKey]:
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)

    def get(self, conn: MemberKey) -> Member | None:
        """The member connection for ``conn`` (a connection key), or None."""
        return self._members.get(conn)

    def values(self) -> list[Member]:
        """Every member connection."""
        return list(self._members.values())

    def member_id(self, conn: MemberKey) -> str | None:
        """The member id (``kube-system`` UID) observed through ``conn``, if any."""
        member = self._members.get(conn)
        return member.observation.member_id if member is not None else None

    @property
    def starting(self) -> bool:
        """True while some member is still starting."""
        return bool(self._starting)

    # -- start and stop ----------------------------------------------------------------
    def start(self) -> None:
        """Start sampling the event loop's lag (the pool's own, if it made it)."""
        if self._own_lag:
            self.lag.start()

    def add(
        self,
        conns: set[MemberKey],
        not_ready: Mapping[MemberKey, tuple[str, str]],
        seeds: Mapping[MemberKey, Observation] | None = None,
        names: Mapping[MemberKey, str] | None = None,
    ) -> None:
        """Add a connection for each of ``conns`` and start it in the background (paced).

        A member its source calls not ready (``not_ready``: connection key -> reason,
        message) is never contacted: its connection only records why (also one already
        known). ``seeds`` (connection key -> observation) are what a profile's last holder
        observed: such a member starts with its ClusterProperty list, not a probe
        (:meth:`_start_member`, :func:`~cluster_inventory.manager.rules.status.seed_observation`).
        ``names`` (connection key -> registration name) name the members in logs and metrics.
        """
        seeds, names = seeds or {}, names or {}
        if not self._starting and len(conns) >= _BURST:
            # A takeover, a restart of the sources: start as fast as it answers again.
            self.limit.restart()
        for conn, (reason, message) in not_ready.items():
            if conn in self._members:
                self._members[conn].fail(reason, message)
        for conn in conns:
            self._swept.discard(conn)
            retiring = self._retiring.pop(conn, None)
            if retiring is not None:
                retiring.cancel()  # it is back before its grants were removed: keep them
            member = self._new_member(conn, seeds.get(conn), names.get(conn, ""))
            self._members[conn] = member
            if conn in not_ready:
                member.fail(*not_ready[conn])
                continue
            self._starting[conn] = self._tasks.spawn(
                self._start_one(conn, member), name=f"start {member.label}"
            )

    def _new_member(self, conn: MemberKey, seed: Observation | None, name: str) -> Member:
        on_change = functools.partial(self.changed.send, conn)
        if isinstance(conn, AgentMemberKey):
            if self.agents is None:
                raise ValueError(f"{conn}: a member pool without agent reports has none")
            return AgentMember(
                conn,
                config=self.config,
                on_change=on_change,
                reports=self.agents,
                now=self.now,
                registry=self.registry,
            )
        return MemberConnection(
            conn,
            config=self.config,
            on_change=on_change,
            now=self.now,
            lag=self.lag,
            probes=self.probes,
            registry=self.registry,
            seed=seed,
            needs=functools.partial(self._needs, conn),
            name=name,
        )

    async def _start_one(self, conn: MemberKey, member: Member) -> None:
        async with self.limit.slot():
            began = time.monotonic()
            await self._start_member(member)
            # Starting members makes the loop busy by itself (TLS handshakes, first lists):
            # only lag that eats into a probe's timeout, or a member answering 429 or not in
            # time, says the pace is too high.
            slow = self.lag.max_since(began) >= _START_LAG_FRACTION * self.config.probe_timeout
            if slow or member.deferred or member.busy:
                self.limit.overload()
            else:
                self.limit.success()
        self._starting.pop(conn, None)
        self.started.send(conn)
        if not self._starting:
            self.settled.send(None)

    @staticmethod
    async def _start_member(member: Member) -> None:
        """Start ``member``: its first probe answered and its properties listed (or given up).

        The ClusterProperty list is waited for at most ``probe_timeout`` seconds. A member
        taken over from a holder that saw it healthy (seeded) is not probed first: its list
        answering is evidence enough that its API server serves, and its probes keep their
        cadence from the takeover; only a list that does not answer probes it at once. A
        takeover so costs two member requests per member, the list and the watch. Never
        raises: TLS material that does not load is recorded on the member.
        """
        try:
            await member.start(probe_first=not member.seeded)
        except kube.KubeError as exc:
            _log.warning("cannot start member connection: %s", exc, extra={"cluster": member.label})
            member.fail("RegistrationInvalid", f"the registration kubeconfig does not load: {exc}")
            return
        listed = await member.properties_listed(member.config.probe_timeout)
        if member.seeded and not listed:
            await member.probe_safely()  # the last holder's verdict is in doubt: ask now

    async def remove(self, conn: MemberKey, *, left: bool = False) -> Member | None:
        """Stop and forget the connection ``conn`` (starting or started); returns it.

        Args:
            conn: The connection key.
            left: The member left this cluster manager (its registration is gone, or no
                inventory selects it; not merely moved to another replica): what the manager
                made on it for its consumers and nothing needs any more (another
                registration may reach the same member) is removed too, in the background,
                retried with backoff while the member does not answer.
        """
        starting = self._starting.pop(conn, None)
        await kube.cancel_and_wait(starting)
        if starting is not None and not self._starting:
            self.settled.send(None)  # the last member starting was removed
        member = self._members.pop(conn, None)
        if member is not None:
            await member.stop()
            if left and isinstance(member, MemberConnection):  # an agent's: nothing of ours
                self._retiring[conn] = self._tasks.spawn(
                    self._remove_grants(conn, member.connection, member.observation.member_id),
                    name=f"retire {member.label}",
                )
        return member

    def sweep(
        self, registered: Mapping[MemberKey, kube.ClusterConnection | AgentMemberKey]
    ) -> None:
        """Check once per process the members no inventory selects, removing what none needs.

        Such a member is never connected (no inventory wants it), so a grant its last
        inventory left while no replica ran, or while this one was down, would stay: each is
        reached once in the background (a client, a read of its member id, a LIST per kind),
        as a member that left is (:meth:`remove`). Agent members hold nothing of ours.

        Args:
            registered: Connection key -> the registration's connection (with its
                credential), of the registrations this replica owns that no inventory selects.
        """
        for conn, connection in registered.items():
            if conn in self._members or conn in self._retiring or conn in self._swept:
                continue
            if isinstance(connection, AgentMemberKey):
                continue
            self._swept.add(conn)
            self._retiring[conn] = self._tasks.spawn(
                self._remove_grants(conn, connection, None), name=f"sweep {connection.server}"
            )

    async def _remove_grants(
        self,
        conn: MemberKey,
        connection: kube.ClusterConnection,
        member_id: str | None,
    ) -> None:
        """Remove this manager's accounts and bindings nothing needs from a member not served.

        A member that left, or one no inventory selects (:meth:`sweep`). Retried with backoff
        while the member does not answer, or while the manager cannot tell what is needed
        (:attr:`.grants.Needs.complete`).
        """
        throttle = kube.Throttle(
            "remove the consumer accounts of a member not served",
            logger=_log,
            backoff=kube.Backoff(first=1.0, cap=_RETIRE_BACKOFF_MAX),
            extra={"cluster": connection.server},
        )
        while True:
            try:
                removed = await self._remove_unneeded(conn, connection, member_id)
            except kube.KubeError as exc:
                await throttle.pause(_NotRemoved(f"it does not answer: {exc}"))
                continue
            if removed is not None:
                break
            await throttle.pause(
                _NotRemoved("what it still needs is not known (an invalid registration)")
            )
        throttle.succeeded()
        if removed:
            _log.info(
                "member not served; removed its %d consumer account objects",
                removed,
                extra={"cluster": connection.server},
            )
        self._retiring.pop(conn, None)

    async def _remove_unneeded(
        self,
        conn: MemberKey,
        connection: kube.ClusterConnection,
        member_id: str | None,
    ) -> int | None:
        """One try of :meth:`_remove_grants`: how many removed, or None while needs are unknown.

        Raises:
            KubeError: The member cannot be read or refused a delete.
        """
        client = await kube.new_client(connection)
        try:
            held = await list_grants(client, self.config.name, self.config.member_namespace)
            if member_id is None and held:  # another registration may reach it: which member?
                found = await kube.get(client, kube.NAMESPACES, "kube-system")
                member_id = objects.meta(found).get("uid")
            gone = unneeded(
                held,
                self._needs(conn, member_id),
                manager=self.config.name,
                namespace=self.config.member_namespace,
            )
            return None if gone is None else await remove_grants(client, gone)
        finally:
            await client.close()

    async def close(self) -> None:
        """Stop every member connection and the lag sampler (idempotent).

        Raises:
            Exception: What a starting or retiring task raised, once everything is stopped
                (a failed task no longer leaves the members and the sampler running).
        """
        try:
            await kube.cancel_and_wait(*self._starting.values(), *self._retiring.values())
        finally:
            self._starting.clear()
            self._retiring.clear()
            members = list(self._members.values())
            self._members.clear()
            await asyncio.gather(*(m.stop() for m in members), return_exceptions=True)
            if self._own_lag:
                await self.lag.stop()

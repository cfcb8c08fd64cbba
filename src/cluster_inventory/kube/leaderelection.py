"""Lease leader election (``coordination.k8s.io/v1``) with client-go's rules and timings.

One replica holds the Lease and renews it every ``retry_period``; the others poll. A Lease is
taken over only when its record has not changed for ``lease_duration`` seconds, measured on
*our* monotonic clock from when we first saw that record (client-go's rule: the holder's
clock is never trusted). Every write is an optimistic update on the read
``resourceVersion``, so two candidates never both win. A leader that cannot renew within
``renew_deadline`` steps down. On a clean stop the Lease is released (holder cleared,
duration 1 s) so a successor starts at once. Defaults are client-go's: 15 s / 10 s / 2 s.
The clock and sleep are injectable so tests need not wait.

Given a :class:`~cluster_inventory.kube.background.BackgroundLoop`, the leader renews there,
with its own hub connection, as client-go renews on a goroutine of its own: a leader whose
main loop is busy with its work still renews on time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Gauge

from cluster_inventory._clock import utcnow
from cluster_inventory.api import format_micro_time
from cluster_inventory.kube._client import clone_client
from cluster_inventory.kube._k8s import ApiClient
from cluster_inventory.kube._metrics import LeaseMetrics, PerRegistry, metric
from cluster_inventory.kube._resources import request
from cluster_inventory.kube._tasks import cancel_and_wait
from cluster_inventory.kube.background import BackgroundLoop
from cluster_inventory.kube.errors import (
    ConflictError,
    ForbiddenError,
    KubeAPIError,
    KubeError,
    LeaseUnavailableError,
    NotFoundError,
)
from cluster_inventory.kube.resources import LEASES

__all__ = ["LeaderElectionConfig", "LeaderElector"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _LeaderMetrics(PerRegistry):
    """client-go's leader-election gauge, by Lease name (1 while this replica leads)."""

    master_status: Gauge = metric(
        Gauge, "leader_election_master_status", "Is this replica the leader (1/0)", ["name"]
    )


@dataclass(frozen=True, kw_only=True)
class LeaderElectionConfig:
    """Where the Lease is and how long things take (seconds).

    Attributes:
        namespace: Namespace of the Lease.
        name: Lease name.
        identity: This replica's identity (pod name, or host + pid).
        lease_duration: How long a Lease is honoured without renewal (client-go 15).
        renew_deadline: How long a leader keeps trying to renew before stepping down (10).
        retry_period: Time between attempts (2).
    """

    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError(
                "leader election needs lease_duration > renew_deadline > retry_period > 0, got "
                f"{self.lease_duration}/{self.renew_deadline}/{self.retry_period}"
            )
        if not self.identity:
            raise ValueError("leader election identity must not be empty")


class LeaderElector:
    """Acquire, hold and release one Lease.

    Args:
        client: Client of the cluster holding the Lease (the hub).
        config: Lease and timings.
        clock: Monotonic seconds.
        sleep: Awaitable sleep.
        registry: Where ``leader_election_master_status`` is registered.
        background: Renew on this loop (with a clone of ``client``) instead of the caller's.
    """

    def __init__(
        self,
        client: ApiClient,
        config: LeaderElectionConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        registry: CollectorRegistry = REGISTRY,
        background: BackgroundLoop | None = None,
    ) -> None:
        self.client = client
        self.background = background
        self._lateness = LeaseMetrics.for_registry(registry).lateness.labels("leader")
        self.config = config
        self._clock = clock
        self._sleep = sleep
        self._observed: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._lease: dict[str, Any] | None = None
        self._leader = False
        self._gauge = _LeaderMetrics.for_registry(registry).master_status
        self._gauge.labels(config.name).set(0)

    @property
    def is_leader(self) -> bool:
        """True while this replica holds the Lease."""
        return self._leader

    @property
    def holder(self) -> str:
        """The holder identity last observed ("" when none)."""
        spec = (self._observed or {}).get("spec") or {}
        return str(spec.get("holderIdentity") or "")

    def _path(self, name: str | None = None) -> str:
        return LEASES.path(self.config.namespace, name)

    def _target(self) -> str:
        return LEASES.describe(self.config.namespace, self.config.name)

    def _spec(self, previous: dict[str, Any] | None) -> dict[str, Any]:
        now = format_micro_time(utcnow())
        old = (previous or {}).get("spec") or {}
        transitions = int(old.get("leaseTransitions") or 0)
        mine = old.get("holderIdentity") == self.config.identity
        return {
            "holderIdentity": self.config.identity,
            "leaseDurationSeconds": max(1, round(self.config.lease_duration)),
            "acquireTime": old.get("acquireTime") if mine and old.get("acquireTime") else now,
            "renewTime": now,
            "leaseTransitions": transitions if mine or not old else transitions + 1,
        }

    async def try_acquire_or_renew(self, client: ApiClient | None = None) -> bool:
        """One attempt (client-go's ``tryAcquireOrRenew``); True if we hold the Lease after it.

        Args:
            client: The client to use (the elector's own by default).

        Raises:
            KubeAPIError: The server refused for a reason other than a lost race (a create
                answered 404: the namespace does not exist).
        """
        cfg = self.config
        client = client or self.client
        try:
            current = await request(client, "GET", self._path(cfg.name), target=self._target())
        except NotFoundError:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": cfg.name, "namespace": cfg.namespace},
                "spec": self._spec(None),
            }
            try:
                self._lease = await request(
                    client, "POST", self._path(), body=body, target=self._target()
                )
            except ConflictError:
                return False  # another candidate created it first
            self._observe(self._lease)
            return True
        self._observe(current)
        spec = current.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or cfg.lease_duration)
        expired = self._observed_at + duration <= self._clock()
        if holder and holder != cfg.identity and not expired:
            return False
        updated = {**current, "spec": {**spec, **self._spec(current)}}
        try:
            self._lease = await request(
                client, "PUT", self._path(cfg.name), body=updated, target=self._target()
            )
        except (ConflictError, NotFoundError):
            return False  # someone else wrote first, or deleted it since our read
        self._observe(self._lease)
        return True

    def _observe(self, lease: dict[str, Any]) -> None:
        if self._observed is None or _record(lease) != _record(self._observed):
            self._observed_at = self._clock()
        self._observed = lease

    async def acquire(self) -> None:
        """Return once this replica holds the Lease (retrying every ``retry_period``).

        Raises:
            LeaseUnavailableError: The Lease's namespace does not exist (its create answered
                404) or the Lease is forbidden (403): retrying cannot help.
        """
        while True:
            try:
                if await self.try_acquire_or_renew():
                    self._set_leader(True)
                    _log.info(
                        "leader election: %s acquired %s", self.config.identity, self._target()
                    )
                    return
            except (NotFoundError, ForbiddenError) as exc:
                raise LeaseUnavailableError(
                    self.config.namespace, self.config.name, _said(exc)
                ) from None
            except KubeError as exc:
                _log.warning("leader election: %s", exc)
            await self._sleep(self.config.retry_period)

    def _set_leader(self, value: bool) -> None:
        self._leader = value
        self._gauge.labels(self.config.name).set(1 if value else 0)

    async def hold(self, client: ApiClient | None = None) -> None:
        """Renew every ``retry_period``; return once renewals failed for ``renew_deadline``.

        Args:
            client: The client to renew with (the elector's own by default).
        """
        last_ok = self._clock()
        while True:
            due = self._clock() + self.config.retry_period
            await self._sleep(self.config.retry_period)
            self._lateness.observe(max(0.0, self._clock() - due))
            try:
                ok = await asyncio.wait_for(
                    self.try_acquire_or_renew(client), timeout=self.config.renew_deadline
                )
            except (KubeError, TimeoutError) as exc:
                _log.warning("leader election: renew failed: %s", exc)
                ok = False
            if ok:
                last_ok = self._clock()
            elif not self._leader_still_valid(last_ok):
                self._set_leader(False)
                _log.error("leader election: %s lost %s", self.config.identity, self._target())
                return

    async def _hold_in_background(self, background: BackgroundLoop) -> None:
        """:meth:`hold` on ``background`` with a client of its own (closed when it ends)."""

        async def there() -> None:
            client = await clone_client(self.client)
            try:
                await self.hold(client)
            finally:
                await client.close()

        await background.run(there())

    def _leader_still_valid(self, last_ok: float) -> bool:
        if self.holder and self.holder != self.config.identity:
            return False
        return self._clock() - last_ok < self.config.renew_deadline

    async def release(self) -> None:
        """Give the Lease up (holder cleared, 1 s duration) if we hold it; errors are logged."""
        if not self._leader or self._lease is None:
            return
        self._set_leader(False)
        spec = dict(self._lease.get("spec") or {})
        now = format_micro_time(utcnow())
        spec.update(
            {
                "holderIdentity": None,
                "leaseDurationSeconds": 1,
                "renewTime": now,
                "acquireTime": now,
            }
        )
        with contextlib.suppress(KubeError):
            await request(
                self.client,
                "PUT",
                self._path(self.config.name),
                body={**self._lease, "spec": spec},
                target=self._target(),
                timeout=5,
            )

    async def run(self, work: Callable[[], Awaitable[None]]) -> bool:
        """Acquire, run ``work`` while leading, release when it ends.

        Args:
            work: Coroutine function run as the leader; cancelled if leadership is lost.

        Returns:
            True if leadership was lost (the caller should exit, as client-go's callers do),
            False if ``work`` finished on its own.
        """
        await self.acquire()
        work_task = asyncio.ensure_future(work())
        hold_task = asyncio.ensure_future(
            self.hold() if self.background is None else self._hold_in_background(self.background)
        )
        try:
            done, _ = await asyncio.wait(
                {work_task, hold_task}, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            try:
                await cancel_and_wait(work_task, hold_task)
            finally:
                # Released even when ``work`` failed or the caller is cancelled again.
                await asyncio.shield(self.release())
        if work_task in done and not work_task.cancelled():
            work_task.result()
            return False
        return True


def _said(exc: KubeAPIError) -> str:
    """The server's words without our target prefix (the caller names the Lease)."""
    return f"{exc.message} ({exc.status} {exc.reason})"


def _record(lease: dict[str, Any]) -> tuple[Any, ...]:
    """What identifies a Lease renewal: a change restarts the expiry timer (client-go)."""
    spec = lease.get("spec") or {}
    return (spec.get("holderIdentity"), spec.get("renewTime"), spec.get("leaseDurationSeconds"))

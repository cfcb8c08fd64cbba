"""One member cluster as the manager reaches it: probes, property watch, consumer tokens.

A :class:`MemberConnection` is shared by every registration with the same connection
details (server, CA, credential): a few real clusters cost a few probes and watches. It:

- probes ``/readyz?verbose`` every ``probe_interval`` seconds, unless the ClusterProperty
  watch heard from the member since the last probe (an event or a bookmark is evidence of
  life, at most ``MAX_QUIET_SKIPS`` intervals in a row); reads the ``kube-system`` namespace
  (its UID is the member id) and ``/version`` on (re)connect, and the version again every
  ``VERSION_EVERY`` probes: one request per member per interval at rest (``docs/scale.md``;
  the requests and their cadence are :mod:`cluster_inventory.kube.member_probe`'s, shared
  with the member agent);
- watches the member's ClusterProperty objects and records when each value was observed;
- keeps the consumers' accounts and tokens on the member (:mod:`.accounts`).

A probe that times out while this process is behind (:mod:`.verdicts`) is deferred: no
verdict on the member. Changes are reported through ``on_change``; nothing here writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory import kube
from cluster_inventory._clock import utcnow
from cluster_inventory.api.about import observe_property
from cluster_inventory.controller.overload import AdaptiveLimit, LoopLag, OverloadMetrics
from cluster_inventory.kube.informer import Informer
from cluster_inventory.kube.member_probe import VERSION_EVERY, ProbeCadence, probe_member
from cluster_inventory.manager._metrics import ManagerMetrics
from cluster_inventory.manager.config import ManagerConfig
from cluster_inventory.manager.members.accounts import NOTHING_KNOWN, ConsumerAccounts
from cluster_inventory.manager.rules.grants import Needs
from cluster_inventory.manager.rules.status import (
    ConditionState,
    Observation,
    ObservedProperty,
    probe_failure,
)
from cluster_inventory.manager.rules.verdicts import behind_condition, is_busy

__all__ = ["VERSION_EVERY", "MemberConnection"]

_log = logging.getLogger("cluster_inventory.manager")

MAX_QUIET_SKIPS = 4  #: Probes skipped in a row while the property watch hears the member.
BUSY_VERDICT_AFTER = 3  #: Probes in a row with no answer in time (or 429) that are a verdict.

# Probe failures that are about the registration credential, so about ``Joined``.
_CREDENTIAL_REASONS = frozenset({"Unauthorized", "Forbidden", "CertificateInvalid"})


class MemberConnection:
    """Probes, property watch and token minting for one member connection.

    Args:
        connection: How to reach the member (the registration credential).
        config: The manager's settings: its name (ServiceAccount prefix and label value),
            ``member_namespace`` (consumer ServiceAccounts), ``probe_interval`` and
            ``probe_timeout`` (seconds).
        on_change: Called (no arguments) when the observation changes.
        now: Wall clock (token rotation).
        lag: This process's event-loop lag: a probe timing out while it was behind is
            deferred, not counted against the member. None: every timeout counts.
        probes: The limit of probes in flight shared by every member of the replica
            (adaptive: a deferred probe halves it), or None for no limit.
        registry: Where the manager's metrics are registered.
        seed: What the member's last holder observed (:func:`.status.seed_observation`).
        needs: What the member needs of the manager, given its member id (None until
            known): the grants its consumers' accounts keep (:class:`.grants.Needs`).
        name: The member's name (its registration's) for logs and the health-transition
            counter's ``member`` label; registrations sharing a connection share the first
            one's. "" (a connection made without one): its server.
    """

    def __init__(
        self,
        connection: kube.ClusterConnection,
        *,
        config: ManagerConfig,
        on_change: Callable[[], None],
        now: Callable[[], dt.datetime] = utcnow,
        lag: LoopLag | None = None,
        probes: AdaptiveLimit | None = None,
        registry: CollectorRegistry = REGISTRY,
        seed: Observation | None = None,
        needs: Callable[[str | None], Needs] = lambda member_id: NOTHING_KNOWN,
        name: str = "",
    ) -> None:
        self.connection = connection
        self.name = name or connection.name or connection.server
        self.lag = lag
        self._probe_limit = probes
        self._metrics = ManagerMetrics.for_registry(registry)
        self._deferred_total = OverloadMetrics.for_registry(registry).probes_deferred
        self.config = config
        self.on_change = on_change
        self.now = now
        self.observation = seed or Observation()
        self._client: kube.ApiClient | None = None
        self._tasks = kube.TaskSet(
            f"member {connection.server}", logger=_log, extra={"cluster": connection.server}
        )
        self._informer: Informer | None = None
        self._observed: dict[str, ObservedProperty] = {}
        #: The consumers' ServiceAccounts and tokens on this member.
        self.accounts = ConsumerAccounts(
            self, config=config, now=now, needs=lambda: needs(self.observation.member_id)
        )
        #: Probes sent, probes deferred (we were behind), intervals skipped (watch heard it).
        self.probes = self.deferred = self.skipped = 0
        #: Set once a probe gave a verdict (or the member is not contactable) / ran at all.
        self._probed = asyncio.Event()
        self._attempted = asyncio.Event()
        self._closed = self._deferring = False
        self._timeouts = 0
        self._cadence = ProbeCadence()
        #: Monotonic time of the last probe that gave a verdict (None: none yet).
        self._verdict_at: float | None = None
        self.seeded = seed is not None  #: started from the last holder's verdict (a takeover)
        if seed is not None:
            # The last holder's verdict stands until a probe answers (docs/scale.md): a
            # takeover's profiles are written even while we are behind; probes start now.
            self._verdict_at = time.monotonic()
            self._probed.set()
            self._attempted.set()

    @property
    def busy(self) -> bool:
        """True if the last probe got no answer in time, or 429, and is being retried."""
        return bool(self._timeouts)

    @property
    def closed(self) -> bool:
        """True once :meth:`stop` began: its client must not be used any more."""
        return self._closed

    @property
    def client(self) -> kube.ApiClient | None:
        """The member's client once :meth:`start` built it."""
        return self._client

    @property
    def label(self) -> str:
        """The member's server, for logs."""
        return self.connection.server

    async def start(self, *, probe_first: bool = True) -> None:
        """Build the client and start probing and watching.

        Args:
            probe_first: Probe once before returning (see :meth:`probe_safely`).

        Raises:
            KubeConfigError: The registration's TLS material does not load.
        """
        keepalive = self.config.member_keepalive  # no idle probe connection kept for nothing
        self._client = await kube.new_client(self.connection, keepalive_timeout=keepalive)
        if probe_first:
            await self.probe_safely()
        self._informer = Informer(
            self._client, kube.CLUSTER_PROPERTIES, name=f"{self.label} ClusterProperty"
        )
        self._informer.add_handler(self._on_property)
        self._informer.start()
        self._tasks.spawn(self._probe_loop(), name="probe")
        self._tasks.spawn(self._properties_synced(), name="properties")

    async def properties_listed(self, timeout: float) -> bool:
        """True once the ClusterProperty watch listed; False after ``timeout`` s (never raises)."""
        if self._informer is None:
            return False
        with contextlib.suppress(kube.KubeError, TimeoutError):
            await asyncio.wait_for(self._informer.wait_synced(), timeout)
            return True
        return False

    @property
    def observed(self) -> bool:
        """True once a probe gave a verdict, the member is not contactable, or it was seeded.

        A seed (a takeover) is its last holder's verdict. A first probe deferred because we
        were behind gives none: an unseeded member's profiles keep their status until a
        probe answers.
        """
        return self._probed.is_set()

    def fail(self, reason: str, message: str) -> None:
        """Record that the member cannot even be contacted (e.g. its TLS material is bad)."""
        state = ConditionState("False", reason, message)
        self._set(healthy=state, joined=state, properties=None, properties_error=message)
        self._probed.set()

    async def stop(self) -> None:
        """Stop probes and the watch, close the client."""
        self._closed = True
        await self._tasks.stop()
        if self._informer is not None:
            await self._informer.stop()
        if self._client is not None:
            await self._client.close()

    def _set(self, **changes: Any) -> None:
        updated = dataclasses.replace(self.observation, **changes)
        if updated == self.observation:
            return
        before = self.observation
        self.observation = updated
        if before.healthy.status != updated.healthy.status:
            self._metrics.health_transitions.labels(updated.healthy.status, self.name).inc()
        for name in ("healthy", "joined"):
            old, new = getattr(before, name), getattr(updated, name)
            if (old.status, old.reason) != (new.status, new.reason):
                _log.info(
                    "member %s %s is %s: %s",
                    self.name,
                    name,
                    new.status,
                    new.reason,
                    extra={"cluster": self.name, "detail": new.message[:200]},
                )
        self.on_change()

    # -- properties ------------------------------------------------------------------
    def _on_property(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        observe_property(
            self._observed,
            event,
            obj,
            lambda name, value: ObservedProperty(name, value, self.now()),
        )
        if self._informer is not None and self._informer.has_synced:
            self._set(properties=tuple(self._observed.values()), properties_error=None)

    async def _properties_synced(self) -> None:
        assert self._informer is not None
        try:
            await self._informer.wait_synced()
        except kube.KubeAPIError as exc:
            self._set(properties=(), properties_error=f"cannot list ClusterProperty: {exc}")
            return
        self._set(properties=tuple(self._observed.values()), properties_error=None)

    # -- probes ----------------------------------------------------------------------
    async def probe(self) -> None:
        """Probe once and update the observation.

        ``/readyz?verbose`` decides ``ControlPlaneHealthy`` (a draining server fails it and
        its body names the failing checks). On (re)connect, and every ``VERSION_EVERY``
        probes, ``/version`` refreshes the version and the ``kube-system`` read decides
        ``Joined`` and the member id (only 401, 403 or TLS turn ``Joined`` False). A timeout
        or 429 while we were behind is deferred; while we kept up, a healthy member is
        unreachable after ``BUSY_VERDICT_AFTER`` such probes in a row (``docs/scale.md``).
        """
        assert self._client is not None
        self.probes += 1
        started = time.monotonic()
        obs = self.observation
        reconnect = (
            obs.member_id is None
            or obs.joined.status != "True"
            or obs.healthy.status != "True"
            or obs.version is None
        )
        reading = await probe_member(
            self._client,
            timeout=self.config.probe_timeout,
            reconnect=reconnect,
            cadence=self._cadence,
        )
        if reading.readyz_error is not None:
            exc = reading.readyz_error
            if self._ours(exc, started):
                return
            busy = is_busy(exc) and obs.healthy.status == "True"
            if busy and self._timeouts < BUSY_VERDICT_AFTER - 1:
                # No answer in time, or 429: no verdict on a healthy member yet (it may be
                # busy): probe again in 1, then 2 s first (docs/scale.md).
                self._timeouts += 1
                return
            self._verdict_at = time.monotonic()
            state = reading.health
            joined = state if state.reason in _CREDENTIAL_REASONS else None
            self._set(healthy=state, **({"joined": joined} if joined else {}))
            return
        self._timeouts = 0
        self._deferring = False
        self._verdict_at = time.monotonic()
        healthy = reading.health
        changes: dict[str, Any] = {"healthy": healthy}
        if reading.version_error is not None:
            exc = reading.version_error
            if healthy.status == "True" and not (is_busy(exc) and self._behind(started)):
                changes["healthy"] = probe_failure(exc)
        elif reading.version_read:
            changes["version"] = reading.version
        if reading.identity_error is not None:
            state = probe_failure(reading.identity_error)
            if state.reason in _CREDENTIAL_REASONS:
                changes["joined"] = state
        elif reading.identity_read:
            changes["joined"] = ConditionState(
                "True", "CredentialAccepted", "the registration credential works"
            )
            changes["member_id"] = reading.member_id
        self._set(**changes)

    def _behind(self, started: float) -> bool:
        """True if this process's loop lagged since ``started`` (so a timeout is ours)."""
        return self.lag is not None and self.lag.behind_since(started)

    def _ours(self, exc: kube.KubeError, started: float) -> bool:
        """Defer a probe that got no answer in time while we were behind; True if deferred."""
        if not is_busy(exc) or not self._behind(started):
            return False
        self.deferred += 1
        self._deferring = True
        self._deferred_total.inc()
        since = self._verdict_at
        age = None if since is None else time.monotonic() - since
        behind = behind_condition(self.observation.healthy, age, self.config.probe_interval)
        if behind is not None:  # keeping the last verdict: the member did nothing wrong
            self._set(healthy=behind)
        return True

    async def probe_safely(self) -> None:
        """Probe once; an unexpected error is logged, not raised (each step of the probe loop)."""
        try:
            if self._probe_limit is None:
                await self.probe()
            else:
                async with self._probe_limit.slot():
                    deferred = self.deferred
                    await self.probe()
                    if self.deferred > deferred:
                        self._probe_limit.overload()
                    else:
                        self._probe_limit.success()
        except Exception:  # an odd answer is logged; the probe loop carries on
            _log.exception("probe failed", extra={"cluster": self.label})
        finally:
            self._attempted.set()
            if not self._deferring or self._verdict_at is not None:
                self._probed.set()

    async def _probe_loop(self) -> None:
        # The caller runs probe_safely(); this loop keeps the cadence from there. A member
        # that is not healthy, or whose last probe was deferred or timed out once, is probed
        # again sooner (1 s, doubling up to probe_interval), so one probe that timed out does
        # not leave its profiles unhealthy for a whole interval when the interval is long.
        await self._attempted.wait()
        started = time.monotonic()
        if self.observation.healthy.status == "True":
            # A random phase: members started together would otherwise probe together at
            # every interval, a burst of N probes, not N / interval per second (scale.md).
            started -= self.config.probe_interval * random.random()  # noqa: S311 - not a secret
        quiet_skips = 0
        while True:
            soon = bool(
                self._timeouts or self._deferring or self.observation.healthy.status != "True"
            )
            interval = self._cadence.next_wait(self.config.probe_interval, soon=soon)
            await asyncio.sleep(max(0.0, interval - (time.monotonic() - started)))
            previous, started = started, time.monotonic()
            heard = self._informer.last_heard if self._informer is not None else None
            if (
                not soon
                and heard is not None
                and heard >= previous
                and quiet_skips < MAX_QUIET_SKIPS
                and not self._cadence.version_due_next
            ):
                # The property watch answered since the last probe: the member's API server
                # is serving, so this interval costs no request (docs/scale.md).
                quiet_skips += 1
                self.skipped += 1
                continue
            quiet_skips = 0
            await self.probe_safely()

"""The agent's heartbeat: it renews its member's Lease on the hub, on a schedule of its own.

OCM's klusterlet renews the managed cluster's Lease every ``leaseDurationSeconds`` and the
hub calls the cluster unknown once the Lease is older than a multiple of it; the kubelet's
node Lease (KEP-589) does the same for a node. Here the Lease ``NS/NAME`` is created by
``manager accept`` and the agent only updates it (``docs/agent.md``): the identity an agent
holds can get, update and patch its own two objects and create nothing. A renewal is a JSON
merge patch, which never creates; a Lease that is not there (or not the agent's to write)
may mean that the member was never accepted or was rejected: once such refusals have
lasted a window while the hub otherwise answers (:mod:`.rejection`), they end the agent
with :class:`~.rejection.MemberNotAcceptedError`; until then, and for every other failure,
the renewal is retried with backoff.

Renewals are spread with jitter (every ``duration x (1 +/- 0.25)``, :func:`renew_interval`) so
members started together do not renew together, and run on a
:class:`~cluster_inventory.kube.BackgroundLoop` with a hub connection of their own, as the
cluster manager's Leases do (:mod:`cluster_inventory.kube.background`): a busy reporter
never delays them. Each renewal is one write: N members cost N / duration writes per second.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import random
import time
from collections.abc import Callable

from prometheus_client import REGISTRY, CollectorRegistry

from cluster_inventory import kube
from cluster_inventory._clock import utcnow
from cluster_inventory.agent.rejection import RejectionCheck, not_accepted
from cluster_inventory.api import format_micro_time
from cluster_inventory.api.constants import AGENT_USER_PREFIX

__all__ = [
    "DEFAULT_LEASE_DURATION",
    "HUB_KEEPALIVE_SECONDS",
    "JITTER",
    "Heartbeat",
    "renew_interval",
]

_log = logging.getLogger("cluster_inventory.agent")

#: Seconds a heartbeat is good for (``leaseDurationSeconds``; OCM's default, 60).
DEFAULT_LEASE_DURATION = 60.0
#: Seconds the agent keeps an idle hub connection: under kube-apiserver's 90 s idle timeout
#: (its ``http.Server.IdleTimeout``), above the 45-75 s between two renewals of a 60 s Lease,
#: so that a renewal reuses one TLS connection. aiohttp's default of 15 s closed it between
#: renewals, and each renewal's handshake cost the hub ~6 core-ms: a core at 10,000 agents
#: (``docs/scale.md``, "Agent members").
HUB_KEEPALIVE_SECONDS = 85.0
#: Share of the duration a renewal is moved by, either way.
JITTER = 0.25
#: Seconds before retrying a renewal the hub did not take (doubling, up to the interval).
_FIRST_RETRY = 1.0
_MERGE_PATCH = "application/merge-patch+json"


def renew_interval(duration: float, rnd: float, jitter: float = JITTER) -> float:
    """Seconds until the next renewal: ``duration x (1 + jitter x (2 rnd - 1))``.

    Args:
        duration: The Lease duration (seconds).
        rnd: A uniform random number in [0, 1).
        jitter: The share of ``duration`` moved either way (0.25: 45-75 s for 60 s).

    Raises:
        ValueError: ``duration`` is not positive or ``jitter`` is not in [0, 1).
    """
    if not duration > 0:
        raise ValueError(f"heartbeat: lease duration {duration:g} s is not positive")
    if not 0 <= jitter < 1:
        raise ValueError(f"heartbeat: jitter {jitter:g} is not in [0, 1)")
    return duration * (1 + jitter * (2 * rnd - 1))


class Heartbeat:
    """Renews the Lease ``namespace/name`` on the hub until cancelled.

    Args:
        hub: Client of the hub (the agent's identity there; cloned for the background loop).
        name: The member's name (the Lease's name; holder ``cluster-inventory:agent:NAME``).
        namespace: The cluster manager's hub namespace.
        duration: ``leaseDurationSeconds`` and the mean renewal interval (seconds).
        jitter: Share of ``duration`` a renewal moves either way.
        background: The loop renewals run on (None: the process's Lease loop,
            :func:`cluster_inventory.kube.lease_loop`).
        rnd: Uniform random numbers in [0, 1) (injectable for tests).
        now: Wall clock for ``renewTime``.
        registry: Where ``cluster_inventory_lease_renewal_lateness_seconds{lease="agent"}``
            is observed (how late each renewal started: the schedule kept or not).
        rejection: Judges refused renewals (shared with the reporter; None: one of its
            own with a window of ``duration``).

    Raises:
        ValueError: ``duration`` or ``jitter`` is out of range.
    """

    def __init__(
        self,
        hub: kube.ApiClient,
        *,
        name: str,
        namespace: str,
        duration: float = DEFAULT_LEASE_DURATION,
        jitter: float = JITTER,
        background: kube.BackgroundLoop | None = None,
        rnd: Callable[[], float] = random.random,
        now: Callable[[], dt.datetime] = utcnow,
        registry: CollectorRegistry = REGISTRY,
        rejection: RejectionCheck | None = None,
    ) -> None:
        renew_interval(duration, 0.5, jitter)  # checks both
        self.hub = hub
        self.name = name
        self.namespace = namespace
        self.duration = duration
        self.jitter = jitter
        self.background = background or kube.lease_loop()
        self.holder = AGENT_USER_PREFIX + name
        self._rnd = rnd
        self._now = now
        self._lateness = kube.LeaseMetrics.for_registry(registry).lateness.labels("agent")
        self.rejection = rejection or RejectionCheck(duration)
        #: Renewals the hub took; monotonic time of the last one.
        self.renewals = 0
        self.renewed_at: float | None = None

    async def renew(self, client: kube.ApiClient | None = None) -> dict[str, object]:
        """Renew once: holder, duration and ``renewTime`` (a merge patch, which never creates).

        Args:
            client: The client to use (the heartbeat's hub client by default).

        Returns:
            The Lease as stored.

        Raises:
            MemberNotAcceptedError: The Lease is absent (404) or not ours to write (403).
            KubeError: The hub did not answer, or refused for another reason (retryable).
        """
        body = {
            "spec": {
                "holderIdentity": self.holder,
                "leaseDurationSeconds": max(1, round(self.duration)),
                "renewTime": format_micro_time(self._now()),
            }
        }
        try:
            lease: dict[str, object] = await kube.request(
                client or self.hub,
                "PATCH",
                kube.LEASES.path(self.namespace, self.name),
                body=body,
                content_type=_MERGE_PATCH,
                target=kube.LEASES.describe(self.namespace, self.name),
                timeout=min(kube.request_timeout(), self.duration),
            )
        except kube.KubeAPIError as exc:
            refused = not_accepted(exc, self.name, self.namespace, "Lease")
            if refused is not None:
                raise refused from None
            raise
        self.renewals += 1
        self.renewed_at = time.monotonic()
        return lease

    def next_interval(self) -> float:
        """Seconds until the next renewal (jittered)."""
        return renew_interval(self.duration, self._rnd(), self.jitter)

    async def keep(self, client: kube.ApiClient | None = None) -> None:
        """Renew every :meth:`next_interval` seconds until cancelled (the first after one).

        A renewal the hub does not take is retried after 1 s, doubling up to the interval
        (one warning when it starts failing, one line when it works again). Refusals end
        the loop only once :attr:`rejection` holds them proven.

        Raises:
            MemberNotAcceptedError: Refused while the hub was ready for the rejection
                window (the member was rejected).
        """
        client = client or self.hub
        target = f"{self.namespace}/{self.name}"
        throttle = kube.Throttle(
            f"renew heartbeat Lease {target}",
            logger=_log,
            backoff=kube.Backoff(first=min(_FIRST_RETRY, self.duration), cap=self.duration),
            extra={"object": target},
        )
        delay = self.next_interval()
        while True:
            due = time.monotonic() + delay
            await asyncio.sleep(delay)
            self._lateness.observe(max(0.0, time.monotonic() - due))
            try:
                await self.renew(client)
            except kube.KubeError as exc:
                note = await self.rejection.failure(client, exc)
                delay = min(throttle.failed(exc, note=note), self.next_interval())
                continue
            self.rejection.succeeded()
            throttle.succeeded()
            delay = self.next_interval()

    async def run(self) -> None:
        """:meth:`keep` on the background loop with a hub client of its own, until cancelled.

        Raises:
            MemberNotAcceptedError: See :meth:`keep` (the member was rejected).
        """

        async def there() -> None:
            client = await kube.clone_client(self.hub)
            try:
                await self.keep(client)
            finally:
                await client.close()

        await self.background.run(there())

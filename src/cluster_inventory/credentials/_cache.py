"""The credential cache: one plugin run per key, however many callers wait.

Keyed, as client-go keys its authenticators, by the exec config and the cluster info
(:attr:`ClusterAccess.cache_key`). A credential is reused until ``expirationTimestamp``
minus a small skew; without one, until a 401 makes the caller :meth:`invalidate` it.
Concurrent callers of a missing key share one in-flight plugin run (single flight). The
cache is bounded (least recently used entries go first) and the clock is injectable so that
expiry is tested without sleeping.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

from cluster_inventory import kube
from cluster_inventory._clock import utcnow
from cluster_inventory.credentials._access import ClusterAccess
from cluster_inventory.credentials._exec import (
    DEFAULT_EXEC_TIMEOUT,
    ExecCredential,
    run_exec_plugin,
)
from cluster_inventory.credentials.errors import CredentialsError

_log = logging.getLogger("cluster_inventory.credentials")

__all__ = ["CredentialCache", "CredentialMetrics", "Fetcher"]

#: ``async (access) -> ExecCredential``: how a missing credential is obtained.
Fetcher = Callable[[ClusterAccess], Awaitable[ExecCredential]]


@dataclass(frozen=True)
class CredentialMetrics:
    """Prometheus collectors of the credential cache.

    Attributes:
        fetches: ``cluster_inventory_exec_plugin_runs_total{provider,result}``; result is
            ``success`` or the error class name.
        duration: ``cluster_inventory_exec_plugin_duration_seconds{provider}``.
        lookups: ``cluster_inventory_credential_cache_lookups_total{result}`` (hit, miss).
    """

    fetches: Counter
    duration: Histogram
    lookups: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry | None = REGISTRY) -> CredentialMetrics:
        """Create and register the collectors (``registry=None`` keeps them unregistered)."""
        return cls(
            fetches=Counter(
                "cluster_inventory_exec_plugin_runs_total",
                "Exec credential plugin runs by access provider and result.",
                ["provider", "result"],
                registry=registry,
            ),
            duration=Histogram(
                "cluster_inventory_exec_plugin_duration_seconds",
                "Wall time of exec credential plugin runs, in seconds.",
                ["provider"],
                registry=registry,
            ),
            lookups=Counter(
                "cluster_inventory_credential_cache_lookups_total",
                "Credential cache lookups by result (hit, miss).",
                ["result"],
                registry=registry,
            ),
        )


class CredentialCache:
    """Exec credentials shared by every client of a consumer process.

    Args:
        max_entries: Bound on cached credentials (least recently used are dropped).
        expiry_skew: Seconds before ``expirationTimestamp`` at which a credential counts as
            expired (so a request never leaves with a token about to lapse).
        timeout: Seconds a plugin may run.
        now: Clock returning an aware UTC datetime (inject one in tests).
        fetch: How to obtain a credential; defaults to running the exec plugin.
        metrics: Collectors; defaults to process-wide ones in the default registry.
    """

    def __init__(
        self,
        *,
        max_entries: int = 1024,
        expiry_skew: float = 10.0,
        timeout: float = DEFAULT_EXEC_TIMEOUT,
        now: Callable[[], dt.datetime] = utcnow,
        fetch: Fetcher | None = None,
        metrics: CredentialMetrics | None = None,
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._entries: OrderedDict[str, ExecCredential] = OrderedDict()
        self._inflight: dict[str, asyncio.Future[ExecCredential]] = {}
        self._max = max_entries
        self._skew = expiry_skew
        self._timeout = timeout
        self._now = now
        self._fetch = fetch or self._run_plugin
        self._metrics = metrics or kube.collectors_for(CredentialMetrics.create)
        self._hits = self._metrics.lookups.labels("hit")
        self._misses = self._metrics.lookups.labels("miss")
        self._refreshing = kube.TaskSet("credential cache", logger=_log)
        #: Plugin runs started by this cache (for tests and benchmarks).
        self.runs = 0

    async def _run_plugin(self, access: ClusterAccess) -> ExecCredential:
        return await run_exec_plugin(
            access.exec_config,
            cluster=access.cluster_info(),
            provider=access.provider,
            timeout=self._timeout,
        )

    def __len__(self) -> int:
        return len(self._entries)

    def peek(self, access: ClusterAccess) -> ExecCredential | None:
        """The cached, unexpired credential for ``access``, without running anything."""
        cred = self._entries.get(access.cache_key)
        if cred is None or cred.expired(self._now(), self._skew):
            return None
        return cred

    async def get(self, access: ClusterAccess) -> ExecCredential:
        """Return a valid credential for ``access``, running the plugin at most once per key.

        Raises:
            ExecPluginError: The plugin run failed (every waiter gets the same error; nothing
                is cached, so the next call tries again).
        """
        cred = self.peek(access)
        if cred is not None:
            self._entries.move_to_end(access.cache_key)
            self._hits.inc()
            return cred
        self._misses.inc()
        pending = self._inflight.get(access.cache_key)
        if pending is None:
            loop = asyncio.get_running_loop()
            pending = loop.create_future()
            self._inflight[access.cache_key] = pending
            self._refreshing.spawn(self._refresh(access, pending), name=f"refresh {access.profile}")
        return await asyncio.shield(pending)

    async def _refresh(
        self, access: ClusterAccess, pending: asyncio.Future[ExecCredential]
    ) -> None:
        key = access.cache_key
        self.runs += 1
        started = time.perf_counter()
        result = "success"
        try:
            cred = await self._fetch(access)
        except BaseException as exc:
            result = type(exc).__name__
            if not pending.done():
                pending.set_exception(exc)
            pending.exception()  # marked retrieved: waiters may all have been cancelled
            if not isinstance(exc, CredentialsError | OSError):
                raise
        else:
            self._entries[key] = cred
            self._entries.move_to_end(key)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
            if not pending.done():
                pending.set_result(cred)
        finally:
            self._inflight.pop(key, None)
            self._metrics.fetches.labels(access.provider, result).inc()
            self._metrics.duration.labels(access.provider).observe(time.perf_counter() - started)

    def invalidate(
        self, access: ClusterAccess, rejected: ExecCredential | str | None = None
    ) -> bool:
        """Drop the cached credential of ``access`` after the server refused it (401).

        Args:
            access: Whose credential.
            rejected: The credential (or bearer token) that was refused. When given, the
                entry is dropped only if it is still that credential: another caller may
                already have fetched a new one (client-go's rule).

        Returns:
            True if an entry was dropped.
        """
        key = access.cache_key
        cred = self._entries.get(key)
        if cred is None:
            return False
        if rejected is not None:
            same = (
                cred is rejected if isinstance(rejected, ExecCredential) else cred.token == rejected
            )
            if not same:
                return False
        del self._entries[key]
        return True

    def clear(self) -> None:
        """Forget every cached credential."""
        self._entries.clear()

"""An engaged member cluster: its client, its caches and the tasks running against it.

A :class:`EngagedCluster` exists from engagement to disengagement. Closing it cancels every
reconcile still running against it and lets go of its connection; the last cluster to let go
of a connection stops its informers and closes its client, so nothing keeps talking to a
member after its profiles are gone.

Clusters whose resolved access has the same ``cache_key`` (same server, CA, TLS settings,
exec plugin and extension, hence the same credential) reach one API server as one identity
and see the same objects. They share one :class:`SharedConnection`: one client, and one
LIST and one watch per cached kind, however many ClusterProfiles name that member. Each
cluster keeps its own name, profile, event handlers and tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cluster_inventory import kube
from cluster_inventory.credentials import ClusterAccess, CredentialCache, connect_access
from cluster_inventory.kube.informer import EventHandler, Informer
from cluster_inventory.runtime.errors import CacheNotWatched

__all__ = ["ConnectionPool", "EngagedCluster", "SharedConnection", "WatchSpec"]

T = TypeVar("T")
_log = logging.getLogger("cluster_inventory.runtime")


@dataclass(frozen=True)
class WatchSpec:
    """What to cache on every engaged cluster: a kind and an optional scope.

    Attributes:
        kind: ``group/version/Kind`` (``v1/ConfigMap`` for the core group).
        namespace: Only this namespace, or None for all.
        label_selector: Server-side label selector, or None.
    """

    kind: str
    namespace: str | None = None
    label_selector: str | None = None


class SharedConnection:
    """One client and its caches, shared by every engaged cluster with the same access.

    Attributes:
        key: The access ``cache_key`` (a SHA-256 hex digest of server, TLS settings, exec
            plugin and extension; no credential).
        server: The member's API server URL.
        client: Authenticated API client (the exec credential is cached and renewed).
        informers: The caches started so far, by what they watch.
        users: Engaged (or engaging) clusters holding this connection.
    """

    def __init__(self, key: str, server: str, client: kube.ApiClient) -> None:
        self.key = key
        self.server = server
        self.client = client
        self.informers: dict[WatchSpec, Informer] = {}
        self.users = 0
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"SharedConnection({self.server!r}, users={self.users})"

    async def start_caches(self, specs: list[WatchSpec], timeout: float) -> None:
        """Start the informers of ``specs`` not started yet and wait until all have listed.

        Args:
            specs: What to cache (duplicates and caches already running share one informer).
            timeout: Seconds to wait for every first LIST.

        Raises:
            TimeoutError: A cache did not fill in time.
            KindNotFoundError: The member does not serve a kind.
            KubeAPIError: A LIST was refused (401, 403).
        """
        async with self._lock:  # two clusters engaging at once start one informer per spec
            for spec in specs:
                if spec in self.informers:
                    continue
                resource = await kube.resolve_kind(self.client, spec.kind)
                informer = Informer(
                    self.client,
                    resource,
                    namespace=spec.namespace,
                    label_selector=spec.label_selector,
                    name=f"{self.server} {resource.kind}",
                )
                self.informers[spec] = informer
                informer.start()
        async with asyncio.timeout(timeout):
            for spec in specs:
                await self.informers[spec].wait_synced()

    async def close(self) -> None:
        """Stop the informers and close the client; errors are logged, never raised."""
        try:
            for informer in self.informers.values():
                with contextlib.suppress(Exception):
                    await informer.stop()
        finally:  # even when cancelled meanwhile: an open client is an unclosed session
            try:
                await self.client.close()
            except Exception as exc:  # a broken connection must not stop the disengagement
                _log.warning("closing the client failed: %s", exc, extra={"server": self.server})


class ConnectionPool:
    """The shared connections of one fleet, by access ``cache_key``, reference-counted.

    Args:
        cache: Credential cache the clients draw their exec credentials from.
        on_change: Called with the number of open connections after each change (metrics).
    """

    def __init__(
        self, cache: CredentialCache, on_change: Callable[[int], None] | None = None
    ) -> None:
        self._cache = cache
        self._on_change = on_change or (lambda _: None)
        self._open: dict[str, SharedConnection] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def acquire(self, access: ClusterAccess) -> SharedConnection:
        """The open connection for ``access``, or a new one (one client per key at a time).

        Raises:
            ExecPluginError: The exec plugin failed on the first credential.
            KubeConfigError: The TLS material does not load.
        """
        lock = self._locks.setdefault(access.cache_key, asyncio.Lock())
        async with lock:
            conn = self._open.get(access.cache_key)
            if conn is None:
                client = await connect_access(access, cache=self._cache)
                conn = SharedConnection(access.cache_key, access.server, client)
                self._open[access.cache_key] = conn
                self._on_change(len(self._open))
            conn.users += 1
            return conn

    async def release(self, conn: SharedConnection) -> None:
        """Let go of ``conn``; the last user closes it."""
        conn.users -= 1
        if conn.users > 0:
            return
        if self._open.get(conn.key) is conn:
            del self._open[conn.key]
            lock = self._locks.get(conn.key)
            if lock is not None and not lock.locked():
                del self._locks[conn.key]
        self._on_change(len(self._open))
        await conn.close()


@dataclass(eq=False, repr=False, kw_only=True)
class EngagedCluster:
    """One engaged member cluster, as reconcilers see it.

    Attributes:
        name: The cluster's name in the fleet: its ClusterProfile's ``namespace/name``.
        profile: The ClusterProfile (decoded dict, without ``metadata.managedFields``), kept
            current while engaged.
        member_id: The ``inventory-member-id`` label, if any.
        access: How it is reached (server, CA, plugin); holds no credential.
        connection: The client and caches, shared with clusters of the same access.
        pool: The pool the connection came from; :meth:`close` gives it back.
    """

    name: str
    profile: dict[str, Any]
    member_id: str | None
    access: ClusterAccess
    connection: SharedConnection
    pool: ConnectionPool
    _informers: dict[WatchSpec, Informer] = field(default_factory=dict, init=False)
    _handlers: list[tuple[Informer, EventHandler]] = field(default_factory=list, init=False)
    _tasks: kube.TaskSet = field(init=False)
    _closing: bool = field(default=False, init=False)
    _closed: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self._tasks = kube.TaskSet(f"cluster {self.name}", logger=_log)

    @property
    def client(self) -> kube.ApiClient:
        """Authenticated API client for the member; shared, never close it yourself.

        Its credentials come from the exec plugin, renewed before expiry and after a 401.
        """
        return self.connection.client

    def __repr__(self) -> str:
        return f"EngagedCluster({self.name!r}, server={self.access.server!r})"

    @property
    def closing(self) -> bool:
        """True from the start of :meth:`close`: no new reconcile may start."""
        return self._closing

    @property
    def closed(self) -> bool:
        """True once :meth:`close` finished: tasks cancelled, connection let go."""
        return self._closed

    @property
    def tasks(self) -> frozenset[asyncio.Task[Any]]:
        """Reconciles running against this cluster right now."""
        return frozenset(self._tasks)

    @property
    def informers(self) -> dict[WatchSpec, Informer]:
        """The caches this cluster uses, by what they watch (shared; do not stop them)."""
        return dict(self._informers)

    async def start_caches(self, specs: list[WatchSpec], timeout: float) -> None:
        """Start (or join) one informer per spec and wait until all have listed.

        Args:
            specs: What to cache.
            timeout: Seconds to wait for every first LIST.

        Raises:
            TimeoutError: A cache did not fill in time.
            KindNotFoundError: The member does not serve a kind.
            KubeAPIError: A LIST was refused (401, 403).
        """
        await self.connection.start_caches(specs, timeout)
        self._informers.update((spec, self.connection.informers[spec]) for spec in specs)

    def add_event_handler(self, spec: WatchSpec, handler: EventHandler) -> None:
        """Deliver ``spec``'s cache events to ``handler`` until this cluster is disengaged.

        The informer first replays what it holds as ADDED (client-go's AddEventHandler).

        Raises:
            CacheNotWatched: ``spec`` is not cached on this cluster.
        """
        informer = self.cache(
            spec.kind, namespace=spec.namespace, label_selector=spec.label_selector
        )
        self._handlers.append((informer, handler))
        informer.add_handler(handler)

    def cache(
        self, kind: str, *, namespace: str | None = None, label_selector: str | None = None
    ) -> Informer:
        """The informer caching ``kind`` on this cluster (read its store, do not start it).

        Args:
            kind: As registered, e.g. ``v1/ConfigMap``.
            namespace: The namespace it was registered with, if several scopes exist.
            label_selector: The selector it was registered with, if several scopes exist.

        Raises:
            CacheNotWatched: No reconciler of the fleet watches that kind in that scope.
        """
        exact = self._informers.get(WatchSpec(kind, namespace, label_selector))
        if exact is not None:
            return exact
        if namespace is None and label_selector is None:
            scoped = [inf for spec, inf in self._informers.items() if spec.kind == kind]
            if len(scoped) == 1:
                return scoped[0]
        raise CacheNotWatched(
            f"cluster {self.name}: no cache of {kind} (namespace={namespace}, "
            f"labels={label_selector}); register a reconciler for it first"
        )

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The cached object ``namespace/name`` (or ``name``) of ``kind``, or None.

        Raises:
            CacheNotWatched: ``kind`` is not cached on this cluster.
        """
        key = f"{namespace}/{name}" if namespace else name
        caches = [inf for spec, inf in self._informers.items() if spec.kind == kind]
        if not caches:
            self.cache(kind)  # raises CacheNotWatched with the explanation
        for informer in caches:
            found = informer.get(key)
            if found is not None:
                return found
        return None

    def run(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Run ``coro`` as a task that is cancelled when this cluster is disengaged.

        Raises:
            RuntimeError: The cluster is already closed (the coroutine is closed unrun).
        """
        if self._closing:
            coro.close()
            raise RuntimeError(f"cluster {self.name} is disengaged")
        # The caller (the reconcile's worker) awaits it and reports its failure.
        return self._tasks.spawn(coro, name="reconcile", awaited=True)

    async def close(self) -> None:
        """Cancel running reconciles, drop event handlers, let go of the connection.

        The last user of the connection stops its informers and closes its client.
        Idempotent.
        """
        if self._closing:
            return
        self._closing = True
        for task in self._tasks:
            task.cancel()  # at once: the handlers go before the reconciles have unwound
        for informer, handler in self._handlers:
            informer.remove_handler(handler)
        self._handlers.clear()
        try:
            await self._tasks.stop()
        finally:  # a cancelled close still lets go of the connection
            await self.pool.release(self.connection)
            self._closed = True

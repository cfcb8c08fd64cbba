"""An engaged member cluster: its client, its caches and the tasks running against it.

A :class:`Cluster` exists from engagement to disengagement. Closing it cancels every
reconcile still running against it, stops its informers and closes its client, so nothing
keeps talking to a member after its profile is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from cluster_inventory import kube
from cluster_inventory.credentials import ClusterAccess
from cluster_inventory.kube.informer import Informer
from cluster_inventory.runtime.errors import CacheNotWatched

__all__ = ["Cluster", "WatchSpec"]

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


class Cluster:
    """One engaged member cluster, as reconcilers see it.

    Attributes:
        name: The cluster's name in the fleet: its ClusterProfile's ``namespace/name``.
        profile: The ClusterProfile (decoded dict), kept current while engaged.
        member_id: The ``inventory-member-id`` label, if any.
        access: How it is reached (server, CA, plugin); holds no credential.
        client: Authenticated API client for the member (credentials from the exec plugin,
            renewed before expiry and after a 401).
    """

    def __init__(
        self,
        *,
        name: str,
        profile: dict[str, Any],
        member_id: str | None,
        access: ClusterAccess,
        client: kube.ApiClient,
    ) -> None:
        self.name = name
        self.profile = profile
        self.member_id = member_id
        self.access = access
        self.client = client
        self._informers: dict[WatchSpec, Informer] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closing = False
        self._closed = False

    def __repr__(self) -> str:
        return f"Cluster({self.name!r}, server={self.access.server!r})"

    @property
    def closing(self) -> bool:
        """True from the start of :meth:`close`: no new reconcile may start."""
        return self._closing

    @property
    def closed(self) -> bool:
        """True once :meth:`close` finished: tasks cancelled, caches stopped, client closed."""
        return self._closed

    @property
    def tasks(self) -> frozenset[asyncio.Task[Any]]:
        """Reconciles running against this cluster right now."""
        return frozenset(self._tasks)

    @property
    def informers(self) -> dict[WatchSpec, Informer]:
        """The caches of this cluster, by what they watch."""
        return dict(self._informers)

    async def start_caches(self, specs: list[WatchSpec], timeout: float) -> None:
        """Start one informer per spec and wait until all have listed.

        Args:
            specs: What to cache (duplicates share one informer).
            timeout: Seconds to wait for every first LIST.

        Raises:
            TimeoutError: A cache did not fill in time.
            KindNotFoundError: The member does not serve a kind.
            KubeAPIError: A LIST was refused (401, 403).
        """
        for spec in specs:
            if spec in self._informers:
                continue
            resource = await kube.resolve_kind(self.client, spec.kind)
            informer = Informer(
                self.client,
                resource,
                namespace=spec.namespace,
                label_selector=spec.label_selector,
                name=f"{self.name} {resource.kind}",
            )
            self._informers[spec] = informer
            informer.start()
        async with asyncio.timeout(timeout):
            for informer in self._informers.values():
                await informer.wait_synced()

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
        task = asyncio.get_running_loop().create_task(coro, name=f"{self.name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def close(self) -> None:
        """Cancel running reconciles, stop the caches and close the client (idempotent)."""
        if self._closing:
            return
        self._closing = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for informer in self._informers.values():
            with contextlib.suppress(Exception):
                await informer.stop()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        try:
            await self.client.close()
        except Exception as exc:  # a broken connection must not stop the disengagement
            _log.warning("closing the client failed: %s", exc, extra={"cluster": self.name})
        self._closed = True

"""One informer cache per process, shared by every controller (controller-runtime's cache).

controller-runtime's manager owns the informers (``mgr.GetCache()``): two controllers that
watch ClusterProfiles in the same namespaces share one LIST, one WATCH and one copy of the
objects, and a cache restricted to some namespaces (``cache.Options.DefaultNamespaces``)
watches each of them instead of the whole cluster. Here:

- :class:`NamespacedInformer` is one kind over several namespaces (or all) with the
  :class:`~cluster_inventory.kube.informer.Informer` API (``items``, ``get``, ``by_index``,
  ``add_handler``, ``wait_synced``...), so a component never keeps its own list of
  per-namespace informers nor searches them one by one;
- :class:`InformerCache` hands out one :class:`NamespacedInformer` per distinct request
  (resource, namespaces, selectors, metadata-only, transform) and shares it. Start and stop
  are counted: the informers run from the first user's start until the last user's stop.

Every component asks :meth:`InformerCache.for_client` with the client it was given: the
runnables a :class:`~cluster_inventory.controller.Manager` builds get its hub client, so they
share its one cache without any wiring; components given different clients share nothing.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from cluster_inventory.kube._k8s import ApiClient
from cluster_inventory.kube._resources import Resource
from cluster_inventory.kube.informer import EventHandler, Informer

__all__ = ["InformerCache", "NamespacedInformer"]

Transform = Callable[[dict[str, Any]], dict[str, Any]]


class NamespacedInformer:
    """One kind watched in several namespaces (or all), read as one informer.

    Args:
        informers: One informer per namespace (a single one for all namespaces).
        name: For logs and errors.
    """

    def __init__(self, informers: Sequence[Informer], name: str) -> None:
        self.informers = tuple(informers)
        self.name = name
        self._by_namespace = {i.namespace: i for i in self.informers if i.namespace is not None}
        self._users = 0

    # -- reading -----------------------------------------------------------------------
    def get(self, key: str) -> dict[str, Any] | None:
        """The cached object with ``namespace/name`` key, or None."""
        namespace = key.split("/", 1)[0] if "/" in key else None
        informer = self._by_namespace.get(namespace) if namespace is not None else None
        if informer is not None:
            return informer.get(key)
        for each in self.informers:
            found = each.get(key)
            if found is not None:
                return found
        return None

    def items(self) -> list[dict[str, Any]]:
        """Every cached object, of every namespace."""
        return [obj for informer in self.informers for obj in informer.items()]

    def keys(self) -> list[str]:
        """Every cached key."""
        return [key for informer in self.informers for key in informer.keys()]

    def by_index(self, name: str, value: str) -> list[dict[str, Any]]:
        """Objects whose indexer ``name`` yields ``value``, of every namespace."""
        return [obj for informer in self.informers for obj in informer.by_index(name, value)]

    @property
    def has_synced(self) -> bool:
        """True once every namespace has been listed once."""
        return all(informer.has_synced for informer in self.informers)

    @property
    def failure(self) -> str | None:
        """Why reading fails in some namespace (the first), or None while every one works."""
        return next((i.failure for i in self.informers if i.failure is not None), None)

    # -- handlers ----------------------------------------------------------------------
    def add_handler(self, handler: EventHandler) -> None:
        """Register ``handler`` on every namespace (see :meth:`Informer.add_handler`)."""
        for informer in self.informers:
            informer.add_handler(handler)

    def remove_handler(self, handler: EventHandler) -> bool:
        """Unregister ``handler`` from every namespace (see :meth:`Informer.remove_handler`).

        Returns:
            True if the handler was registered.
        """
        return any([informer.remove_handler(handler) for informer in self.informers])

    def add_health_handler(self, handler: Callable[[], None]) -> None:
        """Register ``handler`` for every namespace (see :meth:`Informer.add_health_handler`)."""
        for informer in self.informers:
            informer.add_health_handler(handler)

    def add_indexer(self, name: str, func: Callable[[dict[str, Any]], Iterable[str]]) -> None:
        """Index every namespace's objects by ``func`` (query with :meth:`by_index`)."""
        for informer in self.informers:
            informer.add_indexer(name, func)

    # -- running -----------------------------------------------------------------------
    def start(self) -> None:
        """Start watching (the first user's call starts; later ones only count)."""
        self._users += 1
        for informer in self.informers:
            informer.start()

    async def wait_synced(self) -> None:
        """Wait until every namespace has been listed once.

        Raises:
            KubeAPIError: A first LIST was refused for good (401, 403, 404).
        """
        for informer in self.informers:
            await informer.wait_synced()

    async def stop(self) -> None:
        """Stop watching once the last user stopped."""
        self._users = max(0, self._users - 1)
        if self._users == 0:
            for informer in self.informers:
                await informer.stop()


class InformerCache:
    """The informers of one client, shared by every component that asks for the same ones.

    Args:
        client: The API client every informer reads with.
        namespaces: Default namespaces (controller-runtime's ``DefaultNamespaces``): an
            informer asked for without ``namespaces`` watches these, or the whole cluster
            when None.
    """

    def __init__(self, client: ApiClient, *, namespaces: Sequence[str] | None = None) -> None:
        self.client = client
        self.namespaces = tuple(namespaces) if namespaces is not None else None
        self._informers: dict[Hashable, NamespacedInformer] = {}

    @classmethod
    def for_client(cls, client: ApiClient) -> InformerCache:
        """The cache of ``client`` (made on first use, gone with the client).

        A client that cannot be weakly referenced (a unit test's stand-in) gets a cache of
        its own each time.
        """
        try:
            found = _CACHES.get(client)
            if found is None:
                found = _CACHES[client] = cls(client)
        except TypeError:
            return cls(client)
        return found

    def informer(
        self,
        resource: Resource,
        *,
        namespaces: Sequence[str | None] | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
        transform: Transform | None = None,
        name: str = "",
    ) -> NamespacedInformer:
        """The shared informer of ``resource`` in ``namespaces`` with these options.

        Args:
            resource: What to watch.
            namespaces: Namespaces to watch; None for the cache's default namespaces (the
                whole cluster without defaults); ``[None]`` for the whole cluster.
            label_selector: Server-side label selector.
            field_selector: Server-side field selector.
            metadata_only: ``PartialObjectMetadata`` only (see :class:`Informer`).
            transform: Applied to every object before it is stored; informers are shared
                only between callers passing the same function.
            name: For logs; the first caller's name is kept.

        Returns:
            The informer; call its ``start``/``stop`` as its other users do.
        """
        scopes: tuple[str | None, ...]
        if namespaces is not None:
            scopes = tuple(dict.fromkeys(namespaces))
        elif self.namespaces is not None:
            scopes = self.namespaces
        else:
            scopes = (None,)
        key = (resource, scopes, label_selector, field_selector, metadata_only, transform)
        found = self._informers.get(key)
        if found is None:
            label = name or resource.kind
            found = NamespacedInformer(
                [
                    Informer(
                        self.client,
                        resource,
                        namespace=ns,
                        label_selector=label_selector,
                        field_selector=field_selector,
                        metadata_only=metadata_only,
                        transform=transform,
                        name=label if len(scopes) == 1 else f"{label} {ns}",
                    )
                    for ns in scopes
                ],
                label,
            )
            self._informers[key] = found
        return found

    def __len__(self) -> int:
        return len(self._informers)


_CACHES: weakref.WeakKeyDictionary[ApiClient, InformerCache] = weakref.WeakKeyDictionary()

"""The informer's local store: objects by key, indices over them, handlers told of each change.

client-go's ``cache.Indexer`` with the informer's event handlers: :class:`Store` holds the
latest object of each ``namespace/name`` key, keeps every index current on each change and
calls the handlers inline (a handler that raises is logged and skipped). How the objects get
there, a LIST and then a WATCH, is :class:`~cluster_inventory.kube.informer.Informer`'s part.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["ADDED", "DELETED", "MODIFIED", "EventHandler", "Store", "object_key"]

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"

#: ``(event_type, new_or_deleted_object, old_object_or_None)``.
EventHandler = Callable[[str, dict[str, Any], dict[str, Any] | None], None]
_log = logging.getLogger("cluster_inventory.kube.informer")


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name``, or ``name`` when cluster-scoped (client-go's MetaNamespaceKeyFunc)."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


class Store:
    """Objects by key with indices and event handlers (the base of an informer).

    Args:
        name: For logs, e.g. ``"member1 ClusterProperty"``.
        transform: Applied to every object before it is stored or handed to a handler.
    """

    def __init__(
        self, *, name: str, transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    ) -> None:
        self.name = name
        self._transform = transform
        self._store: dict[str, dict[str, Any]] = {}
        self._handlers: list[EventHandler] = []
        self._indexers: dict[str, Callable[[dict[str, Any]], Iterable[str]]] = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        #: What each indexer yielded for each stored key (so an update or delete removes the
        #: old entries without calling the indexer on the old object again).
        self._indexed: dict[str, dict[str, tuple[str, ...]]] = {}

    # -- store -----------------------------------------------------------------------
    def add_handler(self, handler: EventHandler) -> None:
        """Register a handler; it receives ADDED for objects already in the store."""
        self._handlers.append(handler)
        for obj in list(self._store.values()):
            handler(ADDED, obj, None)

    def remove_handler(self, handler: EventHandler) -> bool:
        """Unregister ``handler`` (compared by identity); later events no longer reach it.

        Safe while events are being delivered: the delivery in progress keeps its list.

        Returns:
            True if the handler was registered.
        """
        kept = [h for h in self._handlers if h is not handler]
        removed = len(kept) != len(self._handlers)
        self._handlers = kept
        return removed

    def add_indexer(self, name: str, func: Callable[[dict[str, Any]], Iterable[str]]) -> None:
        """Index objects by ``func(obj)`` values; query with :meth:`by_index`."""
        self._indexers[name] = func
        index: dict[str, set[str]] = {}
        indexed: dict[str, tuple[str, ...]] = {}
        for key, obj in self._store.items():
            indexed[key] = tuple(func(obj))
            for value in indexed[key]:
                index.setdefault(value, set()).add(key)
        self._indices[name] = index
        self._indexed[name] = indexed

    def by_index(self, name: str, value: str) -> list[dict[str, Any]]:
        """Objects whose indexer ``name`` yields ``value``."""
        keys = self._indices.get(name, {}).get(value, set())
        return [self._store[k] for k in sorted(keys) if k in self._store]

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached object with ``namespace/name`` key, or None."""
        return self._store.get(key)

    def items(self) -> list[dict[str, Any]]:
        """Every cached object."""
        return list(self._store.values())

    def keys(self) -> list[str]:
        """Every cached key."""
        return list(self._store)

    def _index(self, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        for name, func in self._indexers.items():
            index, indexed = self._indices[name], self._indexed[name]
            for value in indexed.pop(key, ()) if old is not None else ():
                index.get(value, set()).discard(key)
            if new is not None:
                indexed[key] = tuple(func(new))
                for value in indexed[key]:
                    index.setdefault(value, set()).add(key)

    def _emit(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        for handler in self._handlers:
            try:
                handler(event, obj, old)
            except Exception:  # a bad handler must not kill the informer
                _log.exception("%s informer: handler failed on %s", self.name, object_key(obj))

    def _apply(self, event: str, obj: dict[str, Any]) -> None:
        if self._transform is not None:
            obj = self._transform(obj)
        key = object_key(obj)
        old = self._store.get(key)
        if event == DELETED:
            self._store.pop(key, None)
            self._index(key, old, None)
            self._emit(DELETED, obj, old)
            return
        self._store[key] = obj
        self._index(key, old, obj)
        self._emit(ADDED if old is None else MODIFIED, obj, old)

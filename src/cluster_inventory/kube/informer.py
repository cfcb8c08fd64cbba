"""An asyncio informer: list, then watch, keeping a local store and calling handlers.

client-go's reflector semantics (``k8s.io/client-go/tools/cache``): LIST in pages (``limit`` +
``continue``) and remember the list's ``resourceVersion``; WATCH from it with
``allowWatchBookmarks`` and a server-side ``timeoutSeconds`` (chosen at random between 5
and 10 minutes); follow ``resourceVersion`` through every event including BOOKMARK; on
``410 Gone`` (or an ``ERROR`` event) LIST again and emit synthetic deletes for objects that
vanished meanwhile; reconnect with a capped backoff after transport errors. A watch stream
silent for longer than the server timeout plus a margin is treated as dead (the aiohttp
read timeout), which kubernetes_asyncio's own watch does not do.

Handlers are plain callables ``(event_type, obj, old)`` run inline in the informer task; they
must not block (enqueue work instead). The clock and the sleep are injectable. The local
store, its indices and the handlers are :class:`~cluster_inventory.kube._store.Store`'s.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import aiohttp

from cluster_inventory.kube._k8s import ApiClient
from cluster_inventory.kube._resources import Resource, list_pages
from cluster_inventory.kube._store import (
    ADDED,
    DELETED,
    MODIFIED,
    EventHandler,
    Store,
    object_key,
)
from cluster_inventory.kube._tasks import cancel_and_wait
from cluster_inventory.kube.backoff import Backoff
from cluster_inventory.kube.errors import GoneError, KubeAPIError, KubeError, error_from_status

__all__ = [
    "ADDED",
    "DELETED",
    "MODIFIED",
    "EventHandler",
    "Informer",
    "lookup",
    "object_key",
    "strip_managed_fields",
]

# The server's metadata-only forms (``meta.k8s.io/v1`` PartialObjectMetadata), as client-go's
# metadata informer asks: a Secret's data never leaves the server.
_METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
_METADATA_WATCH_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
_log = logging.getLogger(__name__)
#: Seconds before the next list or watch after failures in a row: 0.2 s doubling to 10 s.
_RETRY = Backoff(first=0.2, cap=10.0)


def strip_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop ``metadata.managedFields`` (a transform for :class:`Informer`; often half an object).

    Args:
        obj: An object as the server sent it (changed in place).

    Returns:
        The same object.
    """
    (obj.get("metadata") or {}).pop("managedFields", None)
    return obj


def lookup(informers: Iterable[Informer], key: str) -> dict[str, Any] | None:
    """The object ``key`` (``namespace/name``) from the first of ``informers`` that holds it.

    For one kind watched as several informers (one per namespace or selector).
    """
    for informer in informers:
        found = informer.get(key)
        if found is not None:
            return found
    return None


class Informer(Store):
    """Keep a local, up-to-date copy of a collection and report every change.

    Args:
        client: API client of the cluster to watch.
        resource: What to watch.
        namespace: One namespace, or None for all.
        label_selector: Server-side label selector.
        field_selector: Server-side field selector.
        page_size: ``limit`` for paged LISTs.
        name: For logs and errors, e.g. ``"member1 ClusterProperty"``.
        sleep: Injectable ``asyncio.sleep`` (backoff between reconnects).
        resync_period: If set, seconds between synthetic MODIFIED events for every object.
        transform: Applied to every object before it is stored or handed to a handler
            (client-go's ``SetTransform``), e.g. :func:`strip_managed_fields` to keep a large
            cache small. Must be pure and keep ``metadata.name``, ``namespace`` and
            ``resourceVersion``.
        metadata_only: Ask for ``PartialObjectMetadata`` only (client-go's metadata
            informer): objects hold ``metadata`` and nothing else, e.g. Secrets read for
            their labels and annotations without their data.

    Raises from :meth:`wait_synced`: KubeAPIError if the first LIST was refused for good
    (401, 403, 404); transient errors are retried.
    """

    def __init__(
        self,
        client: ApiClient,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        name: str = "",
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        resync_period: float | None = None,
        transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        metadata_only: bool = False,
    ) -> None:
        super().__init__(name=name or resource.kind, transform=transform)
        self.client = client
        self.resource = resource
        self.namespace = namespace
        # One collection: its path, its name in errors and its selectors, for LIST and WATCH.
        self._path = resource.path(namespace)
        self._target = resource.describe(namespace, None)
        self._selectors: dict[str, str | int | bool] = {
            key: value
            for key, value in (("labelSelector", label_selector), ("fieldSelector", field_selector))
            if value
        }
        self._page_size = page_size
        self._sleep = sleep
        self._resync_period = resync_period
        self._list_accept = _METADATA_LIST_ACCEPT if metadata_only else "application/json"
        self._watch_accept = _METADATA_WATCH_ACCEPT if metadata_only else "application/json"
        self._synced = asyncio.Event()
        self._first_error: KubeAPIError | None = None
        self._failure: str | None = None
        self._warned = False  # "cannot reach the server" said for the current failures
        self._health_handlers: list[Callable[[], None]] = []
        self._rv = ""
        #: Monotonic time of the last answer from the server (a list, an event, a bookmark).
        self.last_heard: float | None = None
        self._task: asyncio.Task[None] | None = None
        #: Number of LISTs done (1 + relists); for tests and metrics.
        self.lists = 0

    # -- reading health ------------------------------------------------------------
    def add_health_handler(self, handler: Callable[[], None]) -> None:
        """Call ``handler()`` whenever reading turns from working to failing or back.

        While reading fails the store keeps the last good view (nothing is deleted until a
        LIST succeeds again); :attr:`failure` says why.
        """
        self._health_handlers.append(handler)

    @property
    def failure(self) -> str | None:
        """Why the last LIST or WATCH failed, or None while reading works."""
        return self._failure

    def _set_failure(self, failure: str | None) -> None:
        changed = (failure is None) != (self._failure is None)
        self._failure = failure
        if failure is None and self._warned:
            self._warned = False
            _log.info("%s informer: reading again", self.name)
        if changed:
            for handler in self._health_handlers:
                try:
                    handler()
                except Exception:  # a bad handler must not kill the informer
                    _log.exception("%s informer: health handler failed", self.name)

    @property
    def has_synced(self) -> bool:
        """True once the first LIST has been delivered to the handlers."""
        return self._synced.is_set()

    @property
    def resource_version(self) -> str:
        """The last resourceVersion seen (list, event or bookmark)."""
        return self._rv

    async def wait_synced(self) -> None:
        """Wait for the first LIST.

        Raises:
            KubeAPIError: The LIST was refused with a non-retryable status.
        """
        await self._synced.wait()
        if self._first_error is not None:
            raise self._first_error

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        """Start the list/watch task in the running loop."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    @property
    def running(self) -> bool:
        """True between :meth:`start` and :meth:`stop`."""
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        """Stop the task and wait for it."""
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None

    async def __aenter__(self) -> Informer:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _list(self) -> None:
        items: dict[str, dict[str, Any]] = {}
        rv = ""
        pages = list_pages(
            self.client,
            self.resource,
            self.namespace,
            page_size=self._page_size,
            query=self._selectors,
            accept=self._list_accept,
        )
        async for page in pages:
            kind = self.resource.kind
            for item in page.get("items") or ():
                item.setdefault("apiVersion", self.resource.api_version)
                item.setdefault("kind", kind)
                items[object_key(item)] = item
            rv = (page.get("metadata") or {}).get("resourceVersion") or rv
        self.lists += 1
        self.last_heard = time.monotonic()
        for key in [k for k in self._store if k not in items]:
            self._apply(DELETED, self._store[key])  # synthetic delete after a relist
        for key, obj in items.items():
            old = self._store.get(key)
            if old is None or _rv(old) != _rv(obj):
                self._apply(MODIFIED if old else ADDED, obj)
        self._rv = rv

    async def _watch(self) -> None:
        timeout = random.randint(300, 600)  # noqa: S311 - spreading reconnects, not security
        query = {
            **self._selectors,
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": self._rv,
            "timeoutSeconds": timeout,
        }
        response = await self.client.call_api(
            self._path,
            "GET",
            query_params=list(query.items()),
            header_params={"Accept": self._watch_accept},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=aiohttp.ClientTimeout(total=None, connect=30, sock_read=timeout + 30),
        )
        async with response:
            if response.status != 200:
                body = await response.read()
                raise error_from_status(
                    response.status,
                    body.decode(errors="replace"),
                    http_reason=response.reason or "",
                    target=self._target,
                )
            self._set_failure(None)
            async for line in response.content:
                self.last_heard = time.monotonic()
                if not line.strip():
                    continue
                event = json.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    status = obj.get("code") or 500
                    raise error_from_status(status, json.dumps(obj), target=self._target)
                rv = (obj.get("metadata") or {}).get("resourceVersion")
                if kind == "BOOKMARK":
                    if rv:
                        self._rv = rv
                    continue
                if kind in (ADDED, MODIFIED, DELETED):
                    obj.setdefault("apiVersion", self.resource.api_version)
                    obj.setdefault("kind", self.resource.kind)
                    self._apply(kind, obj)
                    if rv:
                        self._rv = rv

    async def _resync_loop(self) -> None:
        assert self._resync_period is not None
        while True:
            await self._sleep(self._resync_period)
            for obj in list(self._store.values()):
                self._emit(MODIFIED, obj, obj)

    async def _run(self) -> None:
        failures = 0  # in a row, for the delay before the next try (_RETRY)
        resync: asyncio.Task[None] | None = None
        need_list = True
        try:
            while True:
                try:
                    if need_list:
                        await self._list()
                        need_list = False
                        self._first_error = None
                        self._set_failure(None)
                        if not self._synced.is_set():
                            self._synced.set()
                            if self._resync_period:
                                resync = asyncio.get_running_loop().create_task(self._resync_loop())
                    await self._watch()
                    failures = 0  # the server closed a healthy watch: resume at once
                except GoneError:
                    need_list = True  # 410: our resourceVersion is too old
                except KubeAPIError as exc:
                    if not self._synced.is_set() and exc.status in (401, 403, 404):
                        self._first_error = exc
                        self._synced.set()
                    failures += 1
                    backoff = _RETRY.delay(failures)
                    _log.warning("%s informer: %s; retrying in %.1fs", self.name, exc, backoff)
                    self._set_failure(str(exc))
                    await self._sleep(backoff)
                    need_list = need_list or exc.status >= 500
                except (KubeError, aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
                    # A watch that breaks is routine (a server restarts, a proxy recycles
                    # connections); a reconnect that fails too means the server is out of
                    # reach: said once as a warning, and once more when reading works again.
                    if self._failure is not None and not self._warned:
                        self._warned = True
                        _log.warning(
                            "%s informer: cannot reach the server (%s: %s); retrying with "
                            "backoff up to 10 s",
                            self.name,
                            type(exc).__name__,
                            exc,
                        )
                    else:
                        _log.info("%s informer: watch ended (%s); reconnecting", self.name, exc)
                    self._set_failure(f"{type(exc).__name__}: {exc}")
                    failures += 1
                    await self._sleep(_RETRY.delay(failures))
        finally:
            if resync is not None:
                resync.cancel()


def _rv(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion", ""))

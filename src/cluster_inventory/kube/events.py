"""Recording ``events.k8s.io/v1`` Events about an object, as client-go's recorder does.

Controllers report what happened to an object, and what a person must act on (a
registration that does not parse, a member whose control plane went unhealthy), as an Event
on the object concerned, so ``kubectl describe`` shows it. One :class:`EventRecorder` per
API client correlates the reports first (:mod:`cluster_inventory.kube._event_correlation`,
client-go's aggregation and spam filter): a report seen before adds to its Event's
``series.count`` (a merge patch) rather than making another Event, ten distinct notes of
alike reports within 600 s become one aggregated Event, and a reporter writes about one
object and type at most 25 times at once, then once per 300 s.

The Event name is ``<object>.<digest of its key>``: the same report about the same object is
one Event, and a restarted replica reporting it again finds it and adds nothing. Recording is
best effort: a refused Event is logged and counted, never raised, since the report must not
stop the work.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict, Unpack

from prometheus_client import REGISTRY, CollectorRegistry, Counter

from cluster_inventory._clock import utcnow
from cluster_inventory.api import format_micro_time, objects
from cluster_inventory.kube._event_correlation import (
    AGGREGATED_NOTE_PREFIX,
    Correlation,
    CorrelatorOptions,
    EventCorrelator,
    EventReport,
)
from cluster_inventory.kube._k8s import ApiClient
from cluster_inventory.kube._metrics import PerRegistry
from cluster_inventory.kube._resources import create, get, request
from cluster_inventory.kube.errors import AlreadyExistsError, KubeError, NotFoundError
from cluster_inventory.kube.resources import EVENTS

__all__ = [
    "AGGREGATED_NOTE_PREFIX",
    "EVENT_RESULTS",
    "CorrelatorOptions",
    "EventFields",
    "EventMetrics",
    "EventRecorder",
    "object_reference",
    "record_event",
    "recorder_for",
]

_log = logging.getLogger(__name__)

#: ``result`` values of ``cluster_inventory_events_total``.
EVENT_RESULTS = ("created", "counted", "filtered", "existed", "failed")
_MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True)
class EventMetrics(PerRegistry):
    """``cluster_inventory_events_total{result}``: what became of each report.

    ``created`` (a new Event), ``counted`` (an existing Event's ``series.count`` raised),
    ``filtered`` (held back by the spam filter; counted in the next write), ``existed`` (a
    restarted replica found its Event already there), ``failed`` (the API refused it).
    """

    total: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry) -> EventMetrics:
        """Create and register the collector in ``registry`` (use :meth:`for_registry`)."""
        total = Counter(
            "cluster_inventory_events",
            "Reports made as Kubernetes Events, by what became of them",
            ["result"],
            registry=registry,
        )
        for result in EVENT_RESULTS:
            total.labels(result)
        return cls(total)


def _cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` UTF-8 bytes (the API counts bytes), on a character boundary."""
    return text.encode()[:limit].decode(errors="ignore")


class EventRecorder:
    """client-go's ``EventRecorder`` for one API client, writing events.k8s.io/v1 Events.

    Use from the event loop that owns ``client``.

    Args:
        client: API client of the cluster holding the objects reported on.
        options: Aggregation and spam-filter limits (client-go's defaults).
        clock: Monotonic seconds (the correlation windows and the token buckets).
        now: Wall-clock time of an Event (``eventTime``, ``series.lastObservedTime``).
        registry: Where ``cluster_inventory_events_total`` is counted.
    """

    def __init__(
        self,
        client: ApiClient,
        *,
        options: CorrelatorOptions | None = None,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], dt.datetime] = utcnow,
        registry: CollectorRegistry = REGISTRY,
    ) -> None:
        self.client = client
        self.correlator = EventCorrelator(options, clock=clock)
        self._now = now
        self._metrics = EventMetrics.for_registry(registry)

    async def record(
        self,
        regarding: Mapping[str, Any],
        *,
        reason: str,
        note: str,
        action: str,
        controller: str,
        instance: str,
        dedupe: str | None = None,
        event_type: str = "Warning",
        now: dt.datetime | None = None,
    ) -> bool:
        """Report ``reason``/``note`` about ``regarding``: a new Event, a count, or nothing.

        Args:
            regarding: ``{apiVersion, kind, name, namespace[, uid, resourceVersion]}`` of the
                object (an ObjectReference). Its namespace is the Event's namespace
                (``default`` for a cluster-scoped object).
            reason: CamelCase reason, e.g. ``RenderFailed``.
            note: The human-readable message (cut to 1 KiB, the API's limit). Never a secret.
            action: What the controller was doing, e.g. ``Render``.
            controller: ``reportingController``, e.g. ``cluster-inventory.dev/argocd-sync``.
            instance: ``reportingInstance`` (the replica identity; cut to 128 bytes).
            dedupe: Key naming this report in place of the note: equal keys on one object
                are one Event (None: the note names it).
            event_type: ``Warning`` or ``Normal``.
            now: Time of this occurrence (default: the recorder's ``now``).

        Returns:
            True if an Event was created or its count written; False if the spam filter held
            the report back, the Event existed already (a restart), or the API refused it.
        """
        report = EventReport(
            regarding={k: str(v) for k, v in regarding.items() if v is not None},
            reason=reason,
            note=_cut(note, 1024),
            action=action,
            event_type=event_type,
            controller=controller,
            instance=_cut(instance, 128),
            dedupe=dedupe,
        )
        seen = self.correlator.correlate(report)
        if not seen.write:
            self._metrics.total.labels("filtered").inc()
            return False
        occurrence = _Occurrence(
            report=report,
            seen=seen,
            name=_event_name(report, seen),
            namespace=report.regarding.get("namespace") or "default",
            when=now or self._now(),
        )
        try:
            if seen.count == 1 and seen.known:
                return await self._create(occurrence)
            return await self._count(occurrence)
        except KubeError as exc:
            self._metrics.total.labels("failed").inc()
            _log.warning(
                "cannot record event %s: %s",
                reason,
                exc,
                extra={"object": report.regarding.get("name")},
            )
            return False

    async def _create(self, occurrence: _Occurrence) -> bool:
        report, seen = occurrence.report, occurrence.seen
        event: dict[str, Any] = {
            "metadata": {"name": occurrence.name, "namespace": occurrence.namespace},
            "eventTime": format_micro_time(occurrence.when),
            "reportingController": report.controller,
            "reportingInstance": report.instance,
            "action": report.action,
            "reason": report.reason,
            "type": report.event_type,
            "note": _cut(seen.note, 1024),
            "regarding": dict(report.regarding),
        }
        if seen.count > 1:
            event["series"] = occurrence.series(seen.count)
        try:
            await create(self.client, EVENTS, event)
        except AlreadyExistsError:
            self.correlator.exists(seen.key)
            self._metrics.total.labels("existed").inc()
            return False
        self.correlator.settle(seen.key, seen.count)
        self._metrics.total.labels("created").inc()
        return True

    async def _count(self, occurrence: _Occurrence) -> bool:
        seen, name, namespace = occurrence.seen, occurrence.name, occurrence.namespace
        count = seen.count
        try:
            if not seen.known:
                stored = await get(self.client, EVENTS, name, namespace)
                count += int((stored.get("series") or {}).get("count") or 1)
            await request(
                self.client,
                "PATCH",
                EVENTS.path(namespace, name),
                body={"series": occurrence.series(count)},
                content_type=_MERGE_PATCH,
                target=EVENTS.describe(namespace, name),
            )
        except NotFoundError:
            # Its create failed, or someone deleted it (Events expire after an hour): anew.
            return await self._create(occurrence)
        self.correlator.settle(seen.key, count)
        self._metrics.total.labels("counted").inc()
        return True


@dataclass(frozen=True)
class _Occurrence:
    """One report to write as an Event: what was reported, its correlation, name and time."""

    report: EventReport
    seen: Correlation
    name: str
    namespace: str
    when: dt.datetime

    def series(self, count: int) -> dict[str, Any]:
        """The Event's ``series``: ``count`` occurrences, the last one now."""
        return {"count": count, "lastObservedTime": format_micro_time(self.when)}


def _event_name(report: EventReport, seen: Correlation) -> str:
    """``<object>.<10 hex digits>``: the digest of the dedupe key as before, else of the key."""
    if seen.aggregated:
        basis = "aggregate\x00" + "\x00".join(seen.key)
    elif report.dedupe is not None:
        basis = report.dedupe
    else:
        basis = "\x00".join(seen.key)
    suffix = hashlib.sha256(basis.encode()).hexdigest()[:10]
    return f"{str(report.regarding.get('name'))[:200]}.{suffix}"


_recorders: weakref.WeakKeyDictionary[ApiClient, EventRecorder] = weakref.WeakKeyDictionary()


def recorder_for(client: ApiClient) -> EventRecorder:
    """The process's one :class:`EventRecorder` for ``client`` (made on first use)."""
    recorder = _recorders.get(client)
    if recorder is None:
        recorder = _recorders[client] = EventRecorder(client)
    return recorder


class EventFields(TypedDict):
    """The keywords of :meth:`EventRecorder.record` (and :func:`record_event`), as one type."""

    reason: str
    note: str
    action: str
    controller: str
    instance: str
    dedupe: NotRequired[str | None]
    event_type: NotRequired[str]
    now: NotRequired[dt.datetime | None]


async def record_event(
    client: ApiClient, regarding: Mapping[str, Any], **fields: Unpack[EventFields]
) -> bool:
    """Report about ``regarding`` through ``client``'s :class:`EventRecorder`.

    The arguments are :meth:`EventRecorder.record`'s (:class:`EventFields`); the recorder is
    the one :func:`recorder_for` keeps for ``client``, so every caller sharing a client
    shares its aggregation and spam filter.

    Returns:
        True if an Event was created or its count written.
    """
    return await recorder_for(client).record(regarding, **fields)


def object_reference(obj: Mapping[str, Any]) -> dict[str, str]:
    """``{apiVersion, kind, namespace, name, uid}`` of an API object (an Event's ``regarding``)."""
    meta = objects.meta(obj)
    ref = {
        "apiVersion": str(obj.get("apiVersion") or "v1"),
        "kind": str(obj.get("kind") or "Secret"),
        "name": str(meta.get("name") or ""),
    }
    for key in ("namespace", "uid"):
        if meta.get(key):
            ref[key] = str(meta[key])
    return ref

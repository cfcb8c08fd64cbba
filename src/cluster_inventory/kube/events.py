"""Recording ``events.k8s.io/v1`` Events about an object, as client-go's recorder does.

Controllers report what a person must act on (a registration that does not parse, a profile
that cannot be rendered) as a Warning Event on the object concerned, so ``kubectl describe``
shows it. The Event name is ``<object>.<digest of a dedupe key>``: the same report about the
same object revision is created once, however often a reconcile repeats it. Recording is best
effort: a refused Event is logged, never raised, since the report must not stop the work.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections.abc import Mapping
from typing import Any

from cluster_inventory.api import format_micro_time, objects
from cluster_inventory.kube._k8s import ApiClient
from cluster_inventory.kube._resources import create
from cluster_inventory.kube.errors import AlreadyExistsError, KubeError
from cluster_inventory.kube.resources import EVENTS

__all__ = ["object_reference", "record_event"]

_log = logging.getLogger(__name__)


def _cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` UTF-8 bytes (the API counts bytes), on a character boundary."""
    return text.encode()[:limit].decode(errors="ignore")


async def record_event(
    client: ApiClient,
    regarding: Mapping[str, Any],
    *,
    reason: str,
    note: str,
    action: str,
    controller: str,
    instance: str,
    dedupe: str,
    event_type: str = "Warning",
    now: dt.datetime | None = None,
) -> bool:
    """Create one Event about ``regarding`` unless the same one exists.

    Args:
        client: API client of the cluster holding the object.
        regarding: ``{apiVersion, kind, name, namespace[, uid, resourceVersion]}`` of the
            object (an ObjectReference). Its namespace is the Event's namespace.
        reason: CamelCase reason, e.g. ``RenderFailed``.
        note: The human-readable message (cut to 1 KiB, the API's limit). Never a secret.
        action: What the controller was doing, e.g. ``Render``.
        controller: ``reportingController``, e.g. ``cluster-inventory.dev/argocd-sync``.
        instance: ``reportingInstance`` (the replica identity; cut to 128 bytes).
        dedupe: Key naming this report: equal keys on one object make one Event.
        event_type: ``Warning`` or ``Normal``.
        now: Event time (default: now, UTC).

    Returns:
        True if an Event was created, False if it existed or could not be written.
    """
    name = str(regarding.get("name"))
    suffix = hashlib.sha256(dedupe.encode()).hexdigest()[:10]
    event = {
        "metadata": {
            "name": f"{name[:200]}.{suffix}",
            "namespace": regarding.get("namespace") or "default",  # cluster-scoped objects
        },
        "eventTime": format_micro_time(now or dt.datetime.now(dt.UTC)),
        "reportingController": controller,
        "reportingInstance": _cut(instance, 128),
        "action": action,
        "reason": reason,
        "type": event_type,
        "note": _cut(note, 1024),
        "regarding": dict(regarding),
    }
    try:
        await create(client, EVENTS, event)
    except AlreadyExistsError:
        return False
    except KubeError as exc:
        _log.warning("cannot record event: %s", exc, extra={"object": name})
        return False
    return True


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

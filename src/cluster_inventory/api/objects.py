"""The parts of an API object as the server sends it: metadata, spec, status, labels.

Every controller reads ``metadata.labels`` or ``status`` of a dict the API server returned,
and an object written by someone else may hold anything there. These accessors are the one
way to read them: an absent part, or one of the wrong type, reads as empty, so a malformed
object is never a ``TypeError`` in a reconcile. Pure and cheap to import (the CLI's printers
use them). ClusterProfiles have a richer view, :class:`cluster_inventory.api.views.ProfileView`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ObjectKey", "annotations_of", "fingerprint", "labels_of", "meta", "spec", "status"]

_EMPTY: Mapping[str, Any] = {}


@dataclass(frozen=True, order=True)
class ObjectKey:
    """Where a namespaced object lives (client-go's ``types.NamespacedName``).

    Orders by namespace, then name; prints as ``namespace/name``, the informer's key.
    """

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def _part(obj: Any, key: str) -> Mapping[str, Any]:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, Mapping) else _EMPTY


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj.metadata``, or an empty mapping when absent or not a mapping."""
    return _part(obj, "metadata")


def spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj.spec``, or an empty mapping when absent or not a mapping."""
    return _part(obj, "spec")


def status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj.status``, or an empty mapping when absent or not a mapping."""
    return _part(obj, "status")


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """``obj.metadata.labels``, or an empty mapping (the API server stores strings only)."""
    return _part(meta(obj), "labels")


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """``obj.metadata.annotations``, or an empty mapping (the API server stores strings only)."""
    return _part(meta(obj), "annotations")


def fingerprint(obj: Any) -> str:
    """A digest of JSON content (sorted keys, SHA-256, 32 hex digits).

    Equal content gives equal fingerprints whatever its key order: a sync's render
    (``integrations.sync``) and a trimmed profile's access providers
    (``manager.status.trim_status``) are compared by it instead of kept whole.

    Args:
        obj: JSON-like content (values JSON cannot hold are written with ``str``).

    Returns:
        The hex digest.
    """
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]

"""Which objects a sync owns, and whether a stored one is still what the render says.

Every object a sync writes carries ``app.kubernetes.io/managed-by`` (the sync) and
``cluster-inventory.dev/sync-instance`` (the instance); an instance writes and deletes only
objects carrying both with its own values (:meth:`ProfileMirror.owns`). A rendered object
carries its :func:`fingerprint`, so an unchanged render costs no write (:func:`matches`).
All pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from cluster_inventory.api.constants import (
    ANNOTATION_FINGERPRINT,
    DEFAULT_SYNC_INSTANCE,
    LABEL_MANAGED_BY,
    LABEL_SYNC_INSTANCE,
)
from cluster_inventory.api.objects import fingerprint, labels_of, meta

__all__ = [
    "ANNOTATION_FINGERPRINT",
    "LABEL_MANAGED_BY",
    "fingerprint",
    "instance_lease_name",
    "matches",
    "owner_of",
    "validate_instance",
]


_INSTANCE = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$")


def validate_instance(instance: str) -> str:
    """Check a sync instance name: it is a label value and part of a Lease name.

    Args:
        instance: The name (``--name``, or a MultiKueue config name by default).

    Returns:
        ``instance``.

    Raises:
        ValueError: Not lower-case letters, digits, ``-`` and ``.``, starting and ending
            alphanumeric, at most 63 characters.
    """
    if not _INSTANCE.match(instance):
        raise ValueError(
            f"sync instance name {instance!r}: must be lower-case letters, digits, '-' or "
            "'.', start and end with a letter or digit, and be at most 63 characters"
        )
    return instance


def instance_lease_name(base: str, instance: str) -> str:
    """The Lease of one sync instance: ``base`` for the default instance, else ``base-<name>``.

    Instances are different controllers, so each elects its own leader.
    """
    return base if instance == DEFAULT_SYNC_INSTANCE else f"{base}-{instance}"


def owner_of(obj: Mapping[str, Any], field_manager: str) -> str | None:
    """Which instance of the sync ``field_manager`` owns ``obj`` (None: not this sync's).

    An object of this sync without the instance label was written before instances
    existed: it is reported as the default instance's.
    """
    labels = labels_of(obj)
    if labels.get(LABEL_MANAGED_BY) != field_manager:
        return None
    return str(labels.get(LABEL_SYNC_INSTANCE) or DEFAULT_SYNC_INSTANCE)


def matches(stored: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
    """True if ``stored`` has ``body``'s fingerprint and still holds what ``body`` sets.

    The fingerprint annotation is one of ``body``'s annotations, so a changed render never
    matches; the content check catches an edit by hand, which leaves the annotation as it
    was. Fields of other managers (labels, annotations they added) are ignored.
    """
    for key in ("labels", "annotations"):
        have = meta(stored).get(key) or {}
        if any(have.get(k) != v for k, v in (meta(body).get(key) or {}).items()):
            return False
    return all(
        stored.get(key) == value
        for key, value in body.items()
        if key not in ("metadata", "apiVersion", "kind")
    )

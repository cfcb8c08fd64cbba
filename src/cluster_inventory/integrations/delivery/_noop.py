"""Whether a server-side apply could change anything: an unchanged object is not sent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster_inventory.api import objects


def comparable(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` without the metadata every write changes (managedFields, versions)."""
    meta = {
        k: v
        for k, v in objects.meta(obj).items()
        if k not in ("managedFields", "resourceVersion", "generation")
    }
    return {**obj, "metadata": meta}


def _covers(stored: Any, wanted: Any) -> bool:
    """Whether ``stored`` holds every value of ``wanted``.

    Maps key by key (extra keys allowed), lists element by element at equal length,
    everything else equal.
    """
    if isinstance(wanted, dict):
        return isinstance(stored, dict) and all(
            k in stored and _covers(stored[k], v) for k, v in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(stored, list)
            and len(stored) == len(wanted)
            and all(_covers(a, b) for a, b in zip(stored, wanted, strict=True))
        )
    return bool(stored == wanted)


def _owned_within(fields: Mapping[str, Any], wanted: Any) -> bool:
    """Whether every field of a ``FieldsV1`` set is in ``wanted``.

    Maps are followed; a list or a value in ``wanted`` counts as a whole.
    """
    for key, sub in fields.items():
        if key == ".":
            continue
        if not key.startswith("f:") or not isinstance(wanted, dict) or key[2:] not in wanted:
            return False
        value = wanted[key[2:]]
        if isinstance(value, dict) and isinstance(sub, dict) and not _owned_within(sub, value):
            return False
    return True


def apply_is_noop(stored: Mapping[str, Any], body: Mapping[str, Any], field_manager: str) -> bool:
    """Whether server-side applying ``body`` to ``stored`` as ``field_manager`` changes nothing.

    Server-side apply (KEP-555) sets the fields of the body and removes the fields the
    manager owned before but left out. So the apply is a no-op when all of these hold:

    - ``stored`` has an ``Apply`` entry of ``field_manager`` in ``metadata.managedFields``
      (not of a subresource) at the body's ``apiVersion``, in ``FieldsV1`` -- or the body
      sets no field at all beyond its name (then no entry is kept, and none is needed);
    - every value of the body is already stored (maps compared key by key, lists element by
      element and of equal length, so a value the server normalises or defaults inside a
      list makes it "not a no-op");
    - every field that entry owns is in the body (nothing to remove).

    It answers False whenever it cannot be sure, and then the object is applied.

    Args:
        stored: The object as the API server returned it (with ``managedFields``).
        body: The apply body (``apiVersion``, ``kind``, ``metadata`` with name, namespace).
        field_manager: The apply's field manager.

    Returns:
        True if the apply can be skipped and the object reported ``unchanged``.
    """
    meta = objects.meta(stored)
    entry = next(
        (
            e
            for e in meta.get("managedFields") or ()
            if e.get("manager") == field_manager
            and e.get("operation") == "Apply"
            and not e.get("subresource")
        ),
        None,
    )
    wanted = {k: v for k, v in body.items() if k not in ("apiVersion", "kind")}
    if entry is None:
        # A body that sets no field (a bare ServiceAccount) leaves no entry behind: there is
        # nothing to set and nothing owned to remove.
        bare = set(wanted) <= {"metadata"} and set(objects.meta(wanted)) <= {
            "name",
            "namespace",
        }
        return bare
    if entry.get("fieldsType") != "FieldsV1" or entry.get("apiVersion") != body.get("apiVersion"):
        return False
    return _covers(stored, wanted) and _owned_within(entry.get("fieldsV1") or {}, wanted)

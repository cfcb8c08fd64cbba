"""What a CRD version's structural schema keeps of an object, and what it drops.

A CRD without a conversion webhook converts between its versions with the ``None``
strategy: the API server rewrites ``apiVersion`` and nothing else, then prunes what the
target version's schema does not name, on every read through that version and on every
write stored in it. A field that exists in one version only (ClusterProfile v1alpha1's
``status.credentialProviders``, a Cluster's ``certificate-authority``) is therefore gone
for good once an object is stored in the version without it. ``crds migrate`` asks this
module, before it rewrites anything, which fields each object would lose.

The walk is apiextensions-apiserver's ``pruning.PruneWithOptions`` (``pkg/apiserver/schema/
pruning/algorithm.go``) over the JSON form of the schema: ``properties`` name what is kept,
``additionalProperties`` keeps every key, ``x-kubernetes-preserve-unknown-fields`` keeps
unknown keys (known ones are still walked), ``x-kubernetes-embedded-resource`` and the root
keep ``apiVersion``, ``kind`` and ``metadata``. The paths are the server's own
(``status.accessProviders[0].cluster.certificate-authority``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["dropped_fields"]

_META = ("apiVersion", "kind", "metadata")


def dropped_fields(obj: Mapping[str, Any], schema: Mapping[str, Any] | None) -> list[str]:
    """The paths of the fields of ``obj`` that ``schema`` would prune, sorted.

    Args:
        obj: A custom resource as decoded JSON (any version's).
        schema: The target version's ``schema.openAPIV3Schema``; None prunes everything
            but the root's ``apiVersion``, ``kind`` and ``metadata``.

    Returns:
        Paths such as ``status.credentialProviders``; empty when nothing is lost.
    """
    root = dict(schema or {})
    root["x-kubernetes-embedded-resource"] = True
    out: list[str] = []
    _prune(obj, root, "", out)
    return sorted(out)


def _key(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _prune(
    value: Any,
    schema: Mapping[str, Any] | None,
    path: str,
    out: list[str],
    preserve: bool = False,
) -> None:
    """Record in ``out`` what ``schema`` prunes of ``value`` at ``path``.

    ``preserve`` is ``x-kubernetes-preserve-unknown-fields`` in force (the server's
    ``skipPrune``): unknown keys stay, known ones are walked with their own schema, and the
    items of a list inherit it.
    """
    if schema is not None and schema.get("x-kubernetes-preserve-unknown-fields") is True:
        preserve = True
    if schema is None:
        if preserve:
            return
        if isinstance(value, Mapping):
            out.extend(_key(path, str(k)) for k in value)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                _prune(item, None, f"{path}[{i}]", out)
        return
    if isinstance(value, Mapping):
        embedded = schema.get("x-kubernetes-embedded-resource") is True
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            if embedded and key in _META:
                continue
            if key in properties:
                _prune(item, properties[key], _key(path, key), out)
            elif isinstance(additional, Mapping):
                _prune(item, additional, _key(path, key), out)
            elif not preserve and additional is not True:
                out.append(_key(path, str(key)))
    elif isinstance(value, list):
        items = schema.get("items")
        for i, item in enumerate(value):
            element = items if isinstance(items, Mapping) else None
            _prune(item, element, f"{path}[{i}]", out, preserve)

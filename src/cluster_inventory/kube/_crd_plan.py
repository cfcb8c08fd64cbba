"""What applying a CustomResourceDefinition to a hub may change: decided before the write.

Two rules, both pure over the CRD we ship and the one the hub has:

- **The storage version never moves back.** A hub whose CRD stores a newer version than ours
  (``crds migrate`` moved ClusterProfile to v1alpha2; ours still stores v1alpha1, as
  upstream's does) keeps it: the manifest we apply is ours with the hub's storage version.
  Objects written in between would otherwise be stored in the older version, and
  ``status.storedVersions`` would list both again. A hub storing a version we do not serve
  at all was upgraded by a newer release: nothing is applied. Versions are ordered as
  apimachinery's ``version.CompareKubeAwareVersionStrings`` orders them (GA, then beta, then
  alpha; higher numbers first), the order the API server uses for the preferred version.
- **Say what changes.** :func:`changed_paths` names, from the hub's CRD and the one the
  server answers (stored, or a ``dryRun=All`` result), where they differ, e.g.
  ``spec.versions[v1alpha2]: added``, as ``kubectl diff`` would show it in one line each.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cluster_inventory.kube.errors import KubeError

__all__ = [
    "CRDStorageError",
    "StoragePlan",
    "changed_paths",
    "plan_storage",
    "storage_version",
    "version_priority",
]

_KUBE_VERSION = re.compile(r"^v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?$")
_STABILITY = {None: 2, "beta": 1, "alpha": 0}
#: How deep :func:`changed_paths` names a difference (``spec.versions[v1].schema``).
_DEPTH = 4


class CRDStorageError(KubeError):
    """The hub's CRD stores a version this release does not serve: it is not applied.

    Attributes:
        crd: The CRD's name.
        hub_storage: The version the hub's CRD stores.
        served: The versions our manifest serves.
    """

    def __init__(self, crd: str, hub_storage: str, served: Sequence[str]) -> None:
        self.crd = crd
        self.hub_storage = hub_storage
        self.served = tuple(served)
        super().__init__(
            f"CustomResourceDefinition {crd}: the hub stores {hub_storage}, which this release "
            f"does not serve (it serves {', '.join(self.served)}); a newer release installed it. "
            "Not applied: applying would move the storage version back"
        )


@dataclass(frozen=True, kw_only=True)
class StoragePlan:
    """The manifest to apply, and what the hub's storage version means for it.

    Attributes:
        manifest: Our CRD, with the hub's storage version where that one is newer.
        ours: The version our CRD marks as storage.
        kept: The hub's storage version, kept instead of ``ours``; or None.
        moves: ``(from, to)`` when applying moves the hub's storage forward (ours is newer):
            objects stay stored in ``from`` until ``crds migrate`` rewrites them.
    """

    manifest: dict[str, Any]
    ours: str | None = None
    kept: str | None = None
    moves: tuple[str, str] | None = None

    def notes(self) -> list[str]:
        """What a person should know about the storage version, one sentence each."""
        if self.kept is not None:
            return [
                f"storage stays {self.kept}, the hub's; this release stores {self.ours} but "
                f"never moves storage back (crds migrate --to {self.ours} does, on purpose)"
            ]
        if self.moves is not None:
            old, new = self.moves
            return [
                f"storage moves {old} -> {new}: objects stay stored as {old} until "
                f"crds migrate --to {new} rewrites them"
            ]
        return []


def version_priority(version: str) -> tuple[int, int, int, int]:
    """A sort key: a higher key is the newer (preferred) version.

    Kubernetes-like versions (``v1``, ``v2beta1``, ``v1alpha2``) come before any other
    string; among them GA before beta before alpha, then the higher major, then the higher
    minor, as apimachinery's ``CompareKubeAwareVersionStrings`` orders them. Other strings
    all get the lowest key: :func:`plan_storage` then keeps the hub's storage version.
    """
    match = _KUBE_VERSION.match(version)
    if match is None:
        return (0, 0, 0, 0)
    major, stability, minor = match.groups()
    return (1, _STABILITY[stability], int(major), int(minor or 0))


def storage_version(crd: Mapping[str, Any]) -> str | None:
    """The name of the version marked ``storage: true`` in ``spec.versions``, or None."""
    for version in (crd.get("spec") or {}).get("versions") or ():
        if isinstance(version, Mapping) and version.get("storage") is True:
            return str(version.get("name"))
    return None


def plan_storage(ours: Mapping[str, Any], hub: Mapping[str, Any] | None) -> StoragePlan:
    """Our CRD as it may be applied to a hub whose CRD is ``hub`` (None: none yet).

    Args:
        ours: The CRD this release ships.
        hub: The hub's CRD as read (``GET``), or None when it has none.

    Returns:
        The plan; its manifest is a copy (``ours`` is not changed).

    Raises:
        CRDStorageError: The hub stores a newer version that ``ours`` does not serve.
    """
    manifest = copy.deepcopy(dict(ours))
    theirs = storage_version(hub) if hub is not None else None
    mine = storage_version(manifest)
    if theirs is None or mine is None or theirs == mine:
        return StoragePlan(manifest=manifest, ours=mine)
    if version_priority(theirs) < version_priority(mine):
        return StoragePlan(manifest=manifest, ours=mine, moves=(theirs, mine))
    versions = manifest["spec"]["versions"]
    served = [str(v["name"]) for v in versions if v.get("served")]
    if theirs not in served:
        raise CRDStorageError(str(manifest["metadata"]["name"]), theirs, served)
    for version in versions:
        version["storage"] = version["name"] == theirs
    return StoragePlan(manifest=manifest, ours=mine, kept=theirs)


def changed_paths(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> list[str]:
    """Where ``after`` differs from ``before`` in ``spec`` and in metadata labels/annotations.

    List items that carry a ``name`` (versions, printer columns) are matched by it, so a
    version added shows as ``spec.versions[v1alpha2]: added`` rather than as a changed list.
    A difference deeper than four steps is named at the fourth (``spec.versions[v1].schema``).

    Args:
        before: The hub's object before the write, or None (nothing to compare: no lines).
        after: The object as the server answered the write (or its dry run).

    Returns:
        Lines ``<path>: added|removed|changed``, sorted.
    """
    if before is None:
        return []
    out: list[str] = []
    for part in ("labels", "annotations"):
        _diff(
            f"metadata.{part}",
            ((before.get("metadata") or {}).get(part)) or {},
            ((after.get("metadata") or {}).get(part)) or {},
            2,
            out,
        )
    _diff("spec", before.get("spec") or {}, after.get("spec") or {}, 1, out)
    return sorted(out)


def _named(items: Any) -> dict[str, Any] | None:
    """A list of objects keyed by ``name`` when every item has a distinct one, else None."""
    if not isinstance(items, list) or not items:
        return None
    named = {i.get("name"): i for i in items if isinstance(i, Mapping)}
    if len(named) != len(items) or not all(isinstance(n, str) for n in named):
        return None
    return {str(n): i for n, i in named.items()}


def _diff(path: str, old: Any, new: Any, depth: int, out: list[str]) -> None:
    if old == new:
        return
    if depth < _DEPTH:
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            for key in sorted(old.keys() | new.keys()):
                _step(
                    f"{path}.{key}", old.get(key), new.get(key), key in old, key in new, depth, out
                )
            return
        old_named, new_named = _named(old), _named(new)
        if old_named is not None and new_named is not None:
            for key in sorted(old_named.keys() | new_named.keys()):
                _step(
                    f"{path}[{key}]",
                    old_named.get(key),
                    new_named.get(key),
                    key in old_named,
                    key in new_named,
                    depth,
                    out,
                )
            return
    out.append(f"{path}: changed")


def _step(path: str, old: Any, new: Any, had: bool, has: bool, depth: int, out: list[str]) -> None:
    if not had:
        out.append(f"{path}: added")
    elif not has:
        out.append(f"{path}: removed")
    else:
        _diff(path, old, new, depth + 1, out)

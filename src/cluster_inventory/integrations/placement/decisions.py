"""From a choice to PlacementDecision slices, and what to write to get there. Pure.

KEP-5313's output rules: at most 100 ``decisions`` per slice; every
slice carries ``multicluster.x-k8s.io/decision-key`` (the same on all) and
``decision-index`` (from 0), and here also ``placement-key`` and ``decision-revision``
(a digest of the whole set, so a consumer can tell slices of one revision from a mix);
``schedulerName`` names the writer; names are deterministic (``<placement>-<index>``) and
decisions sorted, so an unchanged choice renders byte-identical slices and
:func:`plan_writes` finds nothing to write. An empty choice is still one slice with no
decisions: "decided: none" differs from "not decided yet".

A slice that another scheduler wrote is never in the plan: :func:`plan_writes` reports a name
taken by another scheduler as a conflict instead of writing over it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    ANNOTATION_DECISION_SLICES,
    FIELD_MANAGER_PLACEMENT,
    GROUP,
    LABEL_DECISION_INDEX,
    LABEL_DECISION_KEY,
    LABEL_DECISION_REVISION,
    LABEL_MANAGED_BY,
    LABEL_PLACEMENT_KEY,
    PLACEMENT_DECISION_KIND,
    PLACEMENT_DECISION_MAX_DECISIONS,
    PROJECT_DOMAIN,
    V1ALPHA1,
)
from cluster_inventory.api.constants import (
    PLACEMENT_SCHEDULER_NAME as SCHEDULER_NAME,
)
from cluster_inventory.integrations.placement.choice import Choice, ClusterRef

__all__ = [
    "PLACEMENT_API_VERSION",
    "PLACEMENT_GROUP",
    "PLACEMENT_KIND",
    "PLACEMENT_PLURAL",
    "SCHEDULER_NAME",
    "WritePlan",
    "decision_key",
    "label_value",
    "plan_writes",
    "refs_of",
    "render_slices",
    "slice_name",
]

#: The placement request's API group, version, kind and resource (our group, not k8s.io's).
PLACEMENT_GROUP = PROJECT_DOMAIN
PLACEMENT_API_VERSION = f"{PLACEMENT_GROUP}/v1alpha1"
PLACEMENT_KIND = "Placement"
PLACEMENT_PLURAL = "placements"
_LABEL_MAX = 63
_NAME_MAX = 253


def _digest(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def label_value(text: str) -> str:
    """``text`` if it fits a label value (63 characters), else a prefix plus a digest."""
    if len(text) <= _LABEL_MAX:
        return text
    return f"{text[: _LABEL_MAX - 11].rstrip('-.')}-{_digest(text, 10)}"


def decision_key(placement: str) -> str:
    """The ``decision-key`` of a placement's slices: its name (OCM does the same)."""
    return label_value(placement)


def slice_name(placement: str, index: int) -> str:
    """Deterministic slice name ``<placement>-<index>`` (KEP-5313 discovery by name)."""
    suffix = f"-{index}"
    if len(placement) + len(suffix) <= _NAME_MAX:
        return placement + suffix
    return f"{placement[: _NAME_MAX - len(suffix) - 11]}-{_digest(placement, 10)}{suffix}"


def _revision(choice: Choice) -> str:
    body = "\n".join(f"{ref}\t{choice.reasons.get(ref, '')}" for ref in choice.chosen)
    return _digest(body, 16)


def render_slices(
    placement: Mapping[str, Any],
    choice: Choice,
    *,
    scheduler_name: str = SCHEDULER_NAME,
    max_per_slice: int = PLACEMENT_DECISION_MAX_DECISIONS,
) -> list[dict[str, Any]]:
    """The PlacementDecision objects (v1alpha1) that publish ``choice``.

    Args:
        placement: The ``Placement`` object (name, namespace, uid; ``spec.placementKey``).
        choice: What :func:`~cluster_inventory.integrations.placement.choice.choose` returned.
        scheduler_name: ``schedulerName`` of the slices.
        max_per_slice: Decisions per slice (KEP-5313: at most 100).

    Returns:
        One object per slice, index order; at least one.

    Raises:
        ValueError: ``max_per_slice`` is outside 1..100.
    """
    if not 1 <= max_per_slice <= PLACEMENT_DECISION_MAX_DECISIONS:
        raise ValueError(f"max_per_slice must be 1..100, not {max_per_slice}")
    meta = objects.meta(placement)
    name, namespace = str(meta["name"]), str(meta["namespace"])
    spec = objects.spec(placement)
    key = decision_key(name)
    chunks = [
        choice.chosen[i : i + max_per_slice] for i in range(0, len(choice.chosen), max_per_slice)
    ] or [()]
    revision = _revision(choice)
    owner = {
        "apiVersion": PLACEMENT_API_VERSION,
        "kind": PLACEMENT_KIND,
        "name": name,
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": False,
    }
    out = []
    for index, chunk in enumerate(chunks):
        out.append(
            {
                "apiVersion": f"{GROUP}/{V1ALPHA1}",
                "kind": PLACEMENT_DECISION_KIND,
                "metadata": {
                    "name": slice_name(name, index),
                    "namespace": namespace,
                    "labels": {
                        LABEL_DECISION_KEY: key,
                        LABEL_DECISION_INDEX: str(index),
                        LABEL_PLACEMENT_KEY: label_value(str(spec.get("placementKey") or name)),
                        LABEL_DECISION_REVISION: revision,
                        LABEL_MANAGED_BY: FIELD_MANAGER_PLACEMENT,
                    },
                    "annotations": {ANNOTATION_DECISION_SLICES: str(len(chunks))},
                    "ownerReferences": [owner] if owner["uid"] else [],
                },
                "schedulerName": scheduler_name,
                "decisions": [
                    {
                        "clusterProfileRef": {"name": ref.name, "namespace": ref.namespace},
                        "reason": choice.reasons.get(ref, ""),
                    }
                    for ref in chunk
                ],
            }
        )
    return out


@dataclass(frozen=True, kw_only=True)
class WritePlan:
    """What to change on the hub so that the stored slices equal the rendered ones.

    Attributes:
        apply: Slices to write (new or different), index order.
        delete: Stored slices of this placement that are no longer needed (name, uid).
        conflicts: Names this placement needs that another scheduler's slice holds.
    """

    apply: tuple[dict[str, Any], ...]
    delete: tuple[tuple[str, str], ...]
    conflicts: tuple[str, ...]

    @property
    def empty(self) -> bool:
        """Nothing to write or delete."""
        return not self.apply and not self.delete


def _same(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    smeta, wmeta = objects.meta(stored), objects.meta(wanted)
    labels = smeta.get("labels") or {}
    annotations = smeta.get("annotations") or {}
    owners = smeta.get("ownerReferences") or []
    return (
        stored.get("schedulerName") == wanted["schedulerName"]
        and (stored.get("decisions") or []) == wanted["decisions"]
        and all(labels.get(k) == v for k, v in wmeta["labels"].items())
        and all(annotations.get(k) == v for k, v in wmeta["annotations"].items())
        and all(o in owners for o in wmeta["ownerReferences"])
    )


def plan_writes(
    wanted: Iterable[Mapping[str, Any]],
    stored: Iterable[Mapping[str, Any]],
    *,
    placement_uid: str,
    scheduler_name: str = SCHEDULER_NAME,
) -> WritePlan:
    """Compare rendered slices with the slices stored in the placement's namespace.

    Args:
        wanted: :func:`render_slices` output.
        stored: PlacementDecisions of the namespace (any writer); only those of
            ``scheduler_name`` owned by this placement (or named as its slices and
            unowned) are changed or deleted.
        placement_uid: The placement's uid (slices of an earlier placement of the same name
            are this placement's to replace).
        scheduler_name: This scheduler.

    Returns:
        The plan; :attr:`WritePlan.empty` when everything is in place.
    """
    wanted = list(wanted)
    by_name = {str(objects.meta(s).get("name")): s for s in stored}
    if not wanted:
        return WritePlan(apply=(), delete=(), conflicts=())
    key = objects.labels_of(wanted[0])[LABEL_DECISION_KEY]
    names = {objects.meta(w)["name"] for w in wanted}
    to_apply: list[dict[str, Any]] = []
    conflicts: list[str] = []
    for slice_ in wanted:
        name = objects.meta(slice_)["name"]
        current = by_name.get(name)
        if current is not None and current.get("schedulerName") != scheduler_name:
            conflicts.append(name)
        elif current is None or not _same(current, slice_):
            to_apply.append(dict(slice_))
    surplus = []
    for name, current in sorted(by_name.items()):
        meta = objects.meta(current)
        if name in names or current.get("schedulerName") != scheduler_name:
            continue
        ours = (meta.get("labels") or {}).get(LABEL_DECISION_KEY) == key and (
            not placement_uid
            or any(o.get("uid") == placement_uid for o in meta.get("ownerReferences") or ())
            or not meta.get("ownerReferences")
        )
        if ours:
            surplus.append((name, str(meta.get("uid") or "")))
    return WritePlan(apply=tuple(to_apply), delete=tuple(surplus), conflicts=tuple(conflicts))


def refs_of(slices: Iterable[Mapping[str, Any]]) -> list[ClusterRef]:
    """Every cluster the slices name, in slice then decision order."""
    out = []
    for s in slices:
        namespace = str(objects.meta(s).get("namespace") or "")
        for d in s.get("decisions") or ():
            ref = d.get("clusterProfileRef") or {}
            out.append(ClusterRef(str(ref.get("namespace") or namespace), str(ref.get("name"))))
    return out

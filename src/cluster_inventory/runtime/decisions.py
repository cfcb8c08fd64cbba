"""Reading a PlacementDecision as a consumer: all slices of one decision-key as one set.

KEP-5313 splits one scheduler decision into slices of at most 100 clusters that share the
label ``multicluster.x-k8s.io/decision-key``, ordered by ``decision-index``, and asks
consumers to group by ``multicluster.x-k8s.io/decision-revision`` so that they never act on
a mix of old and new slices while a scheduler is rewriting them. :func:`group_decisions`
does that over plain objects (pure); :func:`read_decisions` lists the slices from the hub.

A revision is *complete* when its slices have every index from 0 and, where the writer says
how many slices there are (``cluster-inventory.dev/decision-slices``), that many. If several
revisions are present the newest complete one wins; if none is complete the newest one is
returned with ``complete=False`` and a consumer should keep acting on what it had.
Slices without a revision label (other schedulers, such as OCM's mirror) form one group.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    ANNOTATION_DECISION_SLICES,
    LABEL_DECISION_INDEX,
    LABEL_DECISION_KEY,
    LABEL_DECISION_REVISION,
)

__all__ = ["DecisionSet", "group_decisions", "read_decisions"]


@dataclass(frozen=True, kw_only=True)
class DecisionSet:
    """One decision, read from all of its slices.

    Attributes:
        namespace: Where the slices live.
        decision_key: Their ``decision-key`` label.
        clusters: ``namespace/name`` of every chosen ClusterProfile (a reference without a
            namespace means the slice's), in slice index then decision order, each once.
            The same string is the cluster's name in a
            :class:`~cluster_inventory.runtime.FleetManager`.
        revision: The ``decision-revision`` read, or None when the slices have none.
        slices: Names of the slices read, index order.
        complete: Every slice of the revision was present.
        scheduler_names: ``schedulerName`` values seen on the slices, sorted.
    """

    namespace: str
    decision_key: str
    clusters: tuple[str, ...]
    revision: str | None
    slices: tuple[str, ...]
    complete: bool
    scheduler_names: tuple[str, ...] = ()

    @property
    def found(self) -> bool:
        """At least one slice exists (an empty decision is still a decision)."""
        return bool(self.slices)


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return objects.labels_of(obj)


def _index(obj: Mapping[str, Any]) -> int:
    try:
        return int(_labels(obj).get(LABEL_DECISION_INDEX, ""))
    except ValueError:
        return -1


def _rv(obj: Mapping[str, Any]) -> int:
    try:
        return int(objects.meta(obj).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _complete(group: list[Mapping[str, Any]]) -> bool:
    indices = sorted(_index(s) for s in group)
    if indices != list(range(len(group))):
        return False
    counts = {objects.annotations_of(s).get(ANNOTATION_DECISION_SLICES) for s in group} - {None}
    return not counts or counts == {str(len(group))}


def group_decisions(
    slices: Iterable[Mapping[str, Any]], decision_key: str, *, namespace: str | None = None
) -> DecisionSet:
    """Group PlacementDecision slices of ``decision_key`` into one consistent set. Pure.

    Args:
        slices: PlacementDecisions (decoded dicts), any order, any keys.
        decision_key: The ``multicluster.x-k8s.io/decision-key`` to read.
        namespace: Only slices in this namespace (None: the slices' own).

    Returns:
        The set; ``found`` is False when no slice has the key.
    """
    mine = [
        s
        for s in slices
        if _labels(s).get(LABEL_DECISION_KEY) == decision_key
        and (namespace is None or objects.meta(s).get("namespace") == namespace)
    ]
    if not mine:
        return DecisionSet(
            namespace=namespace or "",
            decision_key=decision_key,
            clusters=(),
            revision=None,
            slices=(),
            complete=False,
        )
    groups: dict[str | None, list[Mapping[str, Any]]] = {}
    for s in mine:
        groups.setdefault(_labels(s).get(LABEL_DECISION_REVISION), []).append(s)
    newest = sorted(groups, key=lambda r: (_complete(groups[r]), max(map(_rv, groups[r]))))
    revision = newest[-1]
    group = sorted(groups[revision], key=lambda s: (_index(s), str(objects.meta(s).get("name"))))
    clusters: dict[str, None] = {}
    for s in group:
        own = str(objects.meta(s).get("namespace") or "")
        for decision in s.get("decisions") or ():
            ref = decision.get("clusterProfileRef") or {}
            if ref.get("name"):
                clusters[f"{ref.get('namespace') or own}/{ref['name']}"] = None
    first = objects.meta(group[0])
    return DecisionSet(
        namespace=namespace or str(first.get("namespace") or ""),
        decision_key=decision_key,
        clusters=tuple(clusters),
        revision=revision,
        slices=tuple(str(objects.meta(s).get("name")) for s in group),
        complete=_complete(group),
        scheduler_names=tuple(sorted({str(s.get("schedulerName") or "") for s in group})),
    )


async def read_decisions(hub: kube.ApiClient, namespace: str, decision_key: str) -> DecisionSet:
    """List the slices of ``decision_key`` in ``namespace`` on the hub and group them.

    One LIST with a label selector; consumers only read PlacementDecisions (KEP-5313).

    Raises:
        KubeAPIError: The hub refused the LIST (e.g. 403, 404 when the CRD is missing).
        ServerUnavailableError: The hub could not be reached.
    """
    listed = await kube.list_objects(
        hub,
        kube.PLACEMENT_DECISIONS,
        namespace,
        label_selector=f"{LABEL_DECISION_KEY}={decision_key}",
    )
    return group_decisions(listed.get("items") or (), decision_key, namespace=namespace)

"""How PlacementDecisions print: the table rows of ``get placementdecisions``.

A pure function of decoded objects (dicts as the API server returns them) and a clock, like
:mod:`cluster_inventory.cli.profiles`, so the shape is unit-tested without a server. Only the
standard library and :mod:`cluster_inventory.cli._table` are imported: ``get`` stays fast.

The columns are what a reader of a decision asks first (KEP-5313 labels and fields): which
placement made it (``multicluster.x-k8s.io/placement-key``), which slice it is
(``decision-index``), which scheduler wrote it, and how many clusters it names; ``-o wide``
adds the ``decision-key`` that groups the slices and the clusters themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    LABEL_DECISION_INDEX,
    LABEL_DECISION_KEY,
    LABEL_PLACEMENT_KEY,
)
from cluster_inventory.cli._table import age

__all__ = ["DECISION_COLUMNS", "DECISION_WIDE_COLUMNS", "decision_clusters", "decision_row"]

#: Columns of ``get placementdecisions`` (AGE last of the default columns, as kubectl).
DECISION_COLUMNS = ("NAME", "PLACEMENT-KEY", "DECISION-INDEX", "SCHEDULER", "CLUSTERS", "AGE")
#: Columns ``-o wide`` adds after the default ones.
DECISION_WIDE_COLUMNS = ("DECISION-KEY", "CLUSTER-NAMES")


def decision_clusters(decision: Mapping[str, Any]) -> list[str]:
    """The clusters one PlacementDecision slice names, in its order.

    Args:
        decision: A decoded ``multicluster.x-k8s.io`` PlacementDecision (v1alpha1 or
            v1alpha2: both keep ``decisions[].clusterProfileRef``).

    Returns:
        Each ``clusterProfileRef`` as ``name`` when it lives in the slice's namespace (or
        names none), else ``namespace/name``; a reference without a name shows as
        ``<none>``.
    """
    own = objects.meta(decision).get("namespace") or ""
    names = []
    for entry in decision.get("decisions") or ():
        ref = (entry or {}).get("clusterProfileRef") or {}
        name = str(ref.get("name") or "<none>")
        ns = ref.get("namespace") or own
        names.append(name if ns == own else f"{ns}/{name}")
    return names


def decision_row(
    decision: Mapping[str, Any],
    *,
    wide: bool = False,
    namespace: bool = False,
    now: datetime | None = None,
) -> list[str]:
    """One table row of ``get placementdecisions``.

    Args:
        decision: A decoded PlacementDecision.
        wide: Add :data:`DECISION_WIDE_COLUMNS` (``-o wide``).
        namespace: Start with the object's namespace (``-A``).
        now: The clock for AGE (default: the current time).

    Returns:
        Cells in :data:`DECISION_COLUMNS` order (then the wide ones); an absent label or
        field is ``""``, which the table shows as ``<none>``.
    """
    meta = objects.meta(decision)
    labels = meta.get("labels") or {}
    clusters = decision_clusters(decision)
    row = [
        str(meta.get("name") or ""),
        str(labels.get(LABEL_PLACEMENT_KEY) or ""),
        str(labels.get(LABEL_DECISION_INDEX) or ""),
        str(decision.get("schedulerName") or ""),
        str(len(clusters)),
        age(meta.get("creationTimestamp"), now),
    ]
    if wide:
        row += [str(labels.get(LABEL_DECISION_KEY) or ""), ",".join(clusters)]
    if namespace:
        row.insert(0, str(meta.get("namespace") or ""))
    return row

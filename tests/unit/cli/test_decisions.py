"""The rows of ``get placementdecisions``: a pure function of the slice and a clock."""

from __future__ import annotations

from datetime import UTC, datetime

from cluster_inventory.cli.decisions import (
    DECISION_COLUMNS,
    DECISION_WIDE_COLUMNS,
    decision_clusters,
    decision_row,
)

NOW = datetime(2026, 11, 24, 12, 0, 0, tzinfo=UTC)
SLICE = {
    "metadata": {
        "name": "web-1",
        "namespace": "team-a",
        "creationTimestamp": "2026-11-24T11:55:00Z",
        "labels": {
            "multicluster.x-k8s.io/decision-key": "web",
            "multicluster.x-k8s.io/decision-index": "1",
            "multicluster.x-k8s.io/placement-key": "web-placement",
        },
    },
    "schedulerName": "cluster-inventory.dev/placement",
    "decisions": [
        {"clusterProfileRef": {"name": "a"}},
        {"clusterProfileRef": {"name": "b", "namespace": "team-a"}},
        {"clusterProfileRef": {"name": "c", "namespace": "team-b"}},
    ],
}


def test_a_row_holds_the_keys_the_scheduler_and_the_count() -> None:
    row = decision_row(SLICE, now=NOW)
    assert len(row) == len(DECISION_COLUMNS)
    assert row == ["web-1", "web-placement", "1", "cluster-inventory.dev/placement", "3", "5m"]


def test_wide_adds_the_decision_key_and_the_clusters_and_all_namespaces_the_namespace() -> None:
    row = decision_row(SLICE, wide=True, namespace=True, now=NOW)
    assert len(row) == 1 + len(DECISION_COLUMNS) + len(DECISION_WIDE_COLUMNS)
    assert row[0] == "team-a"
    assert row[-2:] == ["web", "a,b,team-b/c"]


def test_a_bare_slice_gives_empty_cells_not_an_error() -> None:
    bare = {"metadata": {"name": "x"}, "decisions": [{"clusterProfileRef": {}}]}
    assert decision_row(bare, wide=True, now=NOW) == [
        "x", "", "", "", "1", "<unknown>", "", "<none>",
    ]  # fmt: skip
    assert decision_clusters({"metadata": {}}) == []

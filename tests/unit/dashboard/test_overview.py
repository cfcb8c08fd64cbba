"""The dashboard's content as pure functions: members once, placements' reasons, filters."""

from __future__ import annotations

from typing import Any

from cluster_inventory.api.constants import ANNOTATION_PROFILE
from cluster_inventory.api.views import ProfileView
from cluster_inventory.dashboard import Query, build, select
from tests.support.data.dashboard import NOW, profile


def placement(ns: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name}, "spec": spec}


def test_a_member_in_two_inventories_is_one_row_and_red_if_either_profile_is() -> None:
    ov = build(
        [
            profile("team-a", "alpha", member="uid-1"),
            profile("team-b", "alpha", member="uid-1", healthy="False"),
            profile("team-a", "beta"),
        ],
        now=NOW,
    )
    # Sorted by name (alpha, beta), whatever their member ids.
    assert [r.key for r in ov.members] == ["uid-1", "team-a/beta"]
    assert [r.name for r in ov.members] == ["alpha", "beta"]
    shared = ov.members[0]
    assert shared.inventories == ("team-a", "team-b")
    assert shared.health == "False"
    assert [c.reason for c in shared.conditions] == ["APIServerUnreachable"]
    assert [(i.namespace, i.profiles, i.healthy, i.unhealthy) for i in ov.inventories] == [
        ("team-a", 2, 2, 0),
        ("team-b", 1, 0, 1),
    ]


def test_inventory_counts_versions_and_flags_a_failing_required_check() -> None:
    bad = profile("inv", "forged", manager="m")
    raw = dict(bad.raw)
    raw["metadata"] = {**raw["metadata"], "labels": {"x-k8s.io/cluster-manager": "other"}}
    ov = build(
        [
            ProfileView.of(raw),
            profile("inv", "b", version="v1.35.0"),
            profile("inv", "c", healthy=None),
        ],
        namespaces=["inv", "empty"],
        now=NOW,
    )
    inv = {i.namespace: i for i in ov.inventories}
    assert inv["inv"].versions == (("v1.36.3", 2), ("v1.35.0", 1))
    assert inv["inv"].required_failed
    assert inv["empty"].profiles == 0 and inv["empty"].required_failed  # no profile at all
    assert {r.key: r.health for r in ov.members}["inv/c"] == "Unknown"


def test_a_placement_shows_its_decision_and_why_every_other_cluster_was_left_out() -> None:
    views = [
        profile("inv", "eu1", properties={"region": "eu"}),
        profile("inv", "eu2", properties={"region": "eu"}, healthy="False"),
        profile("inv", "us1", properties={"region": "us"}),
        profile("inv", "eu3", properties={"region": "eu"}),
    ]
    slices = [
        {
            "metadata": {
                "namespace": "inv",
                "name": "web-decision-0",
                "labels": {
                    "multicluster.x-k8s.io/decision-key": "web",
                    "multicluster.x-k8s.io/decision-index": "0",
                },
            },
            "decisions": [{"clusterProfileRef": {"name": "eu1"}}],
        }
    ]
    ov = build(
        views,
        placements=[
            placement(
                "inv",
                "web",
                {
                    "propertySelector": {"matchProperties": {"region": "eu"}},
                    "numberOfClusters": 1,
                },
            ),
            placement("inv", "broken", {"numberOfClusters": "two"}),
        ],
        decisions=slices,
        now=NOW,
    )
    broken, web = ov.placements
    assert broken.error and "numberOfClusters" in broken.error
    assert web.chosen == ("inv/eu1",)
    assert dict(web.left_out) == {
        "inv/eu2": "NotHealthy",
        "inv/eu3": "NotChosen",
        "inv/us1": "PropertiesDoNotMatch",
    }
    assert web.request == "properties region=eu, 1 cluster(s)"


def test_delivery_is_read_from_the_syncs_annotations() -> None:
    ov = build(
        [profile("inv", "a")],
        argocd_secrets=[
            {"metadata": {"name": "cluster-inv-a", "annotations": {ANNOTATION_PROFILE: "inv/a"}}}
        ],
        multikueue_clusters=[
            {
                "metadata": {"name": "a", "annotations": {ANNOTATION_PROFILE: "inv/a"}},
                "status": {"conditions": [{"type": "Active", "status": "True"}]},
            }
        ],
        now=NOW,
    )
    assert ov.members[0].delivery.argocd == ("cluster-inv-a",)
    assert ov.members[0].delivery.multikueue == (("a", "True"),)


def test_filters_and_sorts_by_selector_property_and_health() -> None:
    ov = build(
        [
            profile("inv", "a", properties={"region": "eu"}, labels={"env": "prod"}),
            profile("inv", "b", properties={"region": "us"}, labels={"env": "dev"}),
            profile("inv", "c", healthy="False", labels={"env": "prod"}),
        ],
        now=NOW,
    )

    def keys(**params: str) -> list[str]:
        return [r.key for r in select(ov, Query.from_params(params)).rows]

    assert keys(labels="env=prod") == ["inv/a", "inv/c"]
    assert keys(properties="region in (eu,us)") == ["inv/a", "inv/b"]
    assert keys(health="False") == ["inv/c"]
    assert keys(q="US") == ["inv/b"]
    # Rows without the property sort last in either direction.
    assert keys(sort="property:region", order="desc") == ["inv/b", "inv/a", "inv/c"]
    assert keys(sort="property:region") == ["inv/a", "inv/b", "inv/c"]
    assert keys(sort="health") == ["inv/c", "inv/a", "inv/b"]
    assert keys(sort="no-such-column", order="desc") == ["inv/c", "inv/b", "inv/a"]
    bad = select(ov, Query.from_params({"labels": "env in ("}))
    assert bad.error.startswith("labels:") and len(bad.rows) == 3

"""Applying a CRD never moves the hub's storage version back, and says what changes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cluster_inventory import api
from cluster_inventory.kube._crd_plan import (
    CRDStorageError,
    changed_paths,
    plan_storage,
    storage_version,
    version_priority,
)

PROFILES = "clusterprofiles.multicluster.x-k8s.io"


def _ours() -> dict[str, Any]:
    return next(c for c in api.load_crds() if c["metadata"]["name"] == PROFILES)


def _stored_as(crd: dict[str, Any], version: str) -> dict[str, Any]:
    hub = copy.deepcopy(crd)
    for v in hub["spec"]["versions"]:
        v["storage"] = v["name"] == version
    return hub


def test_versions_order_as_kubernetes_orders_them() -> None:
    ordered = ["v2", "v1", "v11beta2", "v10beta3", "v3beta1", "v12alpha1", "v11alpha2", "foo1"]
    assert sorted(ordered, key=version_priority, reverse=True) == ordered
    assert version_priority("v1alpha2") > version_priority("v1alpha1")


def test_a_hub_storing_v1alpha2_keeps_it_and_says_so() -> None:
    ours = _ours()
    assert storage_version(ours) == "v1alpha1"  # as upstream's
    plan = plan_storage(ours, _stored_as(ours, "v1alpha2"))
    assert storage_version(plan.manifest) == "v1alpha2"
    assert plan.kept == "v1alpha2"
    assert "storage stays v1alpha2" in plan.notes()[0]
    assert storage_version(ours) == "v1alpha1"  # ours is not changed


def test_ours_is_applied_as_it_is_where_storage_agrees_or_there_is_no_crd() -> None:
    ours = _ours()
    assert plan_storage(ours, None).manifest == ours
    same = plan_storage(ours, _stored_as(ours, "v1alpha1"))
    assert same.manifest == ours
    assert same.notes() == []


def test_a_newer_storage_of_ours_moves_the_hub_forward_and_says_what_remains() -> None:
    newer = _stored_as(_ours(), "v1alpha2")
    plan = plan_storage(newer, _stored_as(newer, "v1alpha1"))
    assert storage_version(plan.manifest) == "v1alpha2"
    assert plan.moves == ("v1alpha1", "v1alpha2")
    assert "crds migrate --to v1alpha2" in plan.notes()[0]


def test_a_hub_storing_a_version_this_release_does_not_serve_is_not_applied() -> None:
    ours = _ours()
    hub = copy.deepcopy(ours)
    v1beta1 = {**copy.deepcopy(hub["spec"]["versions"][1]), "name": "v1beta1"}
    hub["spec"]["versions"].append(v1beta1)
    hub = _stored_as(hub, "v1beta1")
    with pytest.raises(
        CRDStorageError, match="the hub stores v1beta1, which this release does not"
    ):
        plan_storage(ours, hub)


def test_changed_paths_name_a_version_added_and_a_schema_changed() -> None:
    before = copy.deepcopy(_ours())
    before["spec"]["versions"] = before["spec"]["versions"][:1]
    after = copy.deepcopy(_ours())
    after["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x"] = 1
    after["metadata"]["annotations"]["new"] = "1"
    assert changed_paths(before, after) == [
        "metadata.annotations.new: added",
        "spec.versions[v1alpha1].schema: changed",
        "spec.versions[v1alpha2]: added",
    ]
    assert changed_paths(after, after) == []
    assert changed_paths(None, after) == []

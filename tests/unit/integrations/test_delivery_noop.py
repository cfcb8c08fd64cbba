"""apply_is_noop: when a server-side apply could change nothing, so it need not be sent."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cluster_inventory.integrations.delivery import apply_is_noop

MANAGER = "cluster-inventory-apply"
BODY: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "web", "namespace": "app", "labels": {"tier": "web"}},
    "data": {"a": "1", "b": "2"},
}


def stored(**changes: Any) -> dict[str, Any]:
    """BODY as the server stores it after an apply by MANAGER (plus what the server sets)."""
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "web",
            "namespace": "app",
            "uid": "u",
            "resourceVersion": "7",
            "labels": {"tier": "web", "added-by-someone": "x"},
            "managedFields": [
                {
                    "manager": MANAGER,
                    "operation": "Apply",
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:data": {"f:a": {}, "f:b": {}},
                        "f:metadata": {"f:labels": {"f:tier": {}}},
                    },
                },
                {
                    "manager": "kubectl-label",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {"f:added-by-someone": {}}}},
                },
            ],
        },
        "data": {"a": "1", "b": "2"},
    }
    for path, value in changes.items():
        *parents, last = path.split("__")
        target = obj
        for p in parents:
            target = target[p]
        if value is None:
            del target[last]
        else:
            target[last] = value
    return obj


def ours(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["metadata"]["managedFields"][0]


def test_the_stored_result_of_the_same_apply_is_a_noop() -> None:
    assert apply_is_noop(stored(), BODY, MANAGER)


def test_another_managers_fields_do_not_matter() -> None:
    obj = stored()
    obj["status"] = {"phase": "x"}
    assert apply_is_noop(obj, BODY, MANAGER)


@pytest.mark.parametrize(
    "obj",
    [
        stored(data={"a": "1", "b": "changed"}),  # drift of a value we own
        stored(data={"a": "1"}),  # a field we own was removed
        stored(metadata__labels={"added-by-someone": "x"}),  # our label was removed
    ],
    ids=["drift", "removed-field", "removed-label"],
)
def test_drift_on_the_member_is_applied(obj: dict[str, Any]) -> None:
    assert not apply_is_noop(obj, BODY, MANAGER)


def test_a_field_left_out_of_the_manifest_is_applied_so_that_it_is_removed() -> None:
    smaller = copy.deepcopy(BODY)
    del smaller["data"]["b"]
    assert not apply_is_noop(stored(), smaller, MANAGER)
    del smaller["metadata"]["labels"]
    assert not apply_is_noop(stored(), smaller, MANAGER)


def test_a_new_value_in_the_manifest_is_applied() -> None:
    bigger = copy.deepcopy(BODY)
    bigger["data"]["c"] = "3"
    assert not apply_is_noop(stored(), bigger, MANAGER)


def test_without_our_apply_entry_or_at_another_version_it_is_applied() -> None:
    assert not apply_is_noop(stored(), BODY, "someone-else")
    obj = stored()
    ours(obj)["operation"] = "Update"
    assert not apply_is_noop(obj, BODY, MANAGER)
    obj = stored()
    ours(obj)["apiVersion"] = "v1beta1"
    assert not apply_is_noop(obj, BODY, MANAGER)
    obj = stored()
    ours(obj)["subresource"] = "status"
    assert not apply_is_noop(obj, BODY, MANAGER)
    obj = stored()
    del obj["metadata"]["managedFields"]
    assert not apply_is_noop(obj, BODY, MANAGER)


def test_lists_must_match_element_by_element() -> None:
    body = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "r", "namespace": "app"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
    }
    fields = {"f:rules": {}}
    entry = {
        "manager": MANAGER,
        "operation": "Apply",
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    live = {**copy.deepcopy(body), "metadata": {**body["metadata"], "managedFields": [entry]}}
    assert apply_is_noop(live, body, MANAGER)
    live["rules"].append({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]})
    assert not apply_is_noop(live, body, MANAGER)
    live["rules"] = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]
    assert not apply_is_noop(live, body, MANAGER)


def test_a_bare_object_owns_nothing_and_needs_no_entry() -> None:
    bare = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "sa", "namespace": "a"},
    }
    live = {**bare, "metadata": {**bare["metadata"], "uid": "u", "resourceVersion": "3"}}
    assert apply_is_noop(live, bare, MANAGER)
    labelled = {**bare, "metadata": {**bare["metadata"], "labels": {"x": "y"}}}
    live["metadata"]["labels"] = {"x": "y"}  # set by someone else: applying takes ownership
    assert not apply_is_noop(live, labelled, MANAGER)

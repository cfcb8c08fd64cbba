"""The mirror loop's pure decision: is a stored object still what the render says?"""

from __future__ import annotations

from cluster_inventory.integrations.sync._ownership import fingerprint
from cluster_inventory.integrations.sync._ownership import matches as _matches

BODY = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {
        "name": "cluster-a",
        "labels": {"x": "1"},
        "annotations": {"cluster-inventory.dev/fingerprint": "f1"},
    },
    "data": {"server": "aHR0cHM6Ly9h"},
}


def stored(**changes: object) -> dict:
    obj = {
        "metadata": {
            "name": "cluster-a",
            "resourceVersion": "7",
            "labels": {"x": "1", "added-by-someone": "y"},
            "annotations": {"cluster-inventory.dev/fingerprint": "f1", "other": "z"},
        },
        "data": {"server": "aHR0cHM6Ly9h"},
        "type": "Opaque",
    }
    obj.update(changes)
    return obj


def test_an_unchanged_object_matches_whatever_other_managers_added() -> None:
    assert _matches(stored(), BODY)


def test_a_new_fingerprint_or_an_edit_by_hand_does_not_match() -> None:
    edited_meta = stored()
    edited_meta["metadata"]["annotations"]["cluster-inventory.dev/fingerprint"] = "f0"
    assert not _matches(edited_meta, BODY)
    assert not _matches(stored(data={"server": "dGFtcGVyZWQ="}), BODY)
    relabelled = stored()
    relabelled["metadata"]["labels"]["x"] = "2"
    assert not _matches(relabelled, BODY)


def test_fingerprint_ignores_key_order() -> None:
    assert fingerprint({"a": 1, "b": {"c": 2, "d": 3}}) == fingerprint(
        {"b": {"d": 3, "c": 2}, "a": 1}
    )
    assert fingerprint({"a": 1}) != fingerprint({"a": 2})


def test_strip_managed_fields_keeps_what_the_mirror_reads() -> None:
    from cluster_inventory.kube.informer import strip_managed_fields

    obj = {
        "metadata": {"name": "a", "resourceVersion": "3", "managedFields": [{"manager": "x"}]},
        "data": {"k": "v"},
    }
    assert strip_managed_fields(obj) == {
        "metadata": {"name": "a", "resourceVersion": "3"},
        "data": {"k": "v"},
    }

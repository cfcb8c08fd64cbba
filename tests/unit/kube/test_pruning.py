"""What a version's schema drops of an object: the None conversion's losses, named first."""

from __future__ import annotations

from typing import Any

from cluster_inventory import api
from cluster_inventory.kube._pruning import dropped_fields


def _schema(version: str) -> dict[str, Any]:
    crd = next(c for c in api.load_crds() if c["metadata"]["name"].startswith("clusterprofiles."))
    schema: dict[str, Any] = next(v for v in crd["spec"]["versions"] if v["name"] == version)[
        "schema"
    ]["openAPIV3Schema"]
    return schema


def _profile(status: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {"name": "east", "namespace": "inv", "uid": "u", "anything": "kept"},
        "spec": {"clusterManager": {"name": "m"}, "displayName": "East"},
        "status": status,
    }


def test_v1alpha2_drops_credential_providers_and_certificate_authority_paths() -> None:
    cluster = {
        "server": "https://east.example.com",
        "certificate-authority": "/etc/ca.pem",
        "extensions": [{"name": "client.authentication.k8s.io/exec", "extension": {"a": [1]}}],
    }
    profile = _profile(
        {
            "accessProviders": [{"name": "token", "cluster": cluster}],
            "credentialProviders": [{"name": "legacy", "cluster": {"server": "https://e"}}],
            "conditions": [],
        }
    )
    assert dropped_fields(profile, _schema("v1alpha2")) == [
        "status.accessProviders[0].cluster.certificate-authority",
        "status.credentialProviders",
    ]
    assert dropped_fields(profile, _schema("v1alpha1")) == []


def test_unknown_fields_are_dropped_in_either_version_and_metadata_is_kept() -> None:
    profile = _profile({"surprise": {"a": 1}})
    profile["spec"]["clusterManager"]["extra"] = "x"
    assert dropped_fields(profile, _schema("v1alpha1")) == [
        "spec.clusterManager.extra",
        "status.surprise",
    ]
    assert dropped_fields(profile, None) == ["spec", "status"]


def test_additional_properties_and_preserved_unknown_fields_keep_their_keys() -> None:
    schema = {
        "type": "object",
        "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "free": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {
                    "known": {"type": "object", "properties": {"a": {"type": "string"}}}
                },
            },
            "items": {"type": "array", "items": {"type": "object", "properties": {}}},
        },
    }
    obj = {
        "labels": {"k": "v"},
        "free": {"anything": {"goes": 1}, "known": {"a": "1", "b": "2"}},
        "items": [{"x": 1}],
    }
    assert dropped_fields(obj, schema) == ["free.known.b", "items[0].x"]

"""Our CRDs are schema-identical to the pinned upstream module's (descriptions aside).

The upstream module is fetched with ``go mod download`` into our Go module cache, so the
comparison runs against the real published files, not a copy of ours.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster_inventory import api
from cluster_inventory.testing.versions import CLUSTER_INVENTORY_API_VERSION
from cluster_inventory_workshop.upstream_crds import go_module_dir

UPSTREAM = "sigs.k8s.io/cluster-inventory-api"


@pytest.fixture(scope="module")
def upstream_dir() -> Path:
    # fails with instructions when Go is missing, with go's answer when the download fails
    return go_module_dir(UPSTREAM, CLUSTER_INVENTORY_API_VERSION) / "config" / "crd" / "bases"


def strip_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: strip_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [strip_descriptions(v) for v in node]
    return node


def ours(name: str) -> dict[str, Any]:
    (crd,) = [c for c in api.load_crds() if c["metadata"]["name"] == name]
    return crd


@pytest.mark.parametrize("name", [api.CLUSTER_PROFILE_CRD, api.PLACEMENT_DECISION_CRD])
def test_crd_matches_upstream(upstream_dir: Path, name: str) -> None:
    theirs = yaml.safe_load(
        (upstream_dir / f"multicluster.x-k8s.io_{name.split('.')[0]}.yaml").read_text()
    )
    mine = ours(name)
    assert mine["metadata"]["name"] == theirs["metadata"]["name"]
    assert mine["spec"]["group"] == theirs["spec"]["group"]
    # Deliberate: the multicluster category (upstream's v1alpha2 markers have it).
    assert mine["spec"]["names"] == {**theirs["spec"]["names"], "categories": ["multicluster"]}
    assert mine["spec"]["scope"] == theirs["spec"]["scope"]
    # The release serves v1alpha1 only; we add v1alpha2 (served, not stored) after it.
    assert [v["name"] for v in theirs["spec"]["versions"]] == ["v1alpha1"]
    assert [v["name"] for v in mine["spec"]["versions"]] == ["v1alpha1", "v1alpha2"]
    my_v1, my_v2 = mine["spec"]["versions"]
    (their_v1,) = theirs["spec"]["versions"]
    for key in ("served", "storage", "subresources"):
        assert my_v1.get(key) == their_v1.get(key), key
    assert strip_descriptions(my_v1["schema"]) == strip_descriptions(their_v1["schema"])
    # Deliberate: v1alpha1 shows v1alpha2's printer columns (upstream's v1alpha1 has none).
    assert their_v1.get("additionalPrinterColumns") is None
    assert my_v1["additionalPrinterColumns"] == my_v2["additionalPrinterColumns"]
    assert (my_v2["served"], my_v2["storage"]) == (True, False)
    assert my_v2.get("subresources") == my_v1.get("subresources")


def _validations(node: Any) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    if isinstance(node, dict):
        for rule in node.get("x-kubernetes-validations") or ():
            found.append((rule["rule"], rule.get("message", "")))
        for value in node.values():
            found += _validations(value)
    elif isinstance(node, list):
        for value in node:
            found += _validations(value)
    return found


def test_cluster_profile_v1alpha2_has_upstreams_rules_and_columns() -> None:
    v2 = ours(api.CLUSTER_PROFILE_CRD)["spec"]["versions"][1]
    schema = v2["schema"]["openAPIV3Schema"]
    status = schema["properties"]["status"]["properties"]
    assert "credentialProviders" not in status
    providers = status["accessProviders"]
    assert providers["maxItems"] == 64
    cluster = providers["items"]["properties"]["cluster"]
    assert "certificate-authority" not in cluster["properties"]
    assert cluster["properties"]["extensions"]["x-kubernetes-list-map-keys"] == ["name"]
    messages = {message for _, message in _validations(schema)}
    assert {
        "ClusterManager is immutable",
        "must be a valid Kubernetes label value",
        "server must be a valid absolute URL with a host",
        "proxy-url must be a valid URL with scheme http, https, or socks5 and a host",
    } <= messages
    assert [c["name"] for c in v2["additionalPrinterColumns"]] == [
        "Display Name",
        "Manager",
        "Version",
        "Healthy",
        "Age",
    ]


def test_placement_decision_v1alpha2_validates_references() -> None:
    v1, v2 = ours(api.PLACEMENT_DECISION_CRD)["spec"]["versions"]
    decisions = v2["schema"]["openAPIV3Schema"]["properties"]["decisions"]
    assert "minItems" not in decisions and decisions["maxItems"] == 100
    ref = decisions["items"]["properties"]["clusterProfileRef"]["properties"]
    assert ref["name"]["maxLength"] == 253 and ref["namespace"]["maxLength"] == 63
    assert [c["name"] for c in v2["additionalPrinterColumns"]] == ["Scheduler", "Age"]
    assert (v1["storage"], v2["storage"], v2["served"]) == (True, False, True)


def test_cluster_property_crd_follows_kep_2149() -> None:
    crd = ours(api.CLUSTER_PROPERTY_CRD)
    assert crd["spec"]["scope"] == "Cluster"
    assert crd["spec"]["names"]["categories"] == ["multicluster"]
    versions = {v["name"]: v for v in crd["spec"]["versions"]}
    assert [(n, v["served"], v["storage"]) for n, v in versions.items()] == [
        ("v1alpha1", True, False),
        ("v1beta1", True, True),
    ]
    for version in versions.values():
        value = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["value"]
        assert value["minLength"] == 1
        assert "maxLength" not in value  # upstream's misspelt marker leaves it out
        assert [c["name"] for c in version["additionalPrinterColumns"]] == ["value", "age"]
    for version in versions.values():
        assert version["subresources"] == {"status": {}}
        assert "required" not in version["schema"]["openAPIV3Schema"]
    assert crd["metadata"]["annotations"]["api-approved.kubernetes.io"]

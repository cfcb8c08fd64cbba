"""Our CRDs are schema-identical to the pinned upstream module's (descriptions aside).

The upstream module is fetched with ``go mod download`` into our Go module cache, so the
comparison runs against the real published files, not a copy of ours.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster_inventory import api
from cluster_inventory.testing._gobuild import go_env
from cluster_inventory.testing.versions import CLUSTER_INVENTORY_API_VERSION

UPSTREAM = "sigs.k8s.io/cluster-inventory-api"


@pytest.fixture(scope="module")
def upstream_dir() -> Path:
    env = go_env()  # fails with instructions when Go is missing
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{UPSTREAM}@{CLUSTER_INVENTORY_API_VERSION}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    info = json.loads(out.stdout or "{}")
    assert out.returncode == 0 and "Dir" in info, (
        f"go mod download failed: {out.stdout}{out.stderr}"
    )
    return Path(info["Dir"]) / "config" / "crd" / "bases"


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
    assert mine["spec"]["names"] == theirs["spec"]["names"]
    assert mine["spec"]["scope"] == theirs["spec"]["scope"]
    assert [v["name"] for v in mine["spec"]["versions"]] == [
        v["name"] for v in theirs["spec"]["versions"]
    ]
    for my_version, their_version in zip(
        mine["spec"]["versions"], theirs["spec"]["versions"], strict=True
    ):
        for key in ("served", "storage", "subresources", "additionalPrinterColumns"):
            assert my_version.get(key) == their_version.get(key), key
        assert strip_descriptions(my_version["schema"]) == strip_descriptions(
            their_version["schema"]
        )


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

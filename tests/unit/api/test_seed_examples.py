"""The ClusterProfile examples published by KEP-4322 and OCM parse, and write back exactly."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from cluster_inventory import api

DATA = Path(__file__).parent / "data"


def load(name: str) -> dict:
    return yaml.safe_load((DATA / name).read_text())


@pytest.mark.parametrize("name", ["ocm_cluster1.yaml", "ocm_access_provider.yaml"])
def test_published_profiles_round_trip_exactly(name: str) -> None:
    data = load(name)
    profile = api.ClusterProfile.from_dict(copy.deepcopy(data))
    assert profile.to_dict() == data


def test_kep_example_parses_with_yaml_booleans_as_condition_status() -> None:
    data = load("kep4322_example.yaml")
    profile = api.ClusterProfile.from_dict(data)
    assert profile.spec.cluster_manager.name == "some-cluster-manager"
    assert profile.metadata.labels == {api.LABEL_CLUSTER_MANAGER: "some-cluster-manager"}
    assert profile.status is not None
    assert profile.status.version is not None
    assert profile.status.version.kubernetes == "1.28.0"
    assert [p.name for p in profile.status.properties or []] == ["clusterset.k8s.io", "location"]
    assert profile.is_healthy()
    joined = profile.status.condition(api.CONDITION_JOINED)
    assert joined is not None
    assert joined.status == "True"
    assert joined.reason is None
    # Written back, the YAML booleans become the strings the API server wants.
    expected = copy.deepcopy(data)
    for cond in expected["status"]["conditions"]:
        cond["status"] = "True"
    assert profile.to_dict() == expected


def test_ocm_profile_details() -> None:
    profile = api.ClusterProfile.from_dict(load("ocm_cluster1.yaml"))
    assert profile.metadata.creation_timestamp is not None
    assert profile.metadata.creation_timestamp.year == 2026
    assert profile.status is not None
    (provider,) = profile.status.access_providers or []
    assert provider.name == "open-cluster-management"
    assert provider.cluster is not None
    assert provider.cluster.exec_config() == {"clusterName": "cluster1"}
    # A placeholder is kept as text; decoding it says which field is wrong.
    assert provider.cluster.certificate_authority_data == "<base64 CA bundle>"
    with pytest.raises(ValueError, match="certificate-authority-data is not valid base64"):
        provider.cluster.ca_pem()
    assert profile.status.properties is not None
    assert profile.status.properties[0].value == "111122223333"

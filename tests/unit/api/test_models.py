"""Model behaviour: construction, validation messages, deprecated providers, v1alpha2 rules."""

from __future__ import annotations

import base64
import datetime as dt

import pytest
from pydantic import ValidationError

from cluster_inventory import api
from cluster_inventory.api import v1alpha2


def minimal(**status: object) -> dict:
    data: dict = {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {"name": "c1", "namespace": "inv"},
        "spec": {"clusterManager": {"name": "m"}},
    }
    if status:
        data["status"] = status
    return data


def test_constructed_profile_writes_only_what_was_set() -> None:
    profile = api.ClusterProfile(
        metadata=api.ObjectMeta(name="c1", namespace="inv"),
        spec=api.ClusterProfileSpec(cluster_manager=api.ClusterManager(name="m")),
    )
    assert profile.to_dict() == minimal()


def test_missing_cluster_manager_names_the_field() -> None:
    data = minimal()
    del data["spec"]["clusterManager"]
    with pytest.raises(ValidationError) as info:
        api.ClusterProfile.from_dict(data)
    assert info.value.errors()[0]["loc"] == ("spec", "clusterManager")


def test_condition_status_outside_the_enum_is_refused() -> None:
    data = minimal(
        conditions=[
            {
                "type": "Joined",
                "status": "Maybe",
                "reason": "R",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    )
    with pytest.raises(ValidationError) as info:
        api.ClusterProfile.from_dict(data)
    assert info.value.errors()[0]["loc"] == ("status", "conditions", 0, "status")


def test_property_value_longer_than_1024_is_refused() -> None:
    data = minimal(properties=[{"name": "long.example.com", "value": "x" * 1025}])
    with pytest.raises(ValidationError) as info:
        api.ClusterProfile.from_dict(data)
    assert info.value.errors()[0]["loc"] == ("status", "properties", 0, "value")
    ok = minimal(properties=[{"name": "long.example.com", "value": "x" * 1024}])
    assert api.ClusterProfile.from_dict(ok).to_dict() == ok


def test_unknown_fields_survive_a_round_trip() -> None:
    data = minimal(futureField={"a": [1, None]})
    data["spec"]["somethingNew"] = "kept"
    assert api.ClusterProfile.from_dict(data).to_dict() == data


def test_times_are_written_in_kubernetes_format() -> None:
    prop = api.Property(
        name="p",
        value="v",
        last_observed_time=dt.datetime(2026, 11, 23, 5, 0, 1, 999, tzinfo=dt.UTC),
    )
    assert prop.to_dict()["lastObservedTime"] == "2026-11-23T05:00:01Z"
    local = dt.timezone(dt.timedelta(hours=2))
    prop = api.Property(
        name="p", value="v", last_observed_time=dt.datetime(2026, 11, 23, 7, 0, 1, tzinfo=local)
    )
    assert prop.to_dict()["lastObservedTime"] == "2026-11-23T05:00:01Z"


def test_access_providers_win_over_deprecated_credential_providers() -> None:
    status = api.ClusterProfileStatus.from_dict(
        {
            "credentialProviders": [
                {"name": "secretreader", "cluster": {"server": "https://old:6443"}},
                {"name": "google", "cluster": {"server": "https://g:6443"}},
            ],
            "accessProviders": [
                {"name": "secretreader", "cluster": {"server": "https://new:6443"}}
            ],
        }
    )
    merged = {p.name: p.cluster.server for p in status.merged_access_providers() if p.cluster}
    assert merged == {"secretreader": "https://new:6443", "google": "https://g:6443"}


def test_ca_data_decodes_to_pem() -> None:
    pem = b"-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----\n"
    cluster = api.Cluster(
        server="https://h:1", certificate_authority_data=base64.b64encode(pem).decode()
    )
    assert cluster.ca_pem() == pem
    assert cluster.to_dict()["certificate-authority-data"] == base64.b64encode(pem).decode()


def test_placement_decision_holds_at_most_100_clusters() -> None:
    refs = [{"clusterProfileRef": {"name": f"c{i}"}} for i in range(101)]
    with pytest.raises(ValidationError) as info:
        api.PlacementDecision.from_dict({"metadata": {"name": "d"}, "decisions": refs})
    assert info.value.errors()[0]["loc"] == ("decisions",)
    decision = api.PlacementDecision.from_dict({"metadata": {"name": "d"}, "decisions": refs[:100]})
    assert decision.to_dict()["kind"] == "PlacementDecision"


def test_cluster_property_versions() -> None:
    prop = api.ClusterProperty.from_dict(
        {
            "apiVersion": "about.k8s.io/v1alpha1",
            "kind": "ClusterProperty",
            "metadata": {"name": "clusterset.k8s.io"},
            "spec": {"value": "prod"},
        }
    )
    assert prop.name == api.PROPERTY_CLUSTER_SET
    assert api.ClusterProperty(
        metadata=api.ObjectMeta(name="x"), spec=api.ClusterPropertySpec(value="y")
    ).to_dict() == {
        "apiVersion": "about.k8s.io/v1beta1",
        "kind": "ClusterProperty",
        "metadata": {"name": "x"},
        "spec": {"value": "y"},
    }
    with pytest.raises(ValidationError):
        api.ClusterProperty.from_dict({"metadata": {"name": "x"}, "spec": {"value": ""}})
    with pytest.raises(ValidationError):
        api.ClusterProperty.from_dict({"apiVersion": "about.k8s.io/v1", "spec": {"value": "v"}})


@pytest.mark.parametrize(
    ("cluster", "message"),
    [
        ({"server": "not-a-url"}, "server must be a valid absolute URL with a host"),
        ({"server": "https://h:1", "proxy-url": "ftp://p:1"}, "proxy-url must use one of"),
        (
            {
                "server": "https://h:1",
                "extensions": [{"name": "a", "extension": {}}, {"name": "a", "extension": {}}],
            },
            "duplicate extension names: a",
        ),
        ({"server": "https://h:1", "certificate-authority": "/ca.crt"}, None),
    ],
)
def test_v1alpha2_cluster_rules(cluster: dict, message: str | None) -> None:
    if message is None:
        # v1alpha2 drops certificate-authority; an unknown key is kept, not validated.
        assert v1alpha2.Cluster.from_dict(cluster).to_dict() == cluster
        return
    with pytest.raises(ValidationError, match=message):
        v1alpha2.Cluster.from_dict(cluster)


def test_v1alpha2_requires_cluster_and_a_label_value_manager() -> None:
    with pytest.raises(ValidationError) as info:
        v1alpha2.AccessProvider.from_dict({"name": "secretreader"})
    assert info.value.errors()[0]["loc"] == ("cluster",)
    with pytest.raises(ValidationError, match="must be a valid Kubernetes label value"):
        v1alpha2.ClusterManager(name="not a label!")
    profile = v1alpha2.ClusterProfile.from_dict(
        {
            "apiVersion": "multicluster.x-k8s.io/v1alpha2",
            "kind": "ClusterProfile",
            "metadata": {"name": "c"},
            "spec": {"clusterManager": {"name": "m"}},
            "status": {
                "accessProviders": [
                    {"name": "secretreader", "cluster": {"server": "https://h:6443"}}
                ]
            },
        }
    )
    assert profile.status is not None
    assert not profile.is_healthy()

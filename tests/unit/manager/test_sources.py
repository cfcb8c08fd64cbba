"""Registration sources: Cluster API parsing, the static file, several sources at once."""

from __future__ import annotations

import base64
import datetime as dt
from pathlib import Path

import pytest
import yaml

from cluster_inventory.api.constants import ANNOTATION_CLUSTERSETS, LABEL_CAPI_CLUSTERSET
from cluster_inventory.kube import ClusterConnection
from cluster_inventory.manager import ManagerConfig, Registration, RegistrationError
from cluster_inventory.manager.rules.status import (
    ConditionState,
    Observation,
    build_status,
    status_matches,
)
from cluster_inventory.manager.sources.capi import (
    PROPERTY_CAPI_VERSION,
    cluster_registration,
    parse_capi_kubeconfig,
    strip_unused_data,
)
from cluster_inventory.manager.sources.combined import CombinedSource
from cluster_inventory.manager.sources.file import parse_file_registrations

KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "c", "cluster": {"server": "https://10.0.0.1:6443"}}],
    "users": [{"name": "u", "user": {"token": "t0ken"}}],
    "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    "current-context": "c",
}


def cluster(name="wl", labels=None, annotations=None, version="v1.36.3"):
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Cluster",
        "metadata": {
            "name": name,
            "namespace": "capi",
            "uid": "u-1",
            "labels": labels or {},
            "annotations": annotations or {},
        },
        "spec": {"topology": {"version": version}} if version else {},
    }


def test_cluster_sets_from_annotation_then_label_then_default():
    conn = ClusterConnection(server="https://x")
    by_label = cluster(labels={LABEL_CAPI_CLUSTERSET: "prod"})
    assert cluster_registration(by_label, conn).clustersets == ("prod",)
    both = cluster(
        labels={LABEL_CAPI_CLUSTERSET: "prod"}, annotations={ANNOTATION_CLUSTERSETS: "a,b"}
    )
    assert cluster_registration(both, conn).clustersets == ("a", "b")
    assert cluster_registration(cluster(), conn) is None  # names no set: not a member
    fixed = cluster_registration(cluster(), conn, default_clustersets=("all",))
    assert fixed.clustersets == ("all",)
    assert fixed.properties == ((PROPERTY_CAPI_VERSION, "v1.36.3"),)
    assert fixed.regarding == {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Cluster",
        "name": "wl",
        "namespace": "capi",
        "uid": "u-1",
    }
    custom = cluster(labels={"example.com/set": "edge"})
    assert cluster_registration(custom, conn, clusterset_label="example.com/set").clustersets == (
        "edge",
    )


def test_not_ready_cluster_gets_a_placeholder_that_is_never_dialled():
    reg = cluster_registration(
        cluster(labels={LABEL_CAPI_CLUSTERSET: "prod"}), None, not_ready=("Why", "because")
    )
    assert reg.not_ready == ("Why", "because")
    assert reg.connection.server.endswith(".invalid")


def test_bad_cluster_set_label_names_the_field():
    with pytest.raises(RegistrationError) as err:
        cluster_registration(cluster(labels={LABEL_CAPI_CLUSTERSET: "Not_OK"}), None)
    assert err.value.source == "Cluster capi/wl"
    assert err.value.field == f"metadata.labels[{LABEL_CAPI_CLUSTERSET}]"


def secret(value: str | None, name="wl-kubeconfig"):
    data = {} if value is None else {"value": base64.b64encode(value.encode()).decode()}
    return {"metadata": {"name": name, "namespace": "capi"}, "data": data}


def test_capi_kubeconfig_secret_parses_and_errors_name_the_key():
    conn = parse_capi_kubeconfig(secret(yaml.safe_dump(KUBECONFIG)))
    assert conn.server == "https://10.0.0.1:6443"
    for bad, words in ((None, "is missing"), ("clusters: [oops", "not a base64-encoded")):
        with pytest.raises(RegistrationError) as err:
            parse_capi_kubeconfig(secret(bad))
        assert err.value.field == "data.value"
        assert words in err.value.problem
        assert "t0ken" not in str(err.value)


def test_only_kubeconfig_secrets_keep_their_data_in_the_cache():
    ca = secret("PEM", name="wl-ca")
    assert "data" not in strip_unused_data(ca)
    kubeconfig = secret("x")
    assert strip_unused_data(kubeconfig) is kubeconfig


def test_file_registrations(tmp_path: Path):
    (tmp_path / "kc.yaml").write_text(yaml.safe_dump(KUBECONFIG))
    doc = {
        "clusters": [
            {"name": "one", "kubeconfig": "kc.yaml", "clustersets": ["prod", "eu"]},
            {"name": "two", "kubeconfig": "kc.yaml", "clustersets": "dev", "displayName": "Two"},
            {"name": "Bad_Name", "kubeconfig": "kc.yaml", "clustersets": "dev"},
            {"name": "three", "kubeconfig": "missing.yaml", "clustersets": "dev"},
        ]
    }
    good, bad = parse_file_registrations(doc, tmp_path / "clusters.yaml")
    assert sorted(good) == ["one", "two"]
    assert good["one"].clustersets == ("prod", "eu")
    assert good["two"].display_name == "Two"
    assert [e.field for e in bad] == ["clusters[2].name", "clusters[3].kubeconfig"]
    with pytest.raises(RegistrationError):
        parse_file_registrations({"clusters": "nope"}, tmp_path / "x.yaml")


class StaticSource:
    def __init__(self, regs, invalid=()):
        self.regs, self.invalid = regs, list(invalid)

    def snapshot(self):
        return dict(self.regs), list(self.invalid)


def reg(name, source):
    return Registration(
        name=name,
        clustersets=("prod",),
        connection=ClusterConnection(server=f"https://{source}"),
        display_name=name,
        source=source,
        regarding={"apiVersion": "v1", "kind": "Secret", "name": name, "namespace": "ns"},
    )


def test_first_source_wins_a_name_and_the_other_is_reported():
    first = StaticSource({"a": reg("a", "Secret ns/a"), "b": reg("b", "Secret ns/b")})
    second = StaticSource({"a": reg("a", "Cluster capi/a"), "c": reg("c", "Cluster capi/c")})
    good, bad = CombinedSource([first, second]).snapshot()
    assert {n: r.source for n, r in good.items()} == {
        "a": "Secret ns/a",
        "b": "Secret ns/b",
        "c": "Cluster capi/c",
    }
    ((obj, error),) = bad
    assert error.source == "Cluster capi/a"
    assert "already registered by Secret ns/a" in error.problem
    assert obj["metadata"]["name"] == "a"


def test_config_checks_sources():
    assert ManagerConfig(sources=("secrets", "capi", "file:/x.yaml")).sources[2] == "file:/x.yaml"
    for sources, words in (
        ((), "at least one"),
        (("bogus",), "unknown"),
        (("capi", "capi"), "twice"),
    ):
        with pytest.raises(ValueError, match=words):
            ManagerConfig(sources=sources)


NOW = dt.datetime(2026, 11, 24, tzinfo=dt.UTC)


def test_source_properties_are_published_stably_and_a_member_property_wins():
    down = ConditionState("False", "ControlPlaneNotInitialized", "not yet")
    obs = Observation(healthy=down, joined=down, properties=None, properties_error="no member")
    first = build_status(obs, None, None, NOW, source_properties=[(PROPERTY_CAPI_VERSION, "v1")])
    assert "accessProviders" not in first
    assert first["properties"] == [
        {"name": PROPERTY_CAPI_VERSION, "value": "v1", "lastObservedTime": "2026-11-24T00:00:00Z"}
    ]
    later = NOW + dt.timedelta(minutes=5)
    again = build_status(obs, None, first, later, source_properties=[(PROPERTY_CAPI_VERSION, "v1")])
    assert status_matches(again, first)  # unchanged source: no write
    bumped = build_status(
        obs, None, first, later, source_properties=[(PROPERTY_CAPI_VERSION, "v2")]
    )
    assert bumped["properties"][0]["value"] == "v2"
    # A profile that had an access provider loses it while its member must not be contacted.
    assert not status_matches(first, {**first, "accessProviders": [{"name": "x"}]})


def test_invalid_registrations_hold_their_members_profiles():
    from cluster_inventory.manager.rules.inventory import held_members
    from cluster_inventory.manager.rules.registration import parse_registration_secret

    broken = {
        "metadata": {"name": "alpha", "namespace": "ns", "annotations": {}},
        "data": {},
    }
    with pytest.raises(RegistrationError) as caught:
        parse_registration_secret(broken)
    assert caught.value.member == "alpha"
    nameless = RegistrationError("file f", "clusters[0].name", "must be a DNS-1123 label")
    assert held_members({}, [caught.value]) == frozenset({"alpha"})
    # Registered validly elsewhere (say by another source): nothing to hold.
    assert held_members({"alpha": object()}, [caught.value]) == frozenset()  # type: ignore[dict-item]
    assert held_members({}, [caught.value, nameless]) is None
    assert held_members({}, []) == frozenset()


def test_manager_leases_are_per_manager_name():
    from cluster_inventory.manager.runner import LEASE_NAME, lease_name

    assert lease_name("cluster-inventory") == LEASE_NAME
    assert lease_name("team-x") == f"{LEASE_NAME}-team-x"

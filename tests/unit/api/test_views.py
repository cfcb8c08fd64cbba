"""A profile decoded once: what the view reads, and that no stored shape makes it raise."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster_inventory.api import v1alpha1
from cluster_inventory.api.views import EventView, ProfileView, format_time, parse_time
from tests.support.data.strategies import cluster_profiles

PROFILE: dict[str, Any] = {
    "metadata": {
        "name": "c1",
        "namespace": "team-a",
        "uid": "u-1",
        "resourceVersion": "7",
        "creationTimestamp": "2026-11-25T10:00:00Z",
        "labels": {
            "multicluster.x-k8s.io/inventory-member-id": "m-1",
            "x-k8s.io/cluster-manager": "mgr",
            "odd": 3,
        },
    },
    "spec": {"displayName": "C1", "clusterManager": {"name": "mgr"}},
    "status": {
        "conditions": [
            {
                "type": "ControlPlaneHealthy",
                "status": "True",
                "reason": "APIServerReady",
                "message": "ok",
                "lastTransitionTime": "2026-11-25T10:01:02Z",
                "observedGeneration": 2,
            },
            {"type": "ControlPlaneHealthy", "status": "False"},
            {"type": "Joined", "status": "False", "lastTransitionTime": "yesterday"},
        ],
        "version": {"kubernetes": "v1.36.3"},
        "properties": [
            {"name": "region", "value": "eu", "lastObservedTime": "2026-11-25T10:02:00Z"},
            {"name": "region", "value": "us"},
        ],
        "credentialProviders": [{"name": "old"}, {"name": "shared", "cluster": {"server": "x"}}],
        "accessProviders": [{"name": "shared", "cluster": {"server": "y"}}, {"name": "new"}],
    },
}


def test_every_field_is_read_once_in_one_merge_order() -> None:
    view = ProfileView.of(PROFILE)
    assert (view.key, view.uid, view.resource_version) == ("team-a/c1", "u-1", "7")
    assert view.member_id == "m-1" and view.cluster_manager == view.manager_label == "mgr"
    assert view.labels == {
        "multicluster.x-k8s.io/inventory-member-id": "m-1",
        "x-k8s.io/cluster-manager": "mgr",
    }
    assert view.display_name == "C1" and view.version == "v1.36.3"
    assert view.created == dt.datetime(2026, 11, 25, 10, tzinfo=dt.UTC)
    assert view.healthy and not view.joined
    healthy = view.condition("ControlPlaneHealthy")
    assert healthy is not None and healthy.reason == "APIServerReady"
    assert healthy.last_transition == dt.datetime(2026, 11, 25, 10, 1, 2, tzinfo=dt.UTC)
    assert healthy.observed_generation == 2
    joined = view.condition("Joined")
    assert joined is not None and joined.last_transition is None
    assert view.condition_status("Absent") == ""
    assert view.properties == {"region": "eu"}
    assert view.properties_observed == {"region": dt.datetime(2026, 11, 25, 10, 2, tzinfo=dt.UTC)}
    # pkg/access: both lists count, accessProviders wins a name; legacy entries come first.
    assert view.access_provider_names == ["old", "shared", "new"]
    assert view.access_provider("shared") == {"name": "shared", "cluster": {"server": "y"}}
    assert view.deprecated_providers == {"old"}
    # The typed model (which refuses the malformed parts) merges in the same order.
    valid = {**PROFILE, "metadata": {"name": "c1"}, "status": {
        k: v for k, v in PROFILE["status"].items() if k != "conditions"
    }}  # fmt: skip
    typed = v1alpha1.ClusterProfile.from_dict(valid).status
    assert typed is not None
    assert [p.name for p in typed.merged_access_providers()] == view.access_provider_names


def test_annotations_and_observed_times_keep_only_what_is_well_formed() -> None:
    doc = {
        "metadata": {"annotations": {"note": "hi", "count": 2}},
        "status": {"properties": [{"name": "zone", "value": "a", "lastObservedTime": "later"}]},
    }
    view = ProfileView.of(doc)
    assert view.annotations == {"note": "hi"}
    assert view.properties == {"zone": "a"} and view.properties_observed == {}
    assert ProfileView.of(PROFILE).annotations == {}


def test_times_format_back_as_the_api_server_writes_them() -> None:
    text = "2026-11-25T13:00:00Z"
    parsed = parse_time(text)
    assert parsed is not None and format_time(parsed) == text
    assert format_time(
        dt.datetime(2026, 11, 25, 14, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    ) == ("2026-11-25T13:00:00Z")


def test_times_parse_as_the_api_server_writes_them() -> None:
    assert parse_time("2026-11-25T13:00:00.5Z") == dt.datetime(
        2026, 11, 25, 13, 0, 0, 500000, tzinfo=dt.UTC
    )
    assert parse_time("2026-11-25T14:00:00+01:00") == dt.datetime(2026, 11, 25, 13, tzinfo=dt.UTC)
    for bad in (None, "", "2026-11-25T13:00:00", "soon", 5):
        assert parse_time(bad) is None


hostile = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.floats(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)
fields = st.sampled_from(
    ["metadata", "spec", "status", "labels", "conditions", "properties", "accessProviders",
     "credentialProviders", "name", "type", "status", "version", "kubernetes", "clusterManager"]
)  # fmt: skip


@given(st.dictionaries(fields, hostile | st.dictionaries(fields, hostile, max_size=5), max_size=5))
def test_no_stored_shape_makes_the_view_raise(doc: dict[str, Any]) -> None:
    view = ProfileView.of(doc)
    assert isinstance(view.key, str)
    assert all(isinstance(n, str) and n for n in view.access_provider_names)
    assert all(isinstance(v, str) for v in view.properties.values())


@given(cluster_profiles())
def test_valid_profiles_read_as_the_typed_model_reads_them(doc: dict[str, Any]) -> None:
    view = ProfileView.of(doc)
    typed = v1alpha1.ClusterProfile.from_dict(doc)
    status = typed.status
    healthy = status.condition("ControlPlaneHealthy") if status else None
    assert view.healthy == (healthy is not None and healthy.status == "True")
    merged = status.merged_access_providers() if status else []
    assert view.access_provider_names == [p.name for p in merged]


def test_a_decoded_view_has_every_field_its_constructor_would_set() -> None:
    # ProfileView.of fills the frozen dataclasses without their __init__ (for speed): a
    # field added to the class and forgotten there would be missing here.
    from dataclasses import fields

    from cluster_inventory.api.views import ConditionView

    profile = {
        "metadata": {"name": "c1", "namespace": "ns"},
        "status": {"conditions": [{"type": "Joined", "status": "True"}]},
    }
    view = ProfileView.of(profile)
    assert set(vars(view)) == {f.name for f in fields(ProfileView)}
    condition = view.condition("Joined")
    assert condition is not None
    assert set(vars(condition)) == {f.name for f in fields(ConditionView)}
    assert view == ProfileView.of(profile)
    with pytest.raises(AttributeError):
        view.name = "other"  # type: ignore[misc]


def test_an_event_is_decoded_once_whatever_its_writer_set() -> None:

    series = EventView.of(
        {
            "metadata": {"name": "p.1", "namespace": "team-a"},
            "type": "Warning",
            "reason": "Unhealthy",
            "note": "n",
            "reportingController": "c",
            "reportingInstance": "i",
            "eventTime": "2026-11-23T11:00:00.123456Z",
            "series": {"count": 3, "lastObservedTime": "2026-11-23T11:05:00.000000Z"},
            "regarding": {"kind": "ClusterProfile", "name": "p", "uid": 7},
        }
    )
    assert (series.count, series.first.minute, series.last.minute) == (3, 0, 5)
    assert series.regarding == {"kind": "ClusterProfile", "name": "p"}  # strings only
    legacy = EventView.of(
        {
            "metadata": {"creationTimestamp": "2026-11-23T10:00:00Z"},
            "deprecatedSource": {"component": "kubelet", "host": "node-1"},
            "deprecatedFirstTimestamp": "2026-11-23T10:01:00Z",
            "deprecatedLastTimestamp": "2026-11-23T10:02:00Z",
            "deprecatedCount": 4,
        }
    )
    assert (legacy.controller, legacy.instance, legacy.count) == ("kubelet", "node-1", 4)
    assert (legacy.first.minute, legacy.last.minute) == (1, 2)
    hostile = EventView.of(
        {"metadata": "x", "series": {"count": -1}, "eventTime": 5, "note": ["<b>"]}
    )
    assert (hostile.count, hostile.first, hostile.note) == (1, None, "")

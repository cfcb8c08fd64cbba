"""Property-based: any valid document parses and writes back exactly."""

from __future__ import annotations

import copy

from hypothesis import given

from cluster_inventory import api
from cluster_inventory.api import v1alpha2
from tests.support.data.strategies import cluster_profiles


@given(cluster_profiles())
def test_v1alpha1_profile_round_trips(doc: dict) -> None:
    assert api.ClusterProfile.from_dict(copy.deepcopy(doc)).to_dict() == doc


@given(cluster_profiles())
def test_model_equality_survives_a_dump(doc: dict) -> None:
    model = api.ClusterProfile.from_dict(doc)
    assert api.ClusterProfile.from_dict(model.to_dict()) == model


@given(cluster_profiles())
def test_v1alpha2_reads_the_same_shape(doc: dict) -> None:
    doc = copy.deepcopy(doc)
    doc["apiVersion"] = "multicluster.x-k8s.io/v1alpha2"
    assert v1alpha2.ClusterProfile.from_dict(copy.deepcopy(doc)).to_dict() == doc

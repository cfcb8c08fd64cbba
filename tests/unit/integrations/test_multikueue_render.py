"""The MultiKueue sync's pure parts: the MultiKueueCluster, the config and the Kueue fragment."""

from __future__ import annotations

import pytest

from cluster_inventory.credentials import ProviderConfig
from cluster_inventory.integrations.sync.multikueue import (
    ConfigTooLarge,
    kueue_configuration,
    render_multikueue_cluster,
    render_multikueue_config,
)


def test_cluster_names_the_profile_and_sets_exactly_one_source() -> None:
    body = render_multikueue_cluster(
        {"metadata": {"name": "worker-1", "namespace": "kueue-system", "labels": {"a": "b"}}}
    )
    assert body["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert body["metadata"]["name"] == "worker-1"
    assert "namespace" not in body["metadata"]
    assert body["spec"] == {"clusterSource": {"clusterProfileRef": {"name": "worker-1"}}}
    assert "status" not in body


def test_config_lists_sorted_names_and_refuses_more_than_20_with_the_count() -> None:
    body = render_multikueue_config("fleet", ["b", "a", "c"])
    assert body["spec"] == {"clusters": ["a", "b", "c"]}
    assert render_multikueue_config("fleet", ["c", "a", "b"]) == body
    with pytest.raises(ConfigTooLarge) as caught:
        render_multikueue_config("fleet", [f"w{i}" for i in range(21)])
    assert caught.value.count == 21
    assert "21" in str(caught.value) and "1 to 20" in str(caught.value)
    with pytest.raises(ValueError, match="at least one"):
        render_multikueue_config("fleet", [])


def test_kueue_configuration_maps_providers_to_exec_configs() -> None:
    providers = ProviderConfig.from_dict(
        {
            "providers": [
                {
                    "name": "secretreader",
                    "execConfig": {
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "command": "/plugins/secretreader",
                        "args": ["--namespace", "kueue-system"],
                        "env": [{"name": "A", "value": "1"}],
                        "provideClusterInfo": True,
                    },
                },
                {"name": "no-exec"},
            ]
        }
    )
    assert kueue_configuration(providers) == {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": "kueue-system",
        "featureGates": {"MultiKueueClusterProfile": True},
        "multiKueue": {
            "clusterProfile": {
                "accessProviders": [
                    {
                        "name": "secretreader",
                        "execConfig": {
                            "apiVersion": "client.authentication.k8s.io/v1",
                            "command": "/plugins/secretreader",
                            "args": ["--namespace", "kueue-system"],
                            "env": [{"name": "A", "value": "1"}],
                            "provideClusterInfo": True,
                            "interactiveMode": "Never",
                        },
                    }
                ]
            }
        },
    }

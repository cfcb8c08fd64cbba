"""Finding the consumers' binaries (Kueue, the Knative Operator), and the message when absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cluster_inventory.testing import AssetNotFoundError
from cluster_inventory.testing.gobuild import cache_root
from cluster_inventory.testing.versions import KUEUE_VERSION
from cluster_inventory_workshop import upstream_crds
from cluster_inventory_workshop.consumers import CONSUMERS, find_consumer
from cluster_inventory_workshop.versions import KNATIVE_OPERATOR_VERSION


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for var in list(os.environ):
        if var.startswith("TEST_ASSET_"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("CLUSTER_INVENTORY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


@pytest.mark.parametrize(
    ("name", "variable", "version"),
    [
        ("kueue", "TEST_ASSET_KUEUE", KUEUE_VERSION),
        ("knative-operator", "TEST_ASSET_KNATIVE_OPERATOR", KNATIVE_OPERATOR_VERSION),
    ],
)
def test_an_absent_consumer_says_how_to_build_it(
    clean_env: Path, name: str, variable: str, version: str
) -> None:
    with pytest.raises(AssetNotFoundError) as info:
        find_consumer(name)
    message = str(info.value)
    assert "cluster-inventory-workshop install-assets" in message
    assert variable in message
    assert str(clean_env / "cache" / "consumers" / f"{name}-{version}") in message


def test_the_test_asset_variable_wins(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = clean_env / "bin" / "kueue"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setenv("TEST_ASSET_KUEUE", str(binary))
    assert find_consumer("kueue") == binary
    monkeypatch.setenv("TEST_ASSET_KUEUE", str(clean_env / "missing"))
    with pytest.raises(AssetNotFoundError, match="TEST_ASSET_KUEUE"):
        find_consumer("kueue")


def test_each_consumer_builds_one_main_package_of_its_pinned_module() -> None:
    builds = {name: make() for name, make in CONSUMERS.items()}
    assert builds["kueue"].module == "sigs.k8s.io/kueue"
    assert dict(builds["kueue"].packages) == {"kueue": "sigs.k8s.io/kueue/cmd/kueue"}
    assert builds["knative-operator"].version == KNATIVE_OPERATOR_VERSION
    assert dict(builds["knative-operator"].packages) == {
        "knative-operator": "knative.dev/operator/cmd/operator"
    }


def test_kueue_manager_crds_are_every_kind_kueue_starts_a_controller_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Served from the machine's own module cache (a file:// proxy), so no network is used.
    downloads = cache_root() / "go" / "mod" / "cache" / "download"
    monkeypatch.setenv("CLUSTER_INVENTORY_CACHE_DIR", str(tmp_path / "fresh"))
    monkeypatch.setenv("GOPROXY", f"file://{downloads}")
    monkeypatch.setenv("GOSUMDB", "off")
    monkeypatch.setattr(upstream_crds, "_dirs", {})

    names = {crd["metadata"]["name"] for crd in upstream_crds.kueue_manager_crds()}

    assert {
        "workloads.kueue.x-k8s.io",
        "clusterqueues.kueue.x-k8s.io",
        "localqueues.kueue.x-k8s.io",
        "admissionchecks.kueue.x-k8s.io",
        *upstream_crds.KUEUE_CRDS,
    } <= names

"""The pure rules of a storage migration: discovery's hash, when storedVersions may shrink."""

from __future__ import annotations

from cluster_inventory.kube._storage_migration import (
    ENGINE_API,
    storage_version_hash,
    unchanged_since,
)
from cluster_inventory.kube.resources import STORAGE_VERSION_MIGRATIONS


def test_the_storage_version_hash_is_the_one_discovery_shows() -> None:
    # Both seen in a kube-apiserver v1.36.3's discovery documents.
    assert storage_version_hash("multicluster.x-k8s.io", "v1alpha1", "ClusterProfile") == (
        "DC0mtCqKp6k="
    )
    assert (
        storage_version_hash("storagemigration.k8s.io", "v1beta1", "StorageVersionMigration")
        == "pCjmmKOkLy4="
    )
    assert ENGINE_API == STORAGE_VERSION_MIGRATIONS.api_version


def _crd(generation: int, storage: str) -> dict[str, object]:
    versions = [
        {"name": v, "served": True, "storage": v == storage} for v in ("v1alpha1", "v1alpha2")
    ]
    return {"metadata": {"generation": generation}, "spec": {"versions": versions}}


def test_stored_versions_shrink_only_if_the_crd_is_as_the_rewrite_found_it() -> None:
    assert unchanged_since(_crd(2, "v1alpha2"), 2, "v1alpha2")
    # Someone changed the CRD during the rewrite (a re-apply of an old one, anything).
    assert not unchanged_since(_crd(3, "v1alpha2"), 2, "v1alpha2")
    assert not unchanged_since(_crd(2, "v1alpha1"), 2, "v1alpha2")

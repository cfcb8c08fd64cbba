"""Upstream CRDs from Go modules: the first use on a machine whose cache does not exist yet."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster_inventory.testing.gobuild import cache_root
from cluster_inventory_workshop import upstream_crds


def test_a_fresh_cache_directory_is_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # Served from the machine's own module cache (a file:// proxy), so no network is used.
    downloads = cache_root() / "go" / "mod" / "cache" / "download"
    fresh = tmp_path / "fresh"
    monkeypatch.setenv("CLUSTER_INVENTORY_CACHE_DIR", str(fresh))
    monkeypatch.setenv("GOPROXY", f"file://{downloads}")
    monkeypatch.setenv("GOSUMDB", "off")
    monkeypatch.setattr(upstream_crds, "_dirs", {})

    crd = upstream_crds.upstream_crd("clusters.cluster.x-k8s.io")

    assert crd["spec"]["group"] == "cluster.x-k8s.io"
    assert (fresh / "go" / "mod").is_dir()

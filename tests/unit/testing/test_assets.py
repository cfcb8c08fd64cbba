"""Finding binaries the envtest way, and the messages when they are absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cluster_inventory.testing import AssetNotFoundError, GoNotFoundError, find_binary
from cluster_inventory.testing.gobuild import go_env


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for var in list(os.environ):
        if var.startswith("TEST_ASSET_") or var == "KUBEBUILDER_ASSETS":
            monkeypatch.delenv(var)
    monkeypatch.setenv("CLUSTER_INVENTORY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_absent_binary_says_how_to_install(clean_env: Path) -> None:
    with pytest.raises(AssetNotFoundError) as info:
        find_binary("kube-apiserver")
    message = str(info.value)
    assert "cluster-inventory testing install-assets" in message
    assert "TEST_ASSET_KUBE_APISERVER" in message
    assert str(clean_env / "cache") in message


def test_test_asset_variable_wins(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = executable(clean_env / "explicit" / "etcd")
    executable(clean_env / "kb" / "etcd")
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(clean_env / "kb"))
    monkeypatch.setenv("TEST_ASSET_ETCD", str(explicit))
    assert find_binary("etcd") == explicit


def test_kubebuilder_assets_is_used(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = executable(clean_env / "kb" / "kubectl")
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(clean_env / "kb"))
    assert find_binary("kubectl") == found


def test_non_executable_file_is_not_taken(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = clean_env / "kb" / "etcd"
    plain.parent.mkdir(parents=True)
    plain.write_text("")
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(clean_env / "kb"))
    with pytest.raises(AssetNotFoundError, match="KUBEBUILDER_ASSETS"):
        find_binary("etcd")


def test_missing_go_says_how_to_get_it(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(clean_env))
    with pytest.raises(GoNotFoundError, match=r"install it .* put `go` on PATH"):
        go_env()


def test_too_old_go_is_refused(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = clean_env / "bin"
    fake = executable(bindir / "go")
    fake.write_text("#!/bin/sh\necho go1.19.8\n")
    monkeypatch.setenv("PATH", str(bindir))
    with pytest.raises(GoNotFoundError, match=r"go1\.19\.8"):
        go_env()

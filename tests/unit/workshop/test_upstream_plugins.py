"""Choosing an upstream exec plugin: names, and the directory override."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster_inventory.testing.versions import CLUSTER_INVENTORY_API_VERSION
from cluster_inventory_workshop import upstream_plugin
from cluster_inventory_workshop.upstream_plugins import UPSTREAM_PLUGIN_DIR_ENV


@pytest.fixture(autouse=True)
def isolated_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv(UPSTREAM_PLUGIN_DIR_ENV, raising=False)
    monkeypatch.setenv("CLUSTER_INVENTORY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="no-such-plugin") as info:
        upstream_plugin("no-such-plugin")
    assert "secretreader" in str(info.value)
    assert "kubeconfig-secretreader" in str(info.value)


def test_unknown_name_is_refused_even_with_the_override(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(UPSTREAM_PLUGIN_DIR_ENV, str(tmp_path / "prebuilt"))
    with pytest.raises(ValueError, match="known plugins"):
        upstream_plugin("no-such-plugin")


@pytest.mark.parametrize("name", ["secretreader", "kubeconfig-secretreader"])
def test_override_directory_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str
) -> None:
    fake = executable(tmp_path / "prebuilt" / f"{name}-plugin")
    monkeypatch.setenv(UPSTREAM_PLUGIN_DIR_ENV, str(fake.parent))
    assert upstream_plugin(name) == fake
    assert not (tmp_path / "cache").exists()  # nothing was built


def test_override_directory_without_the_binary_is_an_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "prebuilt").mkdir()
    monkeypatch.setenv(UPSTREAM_PLUGIN_DIR_ENV, str(tmp_path / "prebuilt"))
    with pytest.raises(FileNotFoundError, match="secretreader-plugin"):
        upstream_plugin()


def test_cached_binary_is_reused_without_building(isolated_cache: Path) -> None:
    plugins = isolated_cache / "cache" / "plugins"
    cached = executable(
        plugins / f"cluster-inventory-api-{CLUSTER_INVENTORY_API_VERSION}" / "secretreader-plugin"
    )
    assert upstream_plugin() == cached

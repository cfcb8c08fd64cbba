"""``kubeconfig`` pins the hub it found for the plugin it writes into the member kubeconfig."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cluster_inventory.cli._hub import hub_kubeconfig_pin


def test_an_explicit_file_is_passed_as_an_absolute_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KUBECONFIG", "/elsewhere")
    assert hub_kubeconfig_pin(Path("hub.yaml")) == (
        ["--kubeconfig", str(tmp_path / "hub.yaml")],
        {},
    )


def test_a_kubeconfig_list_is_passed_whole_in_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "b").write_text("{}")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(["a", "b"]))
    args, env = hub_kubeconfig_pin(None)
    assert args == []
    assert env == {"KUBECONFIG": os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")])}


def test_the_home_file_is_pinned_outside_a_pod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert hub_kubeconfig_pin(None) == (["--kubeconfig", str(tmp_path / ".kube" / "config")], {})

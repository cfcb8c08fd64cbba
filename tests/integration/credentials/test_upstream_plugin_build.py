"""The upstream secretreader exec plugin builds from its Go module and runs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cluster_inventory_workshop import upstream_plugin

# A placeholder kubeconfig: the plugin's main() builds a client before it reads
# KUBERNETES_EXEC_INFO and panics (exit 2) if neither in-cluster config nor a kubeconfig
# exists. Building the client does not contact the server.
KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: placeholder
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: placeholder
  user: {}
contexts:
- name: placeholder
  context: {cluster: placeholder, user: placeholder}
current-context: placeholder
"""


@pytest.mark.timeout(1800)  # a cold build compiles client-go: minutes on two cores
def test_secretreader_without_exec_info_fails_with_its_prefix(tmp_path: Path) -> None:
    plugin = upstream_plugin()
    assert plugin.name == "secretreader-plugin"
    assert os.access(plugin, os.X_OK)

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    env = {"PATH": os.environ.get("PATH", os.defpath), "KUBECONFIG": str(kubeconfig)}
    proc = subprocess.run(
        [str(plugin)], env=env, capture_output=True, text=True, timeout=60, check=False
    )

    assert proc.returncode == 1, proc.stderr
    assert "[secretreader]" in proc.stderr
    assert "KUBERNETES_EXEC_INFO" in proc.stderr
    assert proc.stdout == ""


def test_second_call_reuses_the_cached_binary() -> None:
    first = upstream_plugin()
    mtime = first.stat().st_mtime_ns
    assert upstream_plugin() == first
    assert first.stat().st_mtime_ns == mtime

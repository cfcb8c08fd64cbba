"""The pinned binaries of the test assets and tools, run as a user runs them.

``kubectl`` (and ``hub_kubectl``, on a hub) is the test assets' (the control planes' own version, its built-in kustomize);
``promtool`` is built from the Prometheus module by ``cluster-inventory-workshop
install-assets``. Each runs with no standard input and its output captured as text; a
missing binary fails with the message saying how to build it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from cluster_inventory.testing import ControlPlane
from cluster_inventory.testing.assets import find_binary
from cluster_inventory_workshop.chart import CHART_DIR
from cluster_inventory_workshop.tools import find_tool

#: Where the chart's rule files and their promtool tests are (they name each other relatively).
RULE_FILES_DIR = CHART_DIR / "files"


def kubectl(
    *args: str, timeout: float = 120, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The pinned ``kubectl`` with ``args``; ``env`` is added to this process's environment."""
    return subprocess.run(
        [str(find_binary("kubectl")), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
        env=None if env is None else {**os.environ, **env},
    )


def hub_kubectl(
    *args: str, hub: ControlPlane, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """:func:`kubectl` with ``KUBECONFIG`` the ``hub``'s admin kubeconfig (a kubectl plugin it
    runs reads the same variable), ``env`` added over it."""
    return kubectl(*args, env={"KUBECONFIG": str(hub.kubeconfig_path), **(env or {})})


def promtool(*args: str, cwd: Path = RULE_FILES_DIR) -> subprocess.CompletedProcess[str]:
    """``promtool`` with ``args``, run in ``cwd`` (the chart's rule files by default)."""
    return subprocess.run(
        [str(find_tool("promtool")), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )

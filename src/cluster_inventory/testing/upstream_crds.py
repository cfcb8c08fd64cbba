"""CRDs of the upstream projects our integrations write to, read from their Go modules.

Tests install the real CRD (schema and CEL rules as the project publishes them) rather than a
copy typed by hand, so an object the integration writes is checked by the same validation
the consumer's cluster applies. The module is fetched with ``go mod download`` into the
project's Go module cache (``~/.cache/cluster-inventory/go/mod``) and read from there.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from cluster_inventory.testing._gobuild import GoBuildError, go_env
from cluster_inventory.testing.versions import KUEUE_VERSION

__all__ = ["KUEUE_CRDS", "kueue_crds", "module_dir"]

_KUEUE = "sigs.k8s.io/kueue"
#: The Kueue CRDs the MultiKueue sync writes (files under ``config/components/crd/bases``).
KUEUE_CRDS = ("kueue.x-k8s.io_multikueueclusters.yaml", "kueue.x-k8s.io_multikueueconfigs.yaml")


def module_dir(module: str, version: str) -> Path:
    """Download ``module@version`` into the Go module cache (once) and return its directory.

    Raises:
        GoNotFoundError: ``go`` is absent or too old (the message says how to get it).
        GoBuildError: The download failed; the message carries ``go``'s answer.
    """
    env = go_env()
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    try:
        info = json.loads(out.stdout or "{}")
    except json.JSONDecodeError:
        info = {}
    if out.returncode != 0 or "Dir" not in info:
        raise GoBuildError(
            f"`go mod download {module}@{version}` failed: "
            f"{info.get('Error') or out.stderr.strip() or out.stdout.strip()}"
        )
    return Path(info["Dir"])


def kueue_crds(version: str = KUEUE_VERSION) -> list[dict[str, Any]]:
    """The MultiKueueCluster and MultiKueueConfig CRDs of ``sigs.k8s.io/kueue@version``.

    Returns:
        The CustomResourceDefinition objects, ready for
        :func:`cluster_inventory.kube.ensure_crds`.

    Raises:
        GoNotFoundError: ``go`` is absent or too old.
        GoBuildError: The module cannot be downloaded.
    """
    bases = module_dir(_KUEUE, version) / "config" / "components" / "crd" / "bases"
    return [yaml.safe_load((bases / name).read_text()) for name in KUEUE_CRDS]

"""CRDs of the upstream projects our integrations read and write, from their Go modules.

Tests install the real CRDs (schema and CEL rules as the projects publish them: Cluster
API's Cluster, Kueue's kinds, the Knative Operator's KnativeServing) rather than copies typed by
hand, so every object an integration writes is checked by the validation the consumer's
cluster applies. The module zip is fetched from the Go module proxy with ``go mod download``
into the project's module cache (``~/.cache/cluster-inventory/go/mod``); after the first
download a lookup costs one ``go`` call that reads the cache.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from cluster_inventory.api import objects
from cluster_inventory.testing.gobuild import GoBuildError, go_env
from cluster_inventory_workshop.versions import (
    CLUSTER_API_VERSION,
    KNATIVE_OPERATOR_VERSION,
    KUEUE_VERSION,
)

__all__ = [
    "KNATIVE_OPERATOR_CRDS",
    "KUEUE_CRDS",
    "UPSTREAM_CRDS",
    "UpstreamCRD",
    "go_module_dir",
    "kueue_crds",
    "kueue_manager_crds",
    "upstream_crd",
]

_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class UpstreamCRD:
    """Where one upstream CRD lives: module path, version and the file inside the module.

    Attributes:
        module: Go module path, e.g. ``sigs.k8s.io/cluster-api``.
        version: Module version, e.g. ``v1.13.1``.
        path: The CRD file inside the module, e.g. ``config/crd/bases/...yaml``.
    """

    def __init__(self, module: str, version: str, path: str) -> None:
        self.module = module
        self.version = version
        self.path = path

    def __repr__(self) -> str:
        return f"UpstreamCRD({self.module}@{self.version}:{self.path})"


#: CRD name to where it is read from.
UPSTREAM_CRDS: Mapping[str, UpstreamCRD] = MappingProxyType(
    {
        "clusters.cluster.x-k8s.io": UpstreamCRD(
            "sigs.k8s.io/cluster-api",
            CLUSTER_API_VERSION,
            "config/crd/bases/cluster.x-k8s.io_clusters.yaml",
        ),
        "multikueueclusters.kueue.x-k8s.io": UpstreamCRD(
            "sigs.k8s.io/kueue",
            KUEUE_VERSION,
            "config/components/crd/bases/kueue.x-k8s.io_multikueueclusters.yaml",
        ),
        "multikueueconfigs.kueue.x-k8s.io": UpstreamCRD(
            "sigs.k8s.io/kueue",
            KUEUE_VERSION,
            "config/components/crd/bases/kueue.x-k8s.io_multikueueconfigs.yaml",
        ),
        "knativeservings.operator.knative.dev": UpstreamCRD(
            "knative.dev/operator",
            KNATIVE_OPERATOR_VERSION,
            "config/crd/bases/operator.knative.dev_knativeservings.yaml",
        ),
        "knativeeventings.operator.knative.dev": UpstreamCRD(
            "knative.dev/operator",
            KNATIVE_OPERATOR_VERSION,
            "config/crd/bases/operator.knative.dev_knativeeventings.yaml",
        ),
    }
)
#: The Kueue CRDs the MultiKueue sync writes.
KUEUE_CRDS = ("multikueueclusters.kueue.x-k8s.io", "multikueueconfigs.kueue.x-k8s.io")
#: The Knative Operator's CRDs (it watches both kinds and stops if either is missing).
KNATIVE_OPERATOR_CRDS = (
    "knativeservings.operator.knative.dev",
    "knativeeventings.operator.knative.dev",
)

_dirs: dict[tuple[str, str], Path] = {}


def go_module_dir(
    module: str, version: str, *, progress: Callable[[str], None] | None = None
) -> Path:
    """Download ``module@version`` into the module cache (once) and return its directory.

    Args:
        module: Go module path.
        version: Exact version.
        progress: Called with a short status line before a download.

    Returns:
        The read-only module directory in ``GOMODCACHE``.

    Raises:
        GoNotFoundError: ``go`` is absent or too old (the message says how to get it).
        GoBuildError: ``go mod download`` failed (the message carries its output).
    """
    key = (module, version)
    if key in _dirs:
        return _dirs[key]
    env = go_env()
    go = shutil.which("go") or "go"
    workdir = Path(env["GOMODCACHE"]).parent  # outside any module; absent on a fresh cache
    workdir.mkdir(parents=True, exist_ok=True)
    if progress:
        progress(f"go mod download {module}@{version}")
    proc = subprocess.run(
        [go, "mod", "download", "-json", f"{module}@{version}"],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
        cwd=str(workdir),
    )
    try:
        info = json.loads(proc.stdout or "{}")
    except json.JSONDecodeError:
        info = {}
    if proc.returncode != 0 or not info.get("Dir"):
        detail = info.get("Error") or proc.stderr.strip() or proc.stdout.strip()
        raise GoBuildError(f"`go mod download {module}@{version}` failed: {detail}")
    _dirs[key] = Path(info["Dir"])
    return _dirs[key]


def upstream_crd(name: str, *, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The upstream CustomResourceDefinition ``name`` as a dict, read from its Go module.

    Args:
        name: A key of :data:`UPSTREAM_CRDS`, e.g. ``clusters.cluster.x-k8s.io``.
        progress: Called with status lines during a first download.

    Raises:
        ValueError: ``name`` is not known, or the file is not that CRD.
        GoNotFoundError, GoBuildError: The module could not be downloaded.
    """
    where = UPSTREAM_CRDS.get(name)
    if where is None:
        raise ValueError(
            f"unknown upstream CRD {name!r}; known: {', '.join(sorted(UPSTREAM_CRDS))}"
        )
    path = go_module_dir(where.module, where.version, progress=progress) / where.path
    doc = yaml.load(path.read_text(), Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader
    if not isinstance(doc, dict) or objects.meta(doc).get("name") != name:
        raise ValueError(f"{where!r} does not hold the CRD {name}")
    return doc


def kueue_crds() -> list[dict[str, Any]]:
    """The MultiKueueCluster and MultiKueueConfig CRDs of the pinned ``sigs.k8s.io/kueue``.

    Returns:
        CustomResourceDefinition objects, ready for :func:`cluster_inventory.kube.ensure_crds`.

    Raises:
        GoNotFoundError, GoBuildError: The module could not be downloaded.
    """
    return [upstream_crd(name) for name in KUEUE_CRDS]


_KUEUE_CRD_DIR = "config/components/crd/bases"


def kueue_manager_crds(*, progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Every CRD of the pinned ``sigs.k8s.io/kueue``: what Kueue's manager needs to start.

    Kueue's manager sets up a controller per kind (ClusterQueue, LocalQueue, Workload, ...)
    and exits if one of their CRDs is missing; a MultiKueue worker needs at least the
    Workload CRD. Each file of the module's ``config/components/crd/bases`` is one CRD.

    Raises:
        GoNotFoundError, GoBuildError: The module could not be downloaded.
        ValueError: A file of that directory is not a CRD.
    """
    base = go_module_dir("sigs.k8s.io/kueue", KUEUE_VERSION, progress=progress) / _KUEUE_CRD_DIR
    crds = []
    for path in sorted(base.glob("*.yaml")):
        doc = yaml.load(path.read_text(), Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader
        if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
            raise ValueError(
                f"sigs.k8s.io/kueue@{KUEUE_VERSION}:{_KUEUE_CRD_DIR}/{path.name} is no CRD"
            )
        crds.append(doc)
    return crds

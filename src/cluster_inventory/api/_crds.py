"""The CRD manifests shipped in ``cluster_inventory/api/crds/``."""

from __future__ import annotations

from importlib.resources import files
from typing import Any

import yaml

__all__ = ["load_crds"]


def _sources() -> list[Any]:
    folder = files("cluster_inventory.api").joinpath("crds")
    return sorted((f for f in folder.iterdir() if f.name.endswith(".yaml")), key=lambda f: f.name)


def load_crds() -> list[dict[str, Any]]:
    """Return every CustomResourceDefinition as a dict, ordered by file name.

    ClusterProperty (``about.k8s.io``) first, then the placement request ``Placement``
    (``cluster-inventory.dev``, this project's own), then ClusterProfile and
    PlacementDecision (``multicluster.x-k8s.io``).
    """
    return [yaml.safe_load(source.read_text()) for source in _sources()]

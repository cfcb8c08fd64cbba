"""The Kueue CRDs the demo installs on its hub, shipped as package data.

The demo's MultiKueue step writes MultiKueueClusters, so its hub needs Kueue's
MultiKueueCluster and MultiKueueConfig CRDs. They are byte-for-byte copies of the files in the
pinned ``sigs.k8s.io/kueue`` module (``KUEUE_VERSION``), written by
``cluster-inventory-workshop demo-crds`` and checked against the module by
``tests/unit/cli/test_demo_crds.py``: the demo then needs neither Go nor the network.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

import yaml

__all__ = ["KUEUE_CRD_FILES", "kueue_crds"]

#: The shipped files, named as in the module's ``config/components/crd/bases``.
KUEUE_CRD_FILES = (
    "kueue.x-k8s.io_multikueueclusters.yaml",
    "kueue.x-k8s.io_multikueueconfigs.yaml",
)


def kueue_crds() -> list[dict[str, Any]]:
    """The MultiKueueCluster and MultiKueueConfig CRDs, ready for ``kube.ensure_crds``.

    Returns:
        CustomResourceDefinition objects, in :data:`KUEUE_CRD_FILES` order.
    """
    folder = files("cluster_inventory.cli.demo").joinpath("crds")
    return [yaml.safe_load(folder.joinpath(name).read_text()) for name in KUEUE_CRD_FILES]

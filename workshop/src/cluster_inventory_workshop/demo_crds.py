"""Write the Kueue CRDs the demo ships from the pinned ``sigs.k8s.io/kueue`` module.

The wheel must run ``cluster-inventory demo`` without Go, so the two CRDs it installs are
package data (``cluster_inventory/cli/demo/crds``). This is their generator: it copies the
module's files byte for byte. ``cluster-inventory-workshop demo-crds`` runs it after a change
of ``KUEUE_VERSION``; ``tests/unit/cli/test_demo_crds.py`` fails while they differ.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cluster_inventory.testing.versions import KUEUE_VERSION
from cluster_inventory_workshop.upstream_crds import go_module_dir

__all__ = ["DEMO_CRD_DIR", "KUEUE_CRD_DIR", "module_files", "write_demo_crds"]

#: Where the shipped copies live in the checkout.
DEMO_CRD_DIR = (
    Path(__file__).resolve().parents[3] / "src" / "cluster_inventory" / "cli" / "demo" / "crds"
)
#: Where the CRDs live inside the Kueue module.
KUEUE_CRD_DIR = "config/components/crd/bases"


def module_files(*, progress: Callable[[str], None] | None = None) -> dict[str, bytes]:
    """The module's copies of the shipped files, by file name.

    Raises:
        GoNotFoundError, GoBuildError: The module could not be downloaded.
    """
    from cluster_inventory.cli.demo import KUEUE_CRD_FILES

    base = go_module_dir("sigs.k8s.io/kueue", KUEUE_VERSION, progress=progress) / KUEUE_CRD_DIR
    return {name: (base / name).read_bytes() for name in KUEUE_CRD_FILES}


def write_demo_crds(*, progress: Callable[[str], None] | None = None) -> list[Path]:
    """Rewrite the shipped copies that differ from the module's.

    Returns:
        The files written.

    Raises:
        GoNotFoundError, GoBuildError: The module could not be downloaded.
    """
    written = []
    DEMO_CRD_DIR.mkdir(parents=True, exist_ok=True)
    for name, data in module_files(progress=progress).items():
        path = DEMO_CRD_DIR / name
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
            written.append(path)
    return written

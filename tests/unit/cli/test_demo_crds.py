"""The Kueue CRDs the demo ships are the pinned module's files, byte for byte.

They are package data so that ``cluster-inventory demo`` needs no Go at run time; this test
reads the module from the project's Go module cache (``go mod download``, no network once
``make assets`` ran) and fails while the copies differ: run ``make demo-crds``.
"""

from __future__ import annotations

from cluster_inventory.cli.demo import KUEUE_CRD_FILES, kueue_crds
from cluster_inventory_workshop.demo_crds import DEMO_CRD_DIR, module_files


def test_the_shipped_kueue_crds_equal_the_modules() -> None:
    upstream = module_files()
    assert sorted(upstream) == sorted(KUEUE_CRD_FILES)
    for name, data in upstream.items():
        assert (DEMO_CRD_DIR / name).read_bytes() == data, f"{name}: run `make demo-crds`"


def test_the_demo_loads_the_multikueue_crds_from_package_data() -> None:
    names = [crd["metadata"]["name"] for crd in kueue_crds()]
    assert names == ["multikueueclusters.kueue.x-k8s.io", "multikueueconfigs.kueue.x-k8s.io"]

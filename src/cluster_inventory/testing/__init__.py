"""Real Kubernetes control planes on loopback for tests, benchmarks and the demo.

Nothing here is mocked: :class:`ControlPlane` runs etcd and kube-apiserver (and, on request,
kube-controller-manager) built from the Kubernetes Go modules; :class:`Fleet` runs a hub and
member clusters with the Cluster Inventory CRDs installed. Binaries are found the way envtest
finds them (``TEST_ASSET_*``, ``KUBEBUILDER_ASSETS``) or built once into
``~/.cache/cluster-inventory`` by :func:`install_assets`. The pytest plugin
(:mod:`cluster_inventory.testing.pytest_plugin`) exposes ``fleet``, ``hub`` and
``test_namespace`` fixtures to any project. :class:`VirtualMembers` serves thousands of
distinct members as URL paths over the fleet's real ones.
"""

from __future__ import annotations

from cluster_inventory.testing._gobuild import GoBuildError, GoNotFoundError, cache_root
from cluster_inventory.testing._process import ManagedProcess
from cluster_inventory.testing.assets import (
    BINARIES,
    AssetNotFoundError,
    assets_dir,
    find_binary,
    install_assets,
    missing_binaries,
)
from cluster_inventory.testing.controlplane import (
    DEFAULT_CONTROLLERS,
    ControlPlane,
    ControlPlaneError,
    Etcd,
)
from cluster_inventory.testing.fleet import (
    Fleet,
    KeptFleetError,
    start_detached_member,
    stop_detached,
    stop_detached_member,
)
from cluster_inventory.testing.upstream_crds import go_module_dir, upstream_crd
from cluster_inventory.testing.upstream_plugins import upstream_plugin
from cluster_inventory.testing.virtual_members import (
    LABEL_VIRTUAL_MEMBER,
    VirtualMembers,
    member_id,
    virtual_members_binary,
)

__all__ = [
    "BINARIES",
    "DEFAULT_CONTROLLERS",
    "LABEL_VIRTUAL_MEMBER",
    "AssetNotFoundError",
    "ControlPlane",
    "ControlPlaneError",
    "Etcd",
    "Fleet",
    "GoBuildError",
    "GoNotFoundError",
    "KeptFleetError",
    "ManagedProcess",
    "VirtualMembers",
    "assets_dir",
    "cache_root",
    "find_binary",
    "go_module_dir",
    "install_assets",
    "member_id",
    "missing_binaries",
    "start_detached_member",
    "stop_detached",
    "stop_detached_member",
    "upstream_crd",
    "upstream_plugin",
    "virtual_members_binary",
]

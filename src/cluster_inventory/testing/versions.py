"""The versions the shipped harness and the product pin: control planes and upstream data.

Changing a version here changes the asset cache directory, so old and new builds never mix.
The workshop's own pins (Argo CD, Helm, Prometheus, ...) live in
``cluster_inventory_workshop.versions``, outside the wheel.
"""

from __future__ import annotations

__all__ = [
    "CLUSTER_INVENTORY_API_VERSION",
    "ETCD_VERSION",
    "KUBERNETES_VERSION",
    "KUEUE_VERSION",
    "MIN_GO_VERSION",
]

#: ``k8s.io/kubernetes`` module version for kube-apiserver, kube-controller-manager, kubectl.
KUBERNETES_VERSION = "v1.36.3"
#: ``go.etcd.io/etcd/server/v3`` module version for etcd.
ETCD_VERSION = "v3.6.16"
#: ``sigs.k8s.io/cluster-inventory-api`` module version: upstream CRDs and interop plugins.
CLUSTER_INVENTORY_API_VERSION = "v0.1.3"
#: The Kubernetes module's go.mod asks for this Go version (``GOTOOLCHAIN=local``).
MIN_GO_VERSION = (1, 26)
#: ``sigs.k8s.io/kueue`` module version: the MultiKueue CRDs the demo ships
#: (``cluster_inventory/cli/demo/crds``, generated from this module) and Kueue's manager.
KUEUE_VERSION = "v0.19.2"

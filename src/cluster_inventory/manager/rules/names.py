"""The cluster manager's defaults: its name and its namespace.

Every name it writes on the wire (labels, annotations, Secret types and keys, its field
manager, its condition type) lives in :mod:`cluster_inventory.api.constants`.
"""

from __future__ import annotations

__all__ = ["DEFAULT_MANAGER_NAME", "DEFAULT_NAMESPACE"]

#: Default cluster manager name (``spec.clusterManager.name`` and ``x-k8s.io/cluster-manager``).
DEFAULT_MANAGER_NAME = "cluster-inventory"
#: The manager's namespace on the hub (registrations, Lease) and on members (ServiceAccounts).
DEFAULT_NAMESPACE = "cluster-inventory-system"

"""Names the cluster manager writes: labels, annotations, keys and condition types.

Everything of ours lives under the project domain (never ``k8s.io``); the API's own names
come from :mod:`cluster_inventory.api.constants`.
"""

from __future__ import annotations

from cluster_inventory.api.constants import PROJECT_DOMAIN

__all__ = [
    "ANNOTATION_CLUSTERSETS",
    "ANNOTATION_CONTEXT",
    "ANNOTATION_DISPLAY_NAME",
    "ANNOTATION_MEMBER_ROLE",
    "ANNOTATION_SHARD_HOLDER",
    "CONDITION_PROPERTIES_SYNCED",
    "DEFAULT_MANAGER_NAME",
    "DEFAULT_NAMESPACE",
    "FIELD_MANAGER",
    "KUBECONFIG_KEY",
    "LABEL_CAPI_CLUSTERSET",
    "LABEL_INVENTORY",
    "LABEL_REGISTRATION",
    "LABEL_TOKEN_FOR",
    "REGISTRATION_SECRET_TYPE",
    "TOKEN_SECRET_TYPE",
]

#: Default cluster manager name (``spec.clusterManager.name`` and ``x-k8s.io/cluster-manager``).
DEFAULT_MANAGER_NAME = "cluster-inventory"
#: The manager's namespace on the hub (registrations, Lease) and on members (ServiceAccounts).
DEFAULT_NAMESPACE = "cluster-inventory-system"
#: Field manager of every server-side apply the manager sends.
FIELD_MANAGER = "cluster-inventory-manager"

#: On a registration Secret: ``"true"`` marks it as one.
LABEL_REGISTRATION = f"{PROJECT_DOMAIN}/registration"
#: Type of registration Secrets.
REGISTRATION_SECRET_TYPE = f"{PROJECT_DOMAIN}/registration"
#: Key of a registration Secret holding the member kubeconfig.
KUBECONFIG_KEY = "kubeconfig"
#: On a registration Secret: comma-separated cluster sets the member joins.
ANNOTATION_CLUSTERSETS = f"{PROJECT_DOMAIN}/clustersets"
#: On a registration Secret: the kubeconfig context to use (default: current-context).
ANNOTATION_CONTEXT = f"{PROJECT_DOMAIN}/context"
#: On a registration Secret: the profile's ``spec.displayName`` (default: the member name).
ANNOTATION_DISPLAY_NAME = f"{PROJECT_DOMAIN}/display-name"

#: On a Cluster API ``Cluster``: the cluster set it joins (the default key; configurable).
LABEL_CAPI_CLUSTERSET = f"{PROJECT_DOMAIN}/clusterset"

#: On an inventory namespace: the member ClusterRole its consumers get (default ``view``).
ANNOTATION_MEMBER_ROLE = f"{PROJECT_DOMAIN}/member-cluster-role"
#: On a ClusterProfile of a sharded cluster manager: the replica that writes its status (the
#: fence; every write is conditional on the profile's resourceVersion, docs/scale.md).
ANNOTATION_SHARD_HOLDER = f"{PROJECT_DOMAIN}/shard-holder"
#: On a consumer token Secret: the profile it serves.
LABEL_TOKEN_FOR = f"{PROJECT_DOMAIN}/token-for"
#: Type of consumer token Secrets (the secretreader contract only needs key ``token``).
TOKEN_SECRET_TYPE = f"{PROJECT_DOMAIN}/member-token"
#: On member-side ServiceAccounts and bindings: the hub inventory namespace they serve.
LABEL_INVENTORY = f"{PROJECT_DOMAIN}/inventory"

#: Condition: every ClusterProperty of the member is mirrored into ``status.properties``.
CONDITION_PROPERTIES_SYNCED = f"{PROJECT_DOMAIN}/PropertiesSynced"

"""The resources this project reads and writes, as :class:`Resource` values."""

from __future__ import annotations

from cluster_inventory.kube._resources import Resource

__all__ = [
    "CLUSTER_PROFILES",
    "CLUSTER_PROPERTIES",
    "CUSTOM_RESOURCE_DEFINITIONS",
    "NAMESPACES",
    "PLACEMENT_DECISIONS",
    "SECRETS",
    "SERVICE_ACCOUNTS",
]

NAMESPACES = Resource(
    group="", version="v1", plural="namespaces", kind="Namespace", namespaced=False
)
SECRETS = Resource(group="", version="v1", plural="secrets", kind="Secret")
SERVICE_ACCOUNTS = Resource(group="", version="v1", plural="serviceaccounts", kind="ServiceAccount")
CUSTOM_RESOURCE_DEFINITIONS = Resource(
    group="apiextensions.k8s.io",
    version="v1",
    plural="customresourcedefinitions",
    kind="CustomResourceDefinition",
    namespaced=False,
)
CLUSTER_PROFILES = Resource(
    group="multicluster.x-k8s.io",
    version="v1alpha1",
    plural="clusterprofiles",
    kind="ClusterProfile",
)
PLACEMENT_DECISIONS = Resource(
    group="multicluster.x-k8s.io",
    version="v1alpha1",
    plural="placementdecisions",
    kind="PlacementDecision",
)
CLUSTER_PROPERTIES = Resource(
    group="about.k8s.io",
    version="v1beta1",
    plural="clusterproperties",
    kind="ClusterProperty",
    namespaced=False,
)

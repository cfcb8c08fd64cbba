"""The resources this project reads and writes, as :class:`Resource` values."""

from __future__ import annotations

from cluster_inventory.api import constants as c
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
    group=c.GROUP,
    version=c.V1ALPHA1,
    plural=c.CLUSTER_PROFILE_PLURAL,
    kind=c.CLUSTER_PROFILE_KIND,
)
PLACEMENT_DECISIONS = Resource(
    group=c.GROUP,
    version=c.V1ALPHA1,
    plural=c.PLACEMENT_DECISION_PLURAL,
    kind=c.PLACEMENT_DECISION_KIND,
)
CLUSTER_PROPERTIES = Resource(
    group=c.ABOUT_GROUP,
    version=c.V1BETA1,
    plural=c.CLUSTER_PROPERTY_PLURAL,
    kind=c.CLUSTER_PROPERTY_KIND,
    namespaced=False,
)

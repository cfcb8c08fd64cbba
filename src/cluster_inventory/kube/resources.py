"""The resources this project reads and writes, as :class:`Resource` values."""

from __future__ import annotations

from dataclasses import dataclass

from cluster_inventory.api import constants as c
from cluster_inventory.kube._resources import Resource

__all__ = [
    "CERTIFICATE_SIGNING_REQUESTS",
    "CLUSTER_PROFILES",
    "CLUSTER_PROPERTIES",
    "CLUSTER_ROLES",
    "CLUSTER_ROLE_BINDINGS",
    "CONFIG_MAPS",
    "CUSTOM_RESOURCE_DEFINITIONS",
    "EVENTS",
    "LEASES",
    "MEMBER_REPORTS",
    "NAMESPACES",
    "PLACEMENT_DECISIONS",
    "ROLES",
    "ROLE_BINDINGS",
    "SECRETS",
    "SERVICE_ACCOUNTS",
    "STORAGE_VERSION_MIGRATIONS",
    "SUBJECT_ACCESS_REVIEWS",
    "TOKEN_REVIEWS",
]


@dataclass(frozen=True)
class _GroupVersion:
    """One API group at one version: what the resources it serves have in common."""

    group: str
    version: str

    def resource(self, plural: str, kind: str, *, namespaced: bool = True) -> Resource:
        """The resource ``plural`` (of kind ``kind``) of this group and version."""
        return Resource(
            group=self.group, version=self.version, plural=plural, kind=kind, namespaced=namespaced
        )


_CORE = _GroupVersion("", "v1")
_RBAC = _GroupVersion("rbac.authorization.k8s.io", "v1")
_INVENTORY = _GroupVersion(c.GROUP, c.V1ALPHA1)

NAMESPACES = _CORE.resource("namespaces", "Namespace", namespaced=False)
SECRETS = _CORE.resource("secrets", "Secret")
SERVICE_ACCOUNTS = _CORE.resource("serviceaccounts", "ServiceAccount")
CONFIG_MAPS = _CORE.resource("configmaps", "ConfigMap")
EVENTS = _GroupVersion("events.k8s.io", "v1").resource("events", "Event")
LEASES = _GroupVersion("coordination.k8s.io", "v1").resource("leases", "Lease")
ROLES = _RBAC.resource("roles", "Role")
ROLE_BINDINGS = _RBAC.resource("rolebindings", "RoleBinding")
CLUSTER_ROLES = _RBAC.resource("clusterroles", "ClusterRole", namespaced=False)
CLUSTER_ROLE_BINDINGS = _RBAC.resource(
    "clusterrolebindings", "ClusterRoleBinding", namespaced=False
)
CUSTOM_RESOURCE_DEFINITIONS = _GroupVersion("apiextensions.k8s.io", "v1").resource(
    "customresourcedefinitions", "CustomResourceDefinition", namespaced=False
)
#: KEP-4192's migration request (beta in Kubernetes 1.35, served only where enabled).
STORAGE_VERSION_MIGRATIONS = _GroupVersion("storagemigration.k8s.io", "v1beta1").resource(
    "storageversionmigrations", "StorageVersionMigration", namespaced=False
)
CLUSTER_PROFILES = _INVENTORY.resource(c.CLUSTER_PROFILE_PLURAL, c.CLUSTER_PROFILE_KIND)
PLACEMENT_DECISIONS = _INVENTORY.resource(c.PLACEMENT_DECISION_PLURAL, c.PLACEMENT_DECISION_KIND)
CLUSTER_PROPERTIES = _GroupVersion(c.ABOUT_GROUP, c.V1BETA1).resource(
    c.CLUSTER_PROPERTY_PLURAL, c.CLUSTER_PROPERTY_KIND, namespaced=False
)
MEMBER_REPORTS = _GroupVersion(c.PROJECT_DOMAIN, c.V1ALPHA1).resource(
    c.MEMBER_REPORT_PLURAL, c.MEMBER_REPORT_KIND
)
CERTIFICATE_SIGNING_REQUESTS = _GroupVersion("certificates.k8s.io", "v1").resource(
    "certificatesigningrequests", "CertificateSigningRequest", namespaced=False
)
#: Asked by the cluster proxy of an agent's bearer token (``docs/cluster-proxy.md``).
TOKEN_REVIEWS = _GroupVersion("authentication.k8s.io", "v1").resource(
    "tokenreviews", "TokenReview", namespaced=False
)
#: Asked by the cluster proxy: may this agent identity still write its member's Lease?
SUBJECT_ACCESS_REVIEWS = _GroupVersion("authorization.k8s.io", "v1").resource(
    "subjectaccessreviews", "SubjectAccessReview", namespaced=False
)

"""The resources this project reads and writes, as :class:`Resource` values."""

from __future__ import annotations

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

NAMESPACES = Resource(
    group="", version="v1", plural="namespaces", kind="Namespace", namespaced=False
)
SECRETS = Resource(group="", version="v1", plural="secrets", kind="Secret")
SERVICE_ACCOUNTS = Resource(group="", version="v1", plural="serviceaccounts", kind="ServiceAccount")
CONFIG_MAPS = Resource(group="", version="v1", plural="configmaps", kind="ConfigMap")
EVENTS = Resource(group="events.k8s.io", version="v1", plural="events", kind="Event")
LEASES = Resource(group="coordination.k8s.io", version="v1", plural="leases", kind="Lease")
_RBAC = "rbac.authorization.k8s.io"
ROLES = Resource(group=_RBAC, version="v1", plural="roles", kind="Role")
ROLE_BINDINGS = Resource(group=_RBAC, version="v1", plural="rolebindings", kind="RoleBinding")
CLUSTER_ROLES = Resource(
    group=_RBAC, version="v1", plural="clusterroles", kind="ClusterRole", namespaced=False
)
CLUSTER_ROLE_BINDINGS = Resource(
    group=_RBAC,
    version="v1",
    plural="clusterrolebindings",
    kind="ClusterRoleBinding",
    namespaced=False,
)
CUSTOM_RESOURCE_DEFINITIONS = Resource(
    group="apiextensions.k8s.io",
    version="v1",
    plural="customresourcedefinitions",
    kind="CustomResourceDefinition",
    namespaced=False,
)
#: KEP-4192's migration request (beta in Kubernetes 1.35, served only where enabled).
STORAGE_VERSION_MIGRATIONS = Resource(
    group="storagemigration.k8s.io",
    version="v1beta1",
    plural="storageversionmigrations",
    kind="StorageVersionMigration",
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
MEMBER_REPORTS = Resource(
    group=c.PROJECT_DOMAIN,
    version=c.V1ALPHA1,
    plural=c.MEMBER_REPORT_PLURAL,
    kind=c.MEMBER_REPORT_KIND,
)
CERTIFICATE_SIGNING_REQUESTS = Resource(
    group="certificates.k8s.io",
    version="v1",
    plural="certificatesigningrequests",
    kind="CertificateSigningRequest",
    namespaced=False,
)
#: Asked by the cluster proxy of an agent's bearer token (``docs/cluster-proxy.md``).
TOKEN_REVIEWS = Resource(
    group="authentication.k8s.io",
    version="v1",
    plural="tokenreviews",
    kind="TokenReview",
    namespaced=False,
)
#: Asked by the cluster proxy: may this agent identity still write its member's Lease?
SUBJECT_ACCESS_REVIEWS = Resource(
    group="authorization.k8s.io",
    version="v1",
    plural="subjectaccessreviews",
    kind="SubjectAccessReview",
    namespaced=False,
)

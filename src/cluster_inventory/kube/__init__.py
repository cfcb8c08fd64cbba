"""The project's only door to kubernetes_asyncio.

One client factory (:func:`new_client` from a :class:`ClusterConnection`), one
server-side-apply helper (:func:`apply`), and one error type per failure kind
(:mod:`cluster_inventory.kube.errors`). Everything above this package speaks in plain
dicts, pydantic models and these types, so a move to another client library stays local.
"""

from __future__ import annotations

from cluster_inventory.kube._client import (
    ClusterConnection,
    TokenSource,
    UnauthorizedHook,
    connection_from_in_cluster,
    connection_from_kubeconfig,
    load_connection,
    new_client,
    ssl_context_for,
)
from cluster_inventory.kube._crds import CRDNotEstablishedError, ensure_crds
from cluster_inventory.kube._discovery import (
    cluster_profiles_resource,
    known_kind,
    parse_kind,
    resolve_kind,
)
from cluster_inventory.kube._k8s import ApiClient
from cluster_inventory.kube._loop import EVENT_LOOP_ENV, event_loop_factory, run
from cluster_inventory.kube._metrics import RECONCILE_RESULTS, ReconcileMetrics, collectors_for
from cluster_inventory.kube._resources import (
    Resource,
    apply,
    create,
    delete,
    get,
    get_text,
    list_objects,
    request,
)
from cluster_inventory.kube._tasks import cancel_and_wait
from cluster_inventory.kube._tokens import ServiceAccountToken, request_service_account_token
from cluster_inventory.kube.errors import (
    AlreadyExistsError,
    CertificateError,
    ConflictError,
    ForbiddenError,
    GoneError,
    InvalidError,
    KindNotFoundError,
    KubeAPIError,
    KubeConfigError,
    KubeError,
    NotFoundError,
    ServerUnavailableError,
    SourceUnavailableError,
    UnauthorizedError,
)
from cluster_inventory.kube.resources import (
    CLUSTER_PROFILES,
    CLUSTER_PROPERTIES,
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CONFIG_MAPS,
    CUSTOM_RESOURCE_DEFINITIONS,
    EVENTS,
    LEASES,
    NAMESPACES,
    PLACEMENT_DECISIONS,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
)

__all__ = [
    "CLUSTER_PROFILES",
    "CLUSTER_PROPERTIES",
    "CLUSTER_ROLES",
    "CLUSTER_ROLE_BINDINGS",
    "CONFIG_MAPS",
    "CUSTOM_RESOURCE_DEFINITIONS",
    "EVENTS",
    "EVENT_LOOP_ENV",
    "LEASES",
    "NAMESPACES",
    "PLACEMENT_DECISIONS",
    "RECONCILE_RESULTS",
    "ROLES",
    "ROLE_BINDINGS",
    "SECRETS",
    "SERVICE_ACCOUNTS",
    "AlreadyExistsError",
    "ApiClient",
    "CRDNotEstablishedError",
    "CertificateError",
    "ClusterConnection",
    "ConflictError",
    "ForbiddenError",
    "GoneError",
    "InvalidError",
    "KindNotFoundError",
    "KubeAPIError",
    "KubeConfigError",
    "KubeError",
    "NotFoundError",
    "ReconcileMetrics",
    "Resource",
    "ServerUnavailableError",
    "ServiceAccountToken",
    "SourceUnavailableError",
    "TokenSource",
    "UnauthorizedError",
    "UnauthorizedHook",
    "apply",
    "cancel_and_wait",
    "cluster_profiles_resource",
    "collectors_for",
    "connection_from_in_cluster",
    "connection_from_kubeconfig",
    "create",
    "delete",
    "ensure_crds",
    "event_loop_factory",
    "get",
    "get_text",
    "known_kind",
    "list_objects",
    "load_connection",
    "new_client",
    "parse_kind",
    "request",
    "request_service_account_token",
    "resolve_kind",
    "run",
    "ssl_context_for",
]

"""The project's only door to kubernetes_asyncio.

One client factory (:func:`new_client` from a :class:`ClusterConnection`), one
server-side-apply helper (:func:`apply`), and one error type per failure kind
(:mod:`cluster_inventory.kube.errors`). Everything above this package speaks in plain
dicts, pydantic models and these types, so a move to another client library stays local.
"""

from __future__ import annotations

from cluster_inventory.kube import (
    _aiohttp,  # noqa: F401 - first: aiohttp without the TLS contexts it builds at import
    errors,
    resources,
)
from cluster_inventory.kube._client import (
    clone_client,
    connection_from_in_cluster,
    connection_from_kubeconfig,
    load_connection,
    new_client,
)
from cluster_inventory.kube._connection import ClusterConnection
from cluster_inventory.kube._crd_plan import CRDStorageError, storage_version
from cluster_inventory.kube._crds import (
    AppliedCRD,
    CRDConflictError,
    CRDNotEstablishedError,
    FieldConflict,
    apply_crds,
    ensure_crds,
)
from cluster_inventory.kube._discovery import (
    cluster_profiles_resource,
    known_kind,
    parse_kind,
    placement_decisions_resource,
    resolve_kind,
    served_resource,
)
from cluster_inventory.kube._k8s import ApiClient
from cluster_inventory.kube._loop import EVENT_LOOP_ENV, event_loop_factory, run
from cluster_inventory.kube._metrics import (
    RECONCILE_RESULTS,
    LeaseMetrics,
    PerRegistry,
    ReconcileMetrics,
    collectors,
    collectors_for,
    metric,
)
from cluster_inventory.kube._proxy import PROXY_SCHEMES
from cluster_inventory.kube._pruning import dropped_fields
from cluster_inventory.kube._resources import (
    FieldValidation,
    Resource,
    apply,
    create,
    delete,
    get,
    get_text,
    list_objects,
    list_pages,
    replace_status,
    request,
)
from cluster_inventory.kube._storage_migration import (
    StorageMigration,
    StorageMigrationError,
    migrate_storage,
)
from cluster_inventory.kube._tasks import TaskSet, cancel_and_wait, gather_bounded
from cluster_inventory.kube._timeout import request_timeout
from cluster_inventory.kube._tls import ReloadableTLSContext, shared_ssl_context, ssl_context_for
from cluster_inventory.kube._tokens import ServiceAccountToken, request_service_account_token
from cluster_inventory.kube._transport import TokenSource, UnauthorizedHook
from cluster_inventory.kube.background import BackgroundLoop, lease_loop
from cluster_inventory.kube.backoff import Backoff, Throttle
from cluster_inventory.kube.cache import InformerCache, NamespacedInformer
from cluster_inventory.kube.errors import *  # noqa: F403 - listed once, in errors.__all__
from cluster_inventory.kube.resources import *  # noqa: F403 - listed once, in resources.__all__

__all__ = [
    "EVENT_LOOP_ENV",
    "PROXY_SCHEMES",
    "RECONCILE_RESULTS",
    "ReloadableTLSContext",
    "ApiClient",
    "AppliedCRD",
    "BackgroundLoop",
    "CRDConflictError",
    "Backoff",
    "CRDNotEstablishedError",
    "CRDStorageError",
    "ClusterConnection",
    "FieldConflict",
    "FieldValidation",
    "InformerCache",
    "LeaseMetrics",
    "NamespacedInformer",
    "PerRegistry",
    "ReconcileMetrics",
    "Resource",
    "ServiceAccountToken",
    "StorageMigration",
    "StorageMigrationError",
    "TaskSet",
    "Throttle",
    "TokenSource",
    "UnauthorizedHook",
    "apply",
    "apply_crds",
    "cancel_and_wait",
    "clone_client",
    "gather_bounded",
    "cluster_profiles_resource",
    "collectors",
    "collectors_for",
    "connection_from_in_cluster",
    "connection_from_kubeconfig",
    "create",
    "delete",
    "dropped_fields",
    "ensure_crds",
    "event_loop_factory",
    "get",
    "get_text",
    "known_kind",
    "lease_loop",
    "list_objects",
    "list_pages",
    "load_connection",
    "metric",
    "migrate_storage",
    "new_client",
    "parse_kind",
    "replace_status",
    "placement_decisions_resource",
    "request",
    "request_timeout",
    "request_service_account_token",
    "resolve_kind",
    "run",
    "served_resource",
    "shared_ssl_context",
    "ssl_context_for",
    "storage_version",
    *errors.__all__,
    *resources.__all__,
]

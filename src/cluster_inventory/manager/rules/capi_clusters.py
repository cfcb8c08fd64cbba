"""What a Cluster API ``Cluster`` and its kubeconfig Secret mean as a registration (pure).

Facts from the Cluster API contract (``sigs.k8s.io/cluster-api`` v1.13, ``api/core/v1beta2``
and ``util/secret``); :class:`~cluster_inventory.manager.sources.capi.ClusterAPISource` watches the
objects and calls :func:`cluster_registration` (``docs/manager.md``).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from cluster_inventory import _yaml, kube
from cluster_inventory.api import objects
from cluster_inventory.api.constants import (
    ANNOTATION_CLUSTERSETS,
    ANNOTATION_DISPLAY_NAME,
    CAPI_KUBECONFIG_KEY,
    CAPI_SECRET_TYPE,
    LABEL_CAPI_CLUSTER_NAME,
    LABEL_CAPI_CLUSTERSET,
    PROPERTY_CAPI_VERSION,
    PROPERTY_VALUE_MAX_LENGTH,
)
from cluster_inventory.kube.events import object_reference
from cluster_inventory.kube.informer import strip_managed_fields
from cluster_inventory.manager.rules.registration import (
    Registration,
    RegistrationError,
    check_tls_material,
    is_dns_label,
    parse_clustersets,
)

__all__ = [
    "CAPI_KUBECONFIG_KEY",
    "CAPI_SECRET_TYPE",
    "CLUSTERS",
    "LABEL_CAPI_CLUSTER_NAME",
    "PROPERTY_CAPI_VERSION",
    "cluster_registration",
    "control_plane_initialized",
    "kubeconfig_secret_name",
    "parse_capi_kubeconfig",
    "strip_unused_data",
]

#: Cluster API's ``Cluster`` (the storage version of v1.13).
CLUSTERS = kube.Resource(
    group="cluster.x-k8s.io", version="v1beta2", plural="clusters", kind="Cluster"
)


def kubeconfig_secret_name(cluster: str) -> str:
    """The Secret Cluster API writes a Cluster's kubeconfig to (``util/secret``)."""
    return f"{cluster}-kubeconfig"


def strip_unused_data(secret: dict[str, Any]) -> dict[str, Any]:
    """Keep data only of kubeconfig Secrets (CA, etcd keys never cached); no managedFields."""
    strip_managed_fields(secret)
    name = str(objects.meta(secret).get("name") or "")
    if name.endswith("-kubeconfig") or "data" not in secret:
        return secret
    return {k: v for k, v in secret.items() if k not in ("data", "stringData")}


def _placeholder(namespace: str, name: str) -> kube.ClusterConnection:
    """A connection that is never dialled: the key of a member that is not ready yet."""
    return kube.ClusterConnection(
        server=f"https://{name}.{namespace}.cluster-api.invalid", name=f"{namespace}/{name}"
    )


def parse_capi_kubeconfig(secret: Mapping[str, Any]) -> kube.ClusterConnection:
    """The connection in a Cluster API kubeconfig Secret (key ``value``, current context).

    Raises:
        RegistrationError: The key is missing, not base64, not a kubeconfig, or lacks a
            server; the error names the Secret and ``data.value``.
    """
    meta = objects.meta(secret)
    source = f"Secret {meta.get('namespace')}/{meta.get('name')}"
    field = f"data.{CAPI_KUBECONFIG_KEY}"
    raw = _mapping(secret.get("data")).get(CAPI_KUBECONFIG_KEY)
    if not raw:
        raise RegistrationError(source, field, "is missing")
    try:
        text = base64.b64decode(raw, validate=True).decode()
        doc = _yaml.load(text)
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError, yaml.YAMLError):
        raise RegistrationError(source, field, "is not a base64-encoded kubeconfig") from None
    if not isinstance(doc, Mapping):
        raise RegistrationError(source, field, "is not a kubeconfig")
    try:
        conn = kube.connection_from_kubeconfig(doc, inline_only=True)
    except kube.KubeConfigError as exc:
        raise RegistrationError(source, field, str(exc)) from None
    check_tls_material(conn, source, field)  # a bad rotation keeps the last good one
    return conn


def cluster_registration(
    cluster: Mapping[str, Any],
    connection: kube.ClusterConnection | None,
    *,
    clusterset_label: str = LABEL_CAPI_CLUSTERSET,
    default_clustersets: Sequence[str] = (),
    not_ready: tuple[str, str] | None = None,
) -> Registration | None:
    """The registration of one Cluster, or None when it names no cluster set.

    Args:
        cluster: The ``Cluster`` object.
        connection: The member connection from its kubeconfig Secret, or None if there is
            none usable (then ``not_ready`` must say why).
        clusterset_label: Label key naming the Cluster's cluster set.
        default_clustersets: Sets for a Cluster without label or annotation.
        not_ready: ``(reason, message)`` that keeps the member from being contacted.

    Raises:
        RegistrationError: The name is not a DNS-1123 label or a cluster set name is bad.
    """
    meta = objects.meta(cluster)
    name = str(meta.get("name") or "")
    namespace = str(meta.get("namespace") or "")
    source = f"Cluster {namespace}/{name}"
    labels = objects.labels_of(cluster)
    annotations = objects.annotations_of(cluster)
    if annotations.get(ANNOTATION_CLUSTERSETS):
        field = f"metadata.annotations[{ANNOTATION_CLUSTERSETS}]"
        sets = parse_clustersets(annotations[ANNOTATION_CLUSTERSETS], source, field)
    elif labels.get(clusterset_label):
        field = f"metadata.labels[{clusterset_label}]"
        sets = parse_clustersets(labels[clusterset_label], source, field)
    elif default_clustersets:
        sets = tuple(default_clustersets)
    else:
        return None
    if not is_dns_label(name):
        raise RegistrationError(source, "metadata.name", "must be a DNS-1123 label (<= 63)")
    version = str(_mapping(objects.spec(cluster).get("topology")).get("version") or "")
    if len(version) > PROPERTY_VALUE_MAX_LENGTH:
        # A property value past the CRD's bound would make every status write of the profile
        # fail; Cluster API's own webhook (when installed) only allows semantic versions.
        raise RegistrationError(
            source, "spec.topology.version", f"longer than {PROPERTY_VALUE_MAX_LENGTH} characters"
        )
    return Registration(
        name=name,
        clustersets=sets,
        connection=connection if connection is not None else _placeholder(namespace, name),
        display_name=str(annotations.get(ANNOTATION_DISPLAY_NAME) or name),
        source=source,
        regarding=object_reference(cluster),
        properties=((PROPERTY_CAPI_VERSION, version),) if version else (),
        not_ready=None if connection is not None else not_ready,
    )


def control_plane_initialized(cluster: Mapping[str, Any]) -> bool:
    """True once ``status.initialization.controlPlaneInitialized`` (v1beta2) is true."""
    init = _mapping(objects.status(cluster).get("initialization"))
    return init.get("controlPlaneInitialized") is True


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else empty (a field of another type reads as absent)."""
    return value if isinstance(value, Mapping) else {}

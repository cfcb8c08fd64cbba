"""Typed raw shapes: the dicts the API server, a kubeconfig and an exec plugin exchange.

Where a dict crosses a public boundary its shape is said in the type, not in prose, as kopf's
``RawBody`` and ``RawMeta`` do. Every shape is ``total=False``: an object written by someone
else may lack any field, so a reader still checks (:mod:`cluster_inventory.api.objects` reads
them without raising); a writer gets its keys checked by mypy. Keys with a hyphen (kubeconfig's
``certificate-authority-data``) use the functional form. The pydantic models of
:mod:`cluster_inventory.api` validate the same objects; these types cost nothing at run time.

Importing this module costs the ``typing`` module, so the exec plugins' cold path (the
:mod:`cluster_inventory.kubeconfig` loader, :mod:`cluster_inventory.credentials`) imports it
under ``TYPE_CHECKING`` only. It sits below every layer: anything may import it.
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = [
    "RawAccessProvider",
    "RawCluster",
    "RawClusterDecision",
    "RawClusterProfile",
    "RawClusterProfileReference",
    "RawClusterProfileSpec",
    "RawClusterProfileStatus",
    "RawCondition",
    "RawContext",
    "RawExec",
    "RawExecCluster",
    "RawExecCredential",
    "RawExecCredentialSpec",
    "RawExecCredentialStatus",
    "RawKubeconfig",
    "RawMeta",
    "RawNamedCluster",
    "RawNamedContext",
    "RawNamedExtension",
    "RawNamedUser",
    "RawObject",
    "RawOwnerReference",
    "RawPlacementDecision",
    "RawProperty",
    "RawUser",
]


# --- Any Kubernetes object (apimachinery's ObjectMeta, as JSON) ---


class RawOwnerReference(TypedDict, total=False):
    """``metadata.ownerReferences[]``."""

    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


class RawMeta(TypedDict, total=False):
    """``metadata`` of any object."""

    name: str
    generateName: str
    namespace: str
    uid: str
    resourceVersion: str
    generation: int
    creationTimestamp: str
    deletionTimestamp: str
    deletionGracePeriodSeconds: int
    labels: dict[str, str]
    annotations: dict[str, str]
    finalizers: list[str]
    ownerReferences: list[RawOwnerReference]
    managedFields: list[dict[str, Any]]


class RawObject(TypedDict, total=False):
    """Any object as the server sends it; its kind's own fields are read as ``Mapping``."""

    apiVersion: str
    kind: str
    metadata: RawMeta


class RawCondition(TypedDict, total=False):
    """``status.conditions[]`` (apimachinery's ``metav1.Condition``)."""

    type: str
    status: str
    reason: str
    message: str
    observedGeneration: int
    lastTransitionTime: str


# --- A kubeconfig's pieces (clientcmd's ``api/v1`` types) ---


class RawNamedExtension(TypedDict, total=False):
    """``extensions[]`` of a kubeconfig cluster; the exec one holds the plugin's config."""

    name: str
    extension: Any


#: A kubeconfig ``clusters[].cluster``, and a ClusterProfile access provider's ``cluster``.
RawCluster = TypedDict(
    "RawCluster",
    {
        "server": str,
        "tls-server-name": str,
        "insecure-skip-tls-verify": bool,
        "certificate-authority": str,
        "certificate-authority-data": str,
        "proxy-url": str,
        "disable-compression": bool,
        "extensions": list[RawNamedExtension],
    },
    total=False,
)


class RawExec(TypedDict, total=False):
    """``users[].user.exec``: how to run a credential plugin."""

    apiVersion: str
    command: str
    args: list[str]
    env: list[dict[str, str]] | None
    installHint: str
    provideClusterInfo: bool
    interactiveMode: str


#: ``users[].user``.
RawUser = TypedDict(
    "RawUser",
    {
        "token": str,
        "tokenFile": str,
        "client-certificate": str,
        "client-certificate-data": str,
        "client-key": str,
        "client-key-data": str,
        "exec": RawExec,
        "auth-provider": dict[str, Any],
    },
    total=False,
)


class RawContext(TypedDict, total=False):
    """``contexts[].context``."""

    cluster: str
    user: str
    namespace: str


class RawNamedCluster(TypedDict, total=False):
    """``clusters[]``."""

    name: str
    cluster: RawCluster


class RawNamedUser(TypedDict, total=False):
    """``users[]``."""

    name: str
    user: RawUser


class RawNamedContext(TypedDict, total=False):
    """``contexts[]``."""

    name: str
    context: RawContext


#: A ``kind: Config`` document.
RawKubeconfig = TypedDict(
    "RawKubeconfig",
    {
        "apiVersion": str,
        "kind": str,
        "clusters": list[RawNamedCluster],
        "users": list[RawNamedUser],
        "contexts": list[RawNamedContext],
        "current-context": str,
        "preferences": dict[str, Any],
    },
    total=False,
)


# --- ExecCredential (client.authentication.k8s.io/v1) ---


#: ``ExecCredential.spec.cluster``: client-go's ``clientauthentication.Cluster``, a kubeconfig
#: cluster whose ``config`` is the ``client.authentication.k8s.io/exec`` extension's payload.
RawExecCluster = TypedDict(
    "RawExecCluster",
    {
        "server": str,
        "tls-server-name": str,
        "insecure-skip-tls-verify": bool,
        "certificate-authority-data": str,
        "proxy-url": str,
        "disable-compression": bool,
        "config": Any,
    },
    total=False,
)


class RawExecCredentialSpec(TypedDict, total=False):
    """What a plugin is told (``KUBERNETES_EXEC_INFO``): the cluster, and never interactive."""

    cluster: RawExecCluster
    interactive: bool


class RawExecCredentialStatus(TypedDict, total=False):
    """What a plugin prints: a token or a client certificate and key, and when it expires."""

    token: str
    clientCertificateData: str
    clientKeyData: str
    expirationTimestamp: str


class RawExecCredential(TypedDict, total=False):
    """An ``ExecCredential``, in (``spec``) or out (``status``) of a plugin."""

    apiVersion: str
    kind: str
    spec: RawExecCredentialSpec
    status: RawExecCredentialStatus


# --- The Cluster Inventory API (multicluster.x-k8s.io) ---


class RawClusterProfileSpec(TypedDict, total=False):
    """``ClusterProfile.spec``."""

    displayName: str
    clusterManager: dict[str, str]


class RawProperty(TypedDict, total=False):
    """``ClusterProfile.status.properties[]``."""

    name: str
    value: str
    lastObservedTime: str


class RawAccessProvider(TypedDict, total=False):
    """``status.accessProviders[]`` (and v1alpha1's deprecated ``credentialProviders[]``)."""

    name: str
    cluster: RawCluster


class RawClusterProfileStatus(TypedDict, total=False):
    """``ClusterProfile.status``."""

    conditions: list[RawCondition]
    version: dict[str, str]
    properties: list[RawProperty]
    accessProviders: list[RawAccessProvider]
    credentialProviders: list[RawAccessProvider]


class RawClusterProfile(RawObject, total=False):
    """A ``ClusterProfile`` (v1alpha1 or v1alpha2) as the server sends it."""

    spec: RawClusterProfileSpec
    status: RawClusterProfileStatus


class RawClusterProfileReference(TypedDict, total=False):
    """``decisions[].clusterProfileRef``."""

    name: str
    namespace: str


class RawClusterDecision(TypedDict, total=False):
    """``PlacementDecision.decisions[]``."""

    clusterProfileRef: RawClusterProfileReference
    reason: str


class RawPlacementDecision(RawObject, total=False):
    """A ``PlacementDecision`` slice as the server sends it."""

    decisions: list[RawClusterDecision]
    schedulerName: str

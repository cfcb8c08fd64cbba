"""Names fixed by the Cluster Inventory API, KEP-4322, KEP-5339, KEP-5313 and KEP-2149.

Values match the upstream Go constants (``sigs.k8s.io/cluster-inventory-api/apis/v1alpha1``)
where those exist; ``Joined`` and the PlacementDecision revision label exist only in KEP text.
"""

from __future__ import annotations

__all__ = [
    "ABOUT_GROUP",
    "ACCESS_PROVIDER_SECRETREADER",
    "CLUSTER_PROFILE_CRD",
    "CLUSTER_PROFILE_KIND",
    "CLUSTER_PROFILE_PLURAL",
    "CLUSTER_PROPERTY_CRD",
    "CLUSTER_PROPERTY_KIND",
    "CLUSTER_PROPERTY_PLURAL",
    "CONDITION_CONTROL_PLANE_HEALTHY",
    "CONDITION_JOINED",
    "EXTENSION_ADDITIONAL_ARGS",
    "EXTENSION_ADDITIONAL_ENVS",
    "EXTENSION_EXEC",
    "GROUP",
    "LABEL_CLUSTER_MANAGER",
    "LABEL_CLUSTER_SET",
    "LABEL_DECISION_INDEX",
    "LABEL_DECISION_KEY",
    "LABEL_DECISION_REVISION",
    "LABEL_INVENTORY_MEMBER_ID",
    "LABEL_PLACEMENT_KEY",
    "PLACEMENT_DECISION_CRD",
    "PLACEMENT_DECISION_KIND",
    "PLACEMENT_DECISION_MAX_DECISIONS",
    "PLACEMENT_DECISION_PLURAL",
    "PROJECT_DOMAIN",
    "PROPERTY_CLUSTER_ID",
    "PROPERTY_CLUSTER_SET",
    "PROPERTY_NAME_MAX_LENGTH",
    "PROPERTY_VALUE_MAX_LENGTH",
    "REQUEST_TIMEOUT",
    "SECRET_EXPIRATION_KEY",
    "SECRET_TOKEN_KEY",
    "V1ALPHA1",
    "V1ALPHA2",
    "V1BETA1",
]

#: API group of ClusterProfile and PlacementDecision.
GROUP = "multicluster.x-k8s.io"
#: API group of ClusterProperty (KEP-2149).
ABOUT_GROUP = "about.k8s.io"
V1ALPHA1 = "v1alpha1"
#: Served upstream from cluster-inventory-api v0.2.0 on; v1alpha1 stays the storage version.
V1ALPHA2 = "v1alpha2"
#: ClusterProperty's storage version.
V1BETA1 = "v1beta1"

CLUSTER_PROFILE_KIND = "ClusterProfile"
CLUSTER_PROFILE_PLURAL = "clusterprofiles"
CLUSTER_PROFILE_CRD = f"{CLUSTER_PROFILE_PLURAL}.{GROUP}"
PLACEMENT_DECISION_KIND = "PlacementDecision"
PLACEMENT_DECISION_PLURAL = "placementdecisions"
PLACEMENT_DECISION_CRD = f"{PLACEMENT_DECISION_PLURAL}.{GROUP}"
CLUSTER_PROPERTY_KIND = "ClusterProperty"
CLUSTER_PROPERTY_PLURAL = "clusterproperties"
CLUSTER_PROPERTY_CRD = f"{CLUSTER_PROPERTY_PLURAL}.{ABOUT_GROUP}"

#: On a ClusterProfile: the name of the cluster manager that owns it (must equal
#: ``spec.clusterManager.name``).
LABEL_CLUSTER_MANAGER = "x-k8s.io/cluster-manager"
#: On an inventory *namespace*: the ClusterSet whose members it holds.
LABEL_CLUSTER_SET = "multicluster.x-k8s.io/clusterset"
#: On a ClusterProfile: a stable, non-empty id shared by every profile of the same member
#: cluster on a hub (cluster-inventory-api #83).
LABEL_INVENTORY_MEMBER_ID = "multicluster.x-k8s.io/inventory-member-id"

#: Condition: the member's control plane is healthy.
CONDITION_CONTROL_PLANE_HEALTHY = "ControlPlaneHealthy"
#: Condition: the member has joined the inventory (KEP-4322 text; no Go constant).
CONDITION_JOINED = "Joined"

#: The extension of ``accessProviders[].cluster.extensions`` whose payload becomes the exec
#: plugin's ``spec.cluster.config`` (client-go's reserved name).
EXTENSION_EXEC = "client.authentication.k8s.io/exec"
#: Extension carrying extra exec arguments, applied only under the consumer's policy.
EXTENSION_ADDITIONAL_ARGS = "clusterprofiles.multicluster.x-k8s.io/exec/additional-args"
#: Extension carrying extra exec environment variables, applied only under the consumer's policy.
EXTENSION_ADDITIONAL_ENVS = "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs"
#: The access provider name of the upstream ``secretreader`` plugin.
ACCESS_PROVIDER_SECRETREADER = "secretreader"

#: ClusterProfile ``status.properties[].value`` limit (a ClusterProperty may be far longer).
PROPERTY_VALUE_MAX_LENGTH = 1024
#: ClusterProfile ``status.properties[].name`` limit.
PROPERTY_NAME_MAX_LENGTH = 253
#: Well-known ClusterProperty: the cluster's id within its ClusterSet.
PROPERTY_CLUSTER_ID = "cluster.clusterset.k8s.io"
#: Well-known ClusterProperty: the ClusterSet the cluster belongs to.
PROPERTY_CLUSTER_SET = "clusterset.k8s.io"

#: PlacementDecision: the same on every slice of one decision.
LABEL_DECISION_KEY = "multicluster.x-k8s.io/decision-key"
#: PlacementDecision: order of a slice, from 0.
LABEL_DECISION_INDEX = "multicluster.x-k8s.io/decision-index"
#: PlacementDecision: links a decision to its workload.
LABEL_PLACEMENT_KEY = "multicluster.x-k8s.io/placement-key"
#: PlacementDecision: groups slices of one revision (KEP-5313 text; no Go constant).
LABEL_DECISION_REVISION = "multicluster.x-k8s.io/decision-revision"
#: At most this many clusters per PlacementDecision slice.
PLACEMENT_DECISION_MAX_DECISIONS = 100

#: Domain of this project's own labels and annotations (never a ``k8s.io`` one).
PROJECT_DOMAIN = "cluster-inventory.dev"
#: Label naming the sync instance that wrote an object (beside ``app.kubernetes.io/managed-by``
#: naming the sync): two syncs of one kind (say two MultiKueue configs) each keep only theirs.
LABEL_SYNC_INSTANCE = f"{PROJECT_DOMAIN}/sync-instance"
#: The instance name of a sync that is not given one.
DEFAULT_SYNC_INSTANCE = "default"

#: Key of a consumer token Secret (``<inventory-ns>/<profile>``) holding the bearer token: the
#: upstream ``secretreader`` contract (``SecretTokenKey``).
SECRET_TOKEN_KEY = "token"  # noqa: S105 - a key name
#: Key beside it holding the token's expiry as RFC 3339 (our addition; upstream ignores it).
SECRET_EXPIRATION_KEY = "expirationTimestamp"  # noqa: S105 - a key name
#: Seconds any client of ours (every command, every long-running process, the exec plugins)
#: waits for one answer from an API server before it calls the server unreachable
#: (docs/cli.md, "Errors and exit codes"). Watches are streams and have their own timeouts.
REQUEST_TIMEOUT = 30.0

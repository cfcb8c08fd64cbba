"""Every wire name: the API's, the ones we read from other projects, and our own.

The Cluster Inventory API's names (KEP-4322, KEP-5339, KEP-5313 and KEP-2149) match the
upstream Go constants (``sigs.k8s.io/cluster-inventory-api/apis/v1alpha1``) where those exist;
``Joined`` and the PlacementDecision revision label exist only in KEP text. Below them come the
names of other projects we read or write (Argo CD, Cluster API, KEP-3659 ApplySets) and this
project's own labels, annotations, Secret types, field managers and Event reporting
controllers, all under :data:`PROJECT_DOMAIN` (never ``k8s.io``). A name on the wire is
written here once, so a reader finds what an object on a hub carries in one place.
"""

from __future__ import annotations

__all__ = [
    "ABOUT_GROUP",
    "ACCESS_PROVIDER_SECRETREADER",
    "AGENT_ACCEPTANCE_GROUP_PREFIX",
    "AGENT_BOOTSTRAP_ACCEPTANCE_GROUP_PREFIX",
    "AGENT_BOOTSTRAP_GROUP",
    "AGENT_BOOTSTRAP_USER_PREFIX",
    "AGENT_CLUSTER_ROLE_PREFIX",
    "AGENT_CREDENTIAL_SECRET_TYPE",
    "AGENT_CSR_USAGES",
    "AGENT_GROUP",
    "AGENT_OBJECT_PREFIX",
    "AGENT_USER_PREFIX",
    "ANNOTATION_ACCEPTANCE",
    "ANNOTATION_ACCESS_PROVIDER",
    "ANNOTATION_CLUSTERSETS",
    "ANNOTATION_CONTEXT",
    "ANNOTATION_DECISION_SLICES",
    "ANNOTATION_DISPLAY_NAME",
    "ANNOTATION_FINGERPRINT",
    "ANNOTATION_MEMBER_ROLE",
    "ANNOTATION_PROFILE",
    "ANNOTATION_REGISTRATION_MODE",
    "ANNOTATION_SHARD_HOLDER",
    "ANNOTATION_SYNCED_FROM",
    "ANNOTATION_TOKEN_EXPIRES",
    "ANNOTATION_TOKEN_GRANT",
    "ANNOTATION_TOKEN_ISSUED",
    "APPLYSET_GROUP_KINDS",
    "APPLYSET_ID_LABEL",
    "APPLYSET_NAMESPACES",
    "APPLYSET_PART_OF",
    "APPLYSET_TOOLING",
    "CAPI_KUBECONFIG_KEY",
    "CAPI_SECRET_TYPE",
    "CLUSTERSET_BIND_SUBRESOURCE",
    "CLUSTERSET_BIND_VERB",
    "CLUSTERSET_RESOURCE",
    "CLUSTER_PROFILE_CRD",
    "CLUSTER_PROFILE_KIND",
    "CLUSTER_PROFILE_PLURAL",
    "CLUSTER_PROPERTY_CRD",
    "CLUSTER_PROPERTY_KIND",
    "CLUSTER_PROPERTY_PLURAL",
    "CONDITION_CONTROL_PLANE_HEALTHY",
    "CONDITION_JOINED",
    "CONDITION_PROPERTIES_SYNCED",
    "CONDITION_REPORT_VALID",
    "CONDITION_STORAGE_MIGRATING",
    "DEFAULT_CONSUMER_SERVICE_ACCOUNT",
    "DEFAULT_SYNC_INSTANCE",
    "EXTENSION_ADDITIONAL_ARGS",
    "EXTENSION_ADDITIONAL_ENVS",
    "EXTENSION_EXEC",
    "FIELD_MANAGER_AGENT",
    "FIELD_MANAGER_APPLY",
    "FIELD_MANAGER_ARGOCD",
    "FIELD_MANAGER_CLI",
    "FIELD_MANAGER_CLUSTER_MANAGER",
    "FIELD_MANAGER_CONFIGMAP_SYNC",
    "FIELD_MANAGER_CRDS",
    "FIELD_MANAGER_DEMO",
    "FIELD_MANAGER_MIRROR",
    "FIELD_MANAGER_MULTIKUEUE",
    "FIELD_MANAGER_PLACEMENT",
    "FIELD_MANAGER_SHARD",
    "FIELD_MANAGER_STORAGE_MIGRATION",
    "GROUP",
    "LABEL_AGENT",
    "LABEL_AGENT_BOOTSTRAP",
    "LABEL_ARGOCD_SECRET_TYPE",
    "LABEL_CAPI_CLUSTERSET",
    "LABEL_CAPI_CLUSTER_NAME",
    "LABEL_CLUSTER_MANAGER",
    "LABEL_CLUSTER_SET",
    "LABEL_DECISION_INDEX",
    "LABEL_DECISION_KEY",
    "LABEL_DECISION_REVISION",
    "LABEL_DELIVERY",
    "LABEL_INVENTORY",
    "LABEL_INVENTORY_MEMBER_ID",
    "LABEL_MANAGED_BY",
    "LABEL_PLACEMENT_KEY",
    "LABEL_PROFILE_NAMESPACE",
    "LABEL_REGISTRATION",
    "LABEL_SHARD_GROUP",
    "LABEL_SYNC_INSTANCE",
    "LABEL_TOKEN_FOR",
    "MEMBER_REPORT_CRD",
    "MEMBER_REPORT_KIND",
    "MEMBER_REPORT_PLURAL",
    "METRIC_PROFILE_CONDITION",
    "METRIC_PROFILE_CONDITION_REASON",
    "METRIC_PROFILE_INFO",
    "PLACEMENT_DECISION_CRD",
    "PLACEMENT_DECISION_KIND",
    "PLACEMENT_DECISION_MAX_DECISIONS",
    "PLACEMENT_DECISION_PLURAL",
    "PLACEMENT_SCHEDULER_NAME",
    "PROFILE_CONDITION_STATUSES",
    "PROJECT_DOMAIN",
    "PROPERTY_CAPI_VERSION",
    "PROPERTY_CLUSTER_ID",
    "PROPERTY_CLUSTER_SET",
    "PROPERTY_NAME_MAX_LENGTH",
    "PROPERTY_VALUE_MAX_LENGTH",
    "REASON_AGENT_HEARTBEAT_STALE",
    "REASON_AGENT_NOT_REPORTED",
    "REASON_AGENT_REPORTED",
    "REASON_AGENT_REPORTING",
    "REASON_INVALID_REPORT_FIELD",
    "REASON_MEMBER_ROLE_NOT_ALLOWED",
    "REASON_MIGRATION_FAILED",
    "REASON_MIGRATION_RUNNING",
    "REASON_MIGRATION_SUCCEEDED",
    "REASON_REPORT_VALID",
    "REGISTRATION_KUBECONFIG_KEY",
    "REGISTRATION_MODE_AGENT",
    "REGISTRATION_SECRET_TYPE",
    "REPORTING_CONTROLLER_ARGOCD",
    "REPORTING_CONTROLLER_MANAGER",
    "REPORTING_CONTROLLER_MIRROR",
    "REPORTING_CONTROLLER_MULTIKUEUE",
    "REQUEST_TIMEOUT",
    "REQUEST_TIMEOUT_ENV",
    "SECRET_EXPIRATION_KEY",
    "SECRET_TOKEN_KEY",
    "SIGNER_KUBE_APISERVER_CLIENT",
    "TOKEN_SECRET_TYPE",
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

#: A CRD's condition while its objects are rewritten into a new storage version
#: (apiextensions/v1 ``StorageMigrating``, set by KEP-4192's migration runner and by
#: ``crds migrate``); ``observedGeneration`` is the CRD generation the migration started at.
CONDITION_STORAGE_MIGRATING = "StorageMigrating"
#: Reasons of ``StorageMigrating``, the in-tree migration runner's words.
REASON_MIGRATION_RUNNING = "MigrationRunning"
REASON_MIGRATION_SUCCEEDED = "MigrationSucceeded"
REASON_MIGRATION_FAILED = "MigrationFailed"

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

#: Key of a consumer token Secret (``<inventory-ns>/<profile>``) holding the bearer token: the
#: upstream ``secretreader`` contract (``SecretTokenKey``).
SECRET_TOKEN_KEY = "token"  # noqa: S105 - a key name
#: Key beside it holding the token's expiry as RFC 3339 (our addition; upstream ignores it).
SECRET_EXPIRATION_KEY = "expirationTimestamp"  # noqa: S105 - a key name
#: Seconds any client of ours (every command, every long-running process, the exec plugins)
#: waits for one answer from an API server before it calls the server unreachable
#: (docs/cli.md, "Errors and exit codes"). Watches are streams and have their own timeouts.
REQUEST_TIMEOUT = 30.0
#: The environment variable that overrides :data:`REQUEST_TIMEOUT` (seconds) for the
#: commands and processes of this project; the CLI's ``--request-timeout`` sets it.
REQUEST_TIMEOUT_ENV = "CLUSTER_INVENTORY_REQUEST_TIMEOUT"

# Names of other projects, read or written as they define them.

#: The built-in signer of client certificates kube-apiserver trusts (``certificates.k8s.io``).
SIGNER_KUBE_APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client"
#: Kubernetes' recommended label naming the tool that manages an object: the value is our
#: field manager on sync targets, the cluster manager's name on member ServiceAccounts.
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
#: Argo CD's label selecting cluster Secrets (value ``cluster``).
LABEL_ARGOCD_SECRET_TYPE = "argocd.argoproj.io/secret-type"  # noqa: S105 - a label key
#: Type of the Secrets Cluster API writes (kubeconfig, CA, etcd ...).
CAPI_SECRET_TYPE = "cluster.x-k8s.io/secret"  # noqa: S105 - a type name, not a secret
#: Label on those Secrets naming their Cluster.
LABEL_CAPI_CLUSTER_NAME = "cluster.x-k8s.io/cluster-name"
#: Key of Cluster API's ``<cluster>-kubeconfig`` Secret holding the admin kubeconfig.
CAPI_KUBECONFIG_KEY = "value"
#: KEP-3659 ApplySet names (kubectl's ``applyset.kubernetes.io/...``): on the parent, its id.
APPLYSET_ID_LABEL = "applyset.kubernetes.io/id"
#: On each member object of an ApplySet: the parent's id.
APPLYSET_PART_OF = "applyset.kubernetes.io/part-of"
#: On the parent: the tool that owns the ApplySet.
APPLYSET_TOOLING = "applyset.kubernetes.io/tooling"
#: On the parent: the group-kinds its members have.
APPLYSET_GROUP_KINDS = "applyset.kubernetes.io/contains-group-kinds"
#: On the parent: namespaces beyond its own that hold members.
APPLYSET_NAMESPACES = "applyset.kubernetes.io/additional-namespaces"

# This project's names.

#: Domain of this project's own labels and annotations (never a ``k8s.io`` one).
PROJECT_DOMAIN = "cluster-inventory.dev"

#: Kind, plural and CRD name of the report a pull-mode member's agent writes (``docs/agent.md``;
#: this project's own group, the project domain).
MEMBER_REPORT_KIND = "MemberReport"
MEMBER_REPORT_PLURAL = "memberreports"
MEMBER_REPORT_CRD = f"{MEMBER_REPORT_PLURAL}.{PROJECT_DOMAIN}"
#: On a registration Secret: how the hub reaches the member; ``agent`` for a pull-mode member
#: (no ``kubeconfig`` key: the hub has no route to it), absent for a probed member.
ANNOTATION_REGISTRATION_MODE = f"{PROJECT_DOMAIN}/registration-mode"
REGISTRATION_MODE_AGENT = "agent"
#: On an agent's CertificateSigningRequests: the member it asks for.
LABEL_AGENT = f"{PROJECT_DOMAIN}/agent"
#: Subject of an agent's client certificate: ``CN=<prefix><member>``, ``O=<group>`` and
#: ``O=`` its acceptance's group (``AGENT_ACCEPTANCE_GROUP_PREFIX``).
AGENT_USER_PREFIX = "cluster-inventory:agent:"
AGENT_GROUP = "cluster-inventory:agents"
#: Field manager of the agent's MemberReport status and heartbeat Lease writes.
FIELD_MANAGER_AGENT = "cluster-inventory-agent"
#: Prefix of an agent's CSR name (``<prefix><member>-<acceptance id>``) and of its Role and
#: RoleBinding on the hub (``<prefix><member>``).
AGENT_OBJECT_PREFIX = "cluster-inventory-agent-"
#: Type of an agent member's credential Secret on the hub (``<prefix><member>-credential``):
#: the consumer token its agent mints on the member, which the cluster manager copies into
#: each ``<inventory>/<profile>`` token Secret.
AGENT_CREDENTIAL_SECRET_TYPE = f"{PROJECT_DOMAIN}/agent-credential"
#: The member ServiceAccount an agent mints consumer tokens for, by default (the chart's).
DEFAULT_CONSUMER_SERVICE_ACCOUNT = "cluster-inventory-consumer"
#: ``usages`` of an agent's CSR, exactly (an ECDSA key: no key encipherment).
AGENT_CSR_USAGES = ("digital signature", "client auth")
#: Every bootstrap certificate's group (``manager bootstrap-kubeconfig``); the approver
#: takes a first CSR only from a requester in it.
AGENT_BOOTSTRAP_GROUP = "cluster-inventory:agent-bootstrappers"
#: User name of a member's bootstrap certificate: ``CN=<prefix><member>``.
AGENT_BOOTSTRAP_USER_PREFIX = "cluster-inventory:agent-bootstrap:"
#: On an agent-mode registration Secret: the id of the member's current acceptance
#: (``manager accept``; a new one after each ``reject``).
ANNOTATION_ACCEPTANCE = f"{PROJECT_DOMAIN}/acceptance"
#: Group of one acceptance's agent certificates: ``<prefix><member>:<acceptance id>``; the
#: hub's RBAC for the agent is bound to it, and to nothing that outlives the acceptance.
AGENT_ACCEPTANCE_GROUP_PREFIX = "cluster-inventory:acceptance:"
#: Group of one acceptance's bootstrap certificates: ``<prefix><member>:<acceptance id>``.
AGENT_BOOTSTRAP_ACCEPTANCE_GROUP_PREFIX = "cluster-inventory:bootstrap:"
#: Prefix of the ClusterRole and ClusterRoleBinding of one accepted member (its CSRs):
#: ``<prefix><namespace>:<member>``.
AGENT_CLUSTER_ROLE_PREFIX = "cluster-inventory-agent:"
#: On a bootstrap certificate's CSR (``manager bootstrap-kubeconfig``): who it is for.
LABEL_AGENT_BOOTSTRAP = f"{PROJECT_DOMAIN}/agent-bootstrap"

#: On a registration Secret: ``"true"`` marks it as one.
LABEL_REGISTRATION = f"{PROJECT_DOMAIN}/registration"
#: Type of registration Secrets.
REGISTRATION_SECRET_TYPE = f"{PROJECT_DOMAIN}/registration"
#: Key of a registration Secret holding the member kubeconfig.
REGISTRATION_KUBECONFIG_KEY = "kubeconfig"
#: On a registration Secret: comma-separated cluster sets the member joins.
ANNOTATION_CLUSTERSETS = f"{PROJECT_DOMAIN}/clustersets"
#: On a registration Secret: the kubeconfig context to use (default: current-context).
ANNOTATION_CONTEXT = f"{PROJECT_DOMAIN}/context"
#: On a registration Secret: the profile's ``spec.displayName`` (default: the member name).
ANNOTATION_DISPLAY_NAME = f"{PROJECT_DOMAIN}/display-name"
#: On a Cluster API ``Cluster``: the cluster set it joins (the default key; configurable).
LABEL_CAPI_CLUSTERSET = f"{PROJECT_DOMAIN}/clusterset"
#: ClusterProperty carrying a Cluster API Cluster's declared version (``spec.topology.version``).
PROPERTY_CAPI_VERSION = f"version.cluster-api.{PROJECT_DOMAIN}"
#: On an inventory namespace: the member ClusterRole its consumers ask for; they get it only if
#: the cluster manager allows it for the namespace's cluster set (default: ``view`` only).
ANNOTATION_MEMBER_ROLE = f"{PROJECT_DOMAIN}/member-cluster-role"
#: The virtual resource of the bind check (no API serves it; RBAC and the authorizer know it
#: by name): ``create`` on ``clustersets/bind`` in group :data:`PROJECT_DOMAIN`, named after a
#: cluster set, lets a hub user bind a namespace to that set (label
#: :data:`LABEL_CLUSTER_SET`) and choose its member role among those the cluster manager allows
#: for the set (:data:`ANNOTATION_MEMBER_ROLE`). The chart's ValidatingAdmissionPolicy asks the
#: authorizer for it on every such Namespace change, as OCM's webhook asks for ``create`` on
#: ``managedclustersets/bind`` before a ManagedClusterSetBinding (docs/manager.md).
CLUSTERSET_RESOURCE = "clustersets"
CLUSTERSET_BIND_SUBRESOURCE = "bind"
CLUSTERSET_BIND_VERB = "create"
#: Reason of the Warning Event on an inventory Namespace whose member role the cluster manager
#: does not allow for its cluster set (its consumers get the set's default role, or none).
REASON_MEMBER_ROLE_NOT_ALLOWED = "MemberRoleNotAllowed"
#: On a ClusterProfile of a sharded cluster manager: the replica that writes its status (the
#: fence; every write is conditional on the profile's resourceVersion, docs/scale.md).
ANNOTATION_SHARD_HOLDER = f"{PROJECT_DOMAIN}/shard-holder"
#: On every replica Lease: the shard group it belongs to.
LABEL_SHARD_GROUP = f"{PROJECT_DOMAIN}/shard-group"
#: On a consumer token Secret: the profile it serves.
LABEL_TOKEN_FOR = f"{PROJECT_DOMAIN}/token-for"
#: On a consumer token Secret: when its token was minted and when it expires (RFC 3339), and
#: the grant it was minted under (``<member id>:<member role>``). The hub cache holds the
#: Secrets' metadata only: a replica taking the profile over (or restarting) keeps a token whose
#: grant is unchanged until its rotation is due instead of minting again (docs/scale.md).
ANNOTATION_TOKEN_ISSUED = f"{PROJECT_DOMAIN}/token-issued"
ANNOTATION_TOKEN_EXPIRES = f"{PROJECT_DOMAIN}/token-expires"
ANNOTATION_TOKEN_GRANT = f"{PROJECT_DOMAIN}/token-grant"
#: Type of consumer token Secrets (the secretreader contract only needs key ``token``).
TOKEN_SECRET_TYPE = f"{PROJECT_DOMAIN}/member-token"
#: On member-side ServiceAccounts and bindings: the hub inventory namespace they serve.
LABEL_INVENTORY = f"{PROJECT_DOMAIN}/inventory"
#: Condition: every ClusterProperty of the member is mirrored into ``status.properties``.
CONDITION_PROPERTIES_SYNCED = f"{PROJECT_DOMAIN}/PropertiesSynced"
#: Condition on an agent member's profiles: every field of its agent's MemberReport was
#: copied (True), or one was refused and its last good value kept (False; the message names
#: each field and what is wrong with it). Its reasons, and the Warning Event's on the report:
CONDITION_REPORT_VALID = f"{PROJECT_DOMAIN}/ReportValid"
REASON_REPORT_VALID = "ReportFieldsValid"
REASON_INVALID_REPORT_FIELD = "InvalidReportField"
#: ``ControlPlaneHealthy`` reason of an agent member whose agent gives none (or one refused).
REASON_AGENT_REPORTED = "AgentReported"
#: Reasons of an agent member's ``Joined`` and ``ControlPlaneHealthy`` (docs/agent.md, "The
#: hub side"): it reports; it has not reported yet; its heartbeat Lease went stale. A reader
#: tells a pull-mode member from a probed one by them (the dashboard's member page).
REASON_AGENT_REPORTING = "AgentReporting"
REASON_AGENT_NOT_REPORTED = "AgentNotReported"
REASON_AGENT_HEARTBEAT_STALE = "AgentHeartbeatStale"

#: Label naming the sync instance that wrote an object (beside ``app.kubernetes.io/managed-by``
#: naming the sync): two syncs of one kind (say two MultiKueue configs) each keep only theirs.
LABEL_SYNC_INSTANCE = f"{PROJECT_DOMAIN}/sync-instance"
#: The instance name of a sync that is not given one.
DEFAULT_SYNC_INSTANCE = "default"
#: On a sync target: the source profile, ``namespace/name`` (an annotation: a label value is
#: limited to 63 bytes, a profile name is not).
ANNOTATION_PROFILE = f"{PROJECT_DOMAIN}/cluster-profile"
#: On a sync target: the fingerprint of the rendered object (rewritten only on change).
ANNOTATION_FINGERPRINT = f"{PROJECT_DOMAIN}/fingerprint"
#: On an Argo CD cluster Secret: the source profile's inventory namespace (63 bytes fit a
#: namespace name).
LABEL_PROFILE_NAMESPACE = f"{PROJECT_DOMAIN}/profile-namespace"
#: On an Argo CD cluster Secret: the access provider it was rendered for.
ANNOTATION_ACCESS_PROVIDER = f"{PROJECT_DOMAIN}/access-provider"

#: ``schedulerName`` of every PlacementDecision our placement scheduler writes.
PLACEMENT_SCHEDULER_NAME = f"{PROJECT_DOMAIN}/placement"
#: On a PlacementDecision slice: how many slices its revision has (optional).
ANNOTATION_DECISION_SLICES = f"{PROJECT_DOMAIN}/decision-slices"
#: On every object ``FleetDelivery`` applies: its field manager (the member-side watch for
#: drift selects on it).
LABEL_DELIVERY = f"{PROJECT_DOMAIN}/delivery"
#: On a ConfigMap the runtime's example ``ConfigMapSync`` writes: the hub ConfigMap it copies.
ANNOTATION_SYNCED_FROM = f"{PROJECT_DOMAIN}/synced-from"

#: Field manager of every server-side apply the cluster manager sends.
FIELD_MANAGER_CLUSTER_MANAGER = "cluster-inventory-manager"
#: Field manager of the CLI's own writes (``register``).
FIELD_MANAGER_CLI = "cluster-inventory-cli"
#: Default field manager of ``cluster-inventory apply``.
FIELD_MANAGER_APPLY = "cluster-inventory-apply"
#: Field manager (and ``app.kubernetes.io/managed-by``) of the placement scheduler.
FIELD_MANAGER_PLACEMENT = "cluster-inventory-placement"
#: Field manager (and ``app.kubernetes.io/managed-by``) of the Argo CD sync.
FIELD_MANAGER_ARGOCD = "cluster-inventory-argocd"
#: Field manager (and ``app.kubernetes.io/managed-by``) of the MultiKueue sync.
FIELD_MANAGER_MULTIKUEUE = "cluster-inventory-multikueue"
#: Default field manager of a profile mirror (each sync names its own).
FIELD_MANAGER_MIRROR = "cluster-inventory-mirror"
#: Field manager of the replica Leases of a shard group.
FIELD_MANAGER_SHARD = "cluster-inventory-shard"
#: Field manager (and ``app.kubernetes.io/managed-by``) of the runtime's example ConfigMapSync.
FIELD_MANAGER_CONFIGMAP_SYNC = "fleet-configmap-sync"
#: Field manager of what ``cluster-inventory demo`` writes to set its fleet up.
FIELD_MANAGER_DEMO = "cluster-inventory-demo"
#: Field manager of the CRDs ``crds apply`` (and ``kube.ensure_crds``) applies.
FIELD_MANAGER_CRDS = "cluster-inventory"
#: Field manager of ``crds migrate``: the storage flags of ``spec.versions``, the CRD's
#: ``StorageMigrating`` condition and ``status.storedVersions``, and the no-op rewrites.
FIELD_MANAGER_STORAGE_MIGRATION = "cluster-inventory-migrate"

#: ``reportingController`` of the cluster manager's Events.
REPORTING_CONTROLLER_MANAGER = f"{PROJECT_DOMAIN}/manager"
#: ``reportingController`` of a profile mirror's Events (each sync names its own).
REPORTING_CONTROLLER_MIRROR = f"{PROJECT_DOMAIN}/mirror"
#: ``reportingController`` of the Argo CD sync's Events.
REPORTING_CONTROLLER_ARGOCD = f"{PROJECT_DOMAIN}/argocd-sync"
#: ``reportingController`` of the MultiKueue sync's Events.
REPORTING_CONTROLLER_MULTIKUEUE = f"{PROJECT_DOMAIN}/multikueue-sync"

#: kube-state-metrics-style series of a profile's conditions
#: (``kube_node_status_condition{node,condition,status}``'s shape): labels ``namespace``,
#: ``name``, ``condition``, ``status``; three series per condition, 1 on the current status.
METRIC_PROFILE_CONDITION = "cluster_inventory_cluster_profile_condition"
#: The ``status`` label values of :data:`METRIC_PROFILE_CONDITION`, as kube-state-metrics
#: spells a condition's ``True``, ``False`` and ``Unknown``.
PROFILE_CONDITION_STATUSES = ("true", "false", "unknown")
#: Companion series: 1 for a condition's current ``reason`` (labels ``namespace``, ``name``,
#: ``condition``, ``reason``), as ``kube_pod_status_reason``; what an outage is blamed on.
METRIC_PROFILE_CONDITION_REASON = "cluster_inventory_cluster_profile_condition_reason"
#: 1 per profile, its facts as labels (``kube_node_info``'s shape): ``namespace``, ``name``,
#: ``member_id``, ``version``, ``manager``, ``access_mode`` (``probe``, ``pull`` or "").
METRIC_PROFILE_INFO = "cluster_inventory_cluster_profile_info"

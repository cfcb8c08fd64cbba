"""``multicluster.x-k8s.io/v1alpha1``: ClusterProfile and PlacementDecision.

Mirrors ``sigs.k8s.io/cluster-inventory-api/apis/v1alpha1`` (v0.1.3), the served storage
version. Field limits are those of the CRD, so a model that validates here is accepted by the
API server (except ``Condition.reason``, which the model lets documents omit).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Literal

from pydantic import Field

from cluster_inventory.api._base import (
    Condition,
    KubeList,
    KubeModel,
    KubeObject,
    Time,
    find_condition,
)
from cluster_inventory.api.constants import (
    CONDITION_CONTROL_PLANE_HEALTHY,
    EXTENSION_EXEC,
    GROUP,
    PLACEMENT_DECISION_MAX_DECISIONS,
    PROPERTY_NAME_MAX_LENGTH,
    PROPERTY_VALUE_MAX_LENGTH,
    V1ALPHA1,
)

__all__ = [
    "API_VERSION",
    "AccessProvider",
    "Cluster",
    "ClusterDecision",
    "ClusterManager",
    "ClusterProfile",
    "ClusterProfileList",
    "ClusterProfileReference",
    "ClusterProfileSpec",
    "ClusterProfileStatus",
    "NamedExtension",
    "PlacementDecision",
    "PlacementDecisionList",
    "Property",
    "Version",
]

API_VERSION = f"{GROUP}/{V1ALPHA1}"


class ClusterManager(KubeModel):
    """``spec.clusterManager``: who owns the profile. Immutable once created."""

    name: str


class ClusterProfileSpec(KubeModel):
    """``spec``: set by the cluster manager at creation."""

    display_name: str | None = Field(default=None, alias="displayName")
    cluster_manager: ClusterManager = Field(alias="clusterManager")


class Version(KubeModel):
    """``status.version``: versions of the member cluster."""

    kubernetes: str | None = None


class Property(KubeModel):
    """One ``status.properties`` entry (usually mirrored from a member's ClusterProperty).

    Attributes:
        name: Property name, 1 to 253 characters.
        value: Property value, 1 to 1024 characters.
        last_observed_time: When the property was observed on the member cluster (not when the
            profile was written).
    """

    name: str = Field(min_length=1, max_length=PROPERTY_NAME_MAX_LENGTH)
    value: str = Field(min_length=1, max_length=PROPERTY_VALUE_MAX_LENGTH)
    last_observed_time: Time | None = Field(default=None, alias="lastObservedTime")


class NamedExtension(KubeModel):
    """A kubeconfig-style named extension: ``{"name": ..., "extension": {...}}``.

    The CRD types ``extension`` as an object; a list is accepted from documents because
    upstream's ``pkg/access`` reads the additional-args payload as a list of strings.
    """

    name: str
    extension: dict[str, Any] | list[Any]


class Cluster(KubeModel):
    """Connection details of a member cluster: the kubeconfig ``Cluster`` schema.

    Keys on the wire are hyphenated (``certificate-authority-data``). Never holds credentials.
    """

    server: str
    tls_server_name: str | None = Field(default=None, alias="tls-server-name")
    insecure_skip_tls_verify: bool | None = Field(default=None, alias="insecure-skip-tls-verify")
    certificate_authority: str | None = Field(default=None, alias="certificate-authority")
    certificate_authority_data: str | None = Field(default=None, alias="certificate-authority-data")
    proxy_url: str | None = Field(default=None, alias="proxy-url")
    disable_compression: bool | None = Field(default=None, alias="disable-compression")
    extensions: list[NamedExtension] | None = None

    def ca_pem(self) -> bytes | None:
        """Decode ``certificate-authority-data`` (base64) to PEM bytes.

        Raises:
            ValueError: The field is not valid base64; the message names the field.
        """
        if not self.certificate_authority_data:
            return None
        try:
            return base64.b64decode(self.certificate_authority_data, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError("cluster.certificate-authority-data is not valid base64") from exc

    def extension(self, name: str) -> dict[str, Any] | list[Any] | None:
        """Return the payload of the extension called ``name``, or None."""
        for ext in self.extensions or ():
            if ext.name == name:
                return ext.extension
        return None

    def exec_config(self) -> dict[str, Any] | None:
        """The payload of ``client.authentication.k8s.io/exec`` (the plugin's cluster config)."""
        payload = self.extension(EXTENSION_EXEC)
        return payload if isinstance(payload, dict) else None


class AccessProvider(KubeModel):
    """One way to reach the member: a credential plugin type and connection details."""

    name: str
    cluster: Cluster | None = None


class ClusterProfileStatus(KubeModel):
    """``status``: what the cluster manager last observed."""

    conditions: list[Condition] | None = None
    version: Version | None = None
    properties: list[Property] | None = None
    credential_providers: list[AccessProvider] | None = Field(
        default=None, alias="credentialProviders"
    )
    access_providers: list[AccessProvider] | None = Field(default=None, alias="accessProviders")

    def condition(self, condition_type: str) -> Condition | None:
        """Return the condition of ``condition_type``, or None."""
        return find_condition(self.conditions, condition_type)

    def merged_access_providers(self) -> list[AccessProvider]:
        """Access providers with the deprecated list folded in.

        Follows ``pkg/access``: both lists count, and on a name clash the
        ``accessProviders`` entry wins. Order: ``credentialProviders`` entries not shadowed,
        then ``accessProviders``.
        """
        chosen = {p.name: p for p in self.access_providers or ()}
        legacy = [p for p in self.credential_providers or () if p.name not in chosen]
        return [*legacy, *(self.access_providers or ())]


class ClusterProfile(KubeObject):
    """A member cluster of an inventory (``multicluster.x-k8s.io/v1alpha1``, namespaced)."""

    api_version: str = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["ClusterProfile"] = "ClusterProfile"
    spec: ClusterProfileSpec
    status: ClusterProfileStatus | None = None

    def is_healthy(self) -> bool:
        """True when the ``ControlPlaneHealthy`` condition is ``"True"``."""
        cond = self.status.condition(CONDITION_CONTROL_PLANE_HEALTHY) if self.status else None
        return cond is not None and cond.status == "True"


class ClusterProfileList(KubeList):
    """A list of ClusterProfiles as the API server returns it."""

    api_version: str = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["ClusterProfileList"] = "ClusterProfileList"
    items: list[ClusterProfile] = Field(default_factory=list)


class ClusterProfileReference(KubeModel):
    """A reference from a PlacementDecision to a ClusterProfile.

    Attributes:
        name: The profile's name.
        namespace: The profile's namespace; empty means the decision's own namespace.
    """

    name: str
    namespace: str | None = None


class ClusterDecision(KubeModel):
    """One chosen cluster of a PlacementDecision."""

    cluster_profile_ref: ClusterProfileReference = Field(alias="clusterProfileRef")
    reason: str | None = None


class PlacementDecision(KubeObject):
    """A slice of a scheduler's output (KEP-5313): at most 100 chosen clusters, no status."""

    api_version: str = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["PlacementDecision"] = "PlacementDecision"
    decisions: list[ClusterDecision] = Field(max_length=PLACEMENT_DECISION_MAX_DECISIONS)
    scheduler_name: str | None = Field(default=None, alias="schedulerName")


class PlacementDecisionList(KubeList):
    """A list of PlacementDecisions."""

    api_version: str = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["PlacementDecisionList"] = "PlacementDecisionList"
    items: list[PlacementDecision] = Field(default_factory=list)

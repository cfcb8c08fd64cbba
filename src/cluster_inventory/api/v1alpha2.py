"""``multicluster.x-k8s.io/v1alpha2``: the next ClusterProfile shape (upstream v0.2.0).

Upstream ``main`` serves v1alpha2 beside v1alpha1 (still the storage version; no conversion
webhook). Differences from v1alpha1 (``docs/crds.md``): no ``credentialProviders``; an access
provider's ``cluster`` is required and is an API-owned type without ``certificate-authority``;
names and URLs have length limits; extension names are unique. The pinned release v0.1.3 does
not serve this version yet, so its CRD is not shipped; these models let a consumer read
objects from a newer hub.
"""

from __future__ import annotations

import re
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from cluster_inventory.api._base import (
    Condition,
    KubeList,
    KubeModel,
    KubeObject,
    find_condition,
    label_value_problem,
)
from cluster_inventory.api.constants import (
    CONDITION_CONTROL_PLANE_HEALTHY,
    EXTENSION_EXEC,
    GROUP,
    PLACEMENT_DECISION_MAX_DECISIONS,
    V1ALPHA2,
)
from cluster_inventory.api.v1alpha1 import ClusterProfileReference as _RefV1
from cluster_inventory.api.v1alpha1 import NamedExtension, Property, Version

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
    "Property",
    "Version",
]

API_VERSION = f"{GROUP}/{V1ALPHA2}"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class ClusterManager(KubeModel):
    """``spec.clusterManager``: a valid label value, 1 to 63 characters."""

    name: str = Field(min_length=1, max_length=63)

    @field_validator("name")
    @classmethod
    def _label_value(cls, value: str) -> str:
        if label_value_problem(value):
            raise ValueError("must be a valid Kubernetes label value")
        return value


class ClusterProfileSpec(KubeModel):
    """``spec``: set by the cluster manager at creation."""

    display_name: str | None = Field(default=None, alias="displayName")
    cluster_manager: ClusterManager = Field(alias="clusterManager")


def _absolute_url(value: str, field: str, schemes: tuple[str, ...] | None = None) -> str:
    parts = urlsplit(value)
    if not parts.scheme or not parts.netloc or not parts.hostname:
        raise ValueError(f"{field} must be a valid absolute URL with a host")
    if schemes is not None and parts.scheme not in schemes:
        raise ValueError(f"{field} must use one of the schemes {', '.join(schemes)}")
    return value


class Cluster(KubeModel):
    """API-owned connection details (kubeconfig keys, minus ``certificate-authority``)."""

    server: str = Field(max_length=2048)
    tls_server_name: str | None = Field(default=None, max_length=253, alias="tls-server-name")
    insecure_skip_tls_verify: bool | None = Field(default=None, alias="insecure-skip-tls-verify")
    certificate_authority_data: str | None = Field(default=None, alias="certificate-authority-data")
    proxy_url: str | None = Field(default=None, max_length=2048, alias="proxy-url")
    disable_compression: bool | None = Field(default=None, alias="disable-compression")
    extensions: list[NamedExtension] | None = None

    @field_validator("server")
    @classmethod
    def _server(cls, value: str) -> str:
        return _absolute_url(value, "server")

    @field_validator("proxy_url")
    @classmethod
    def _proxy(cls, value: str | None) -> str | None:
        if value:
            _absolute_url(value, "proxy-url", ("http", "https", "socks5"))
        return value

    @field_validator("extensions")
    @classmethod
    def _unique_names(cls, value: list[NamedExtension] | None) -> list[NamedExtension] | None:
        names = [e.name for e in value or ()]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate extension names: {', '.join(duplicates)}")
        return value

    def exec_config(self) -> dict[str, Any] | None:
        """The payload of ``client.authentication.k8s.io/exec``, or None."""
        for ext in self.extensions or ():
            if ext.name == EXTENSION_EXEC and isinstance(ext.extension, dict):
                return ext.extension
        return None


class AccessProvider(KubeModel):
    """One way to reach the member; ``cluster`` is required in v1alpha2."""

    name: str = Field(min_length=1, max_length=253)
    cluster: Cluster


class ClusterProfileStatus(KubeModel):
    """``status`` without the deprecated ``credentialProviders``."""

    conditions: list[Condition] | None = None
    version: Version | None = None
    properties: list[Property] | None = None
    access_providers: list[AccessProvider] | None = Field(
        default=None, max_length=64, alias="accessProviders"
    )

    def condition(self, condition_type: str) -> Condition | None:
        """Return the condition of ``condition_type``, or None."""
        return find_condition(self.conditions, condition_type)


class ClusterProfile(KubeObject):
    """A member cluster of an inventory (``multicluster.x-k8s.io/v1alpha2``)."""

    api_version: str = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["ClusterProfile"] = "ClusterProfile"
    spec: ClusterProfileSpec
    status: ClusterProfileStatus | None = None

    def is_healthy(self) -> bool:
        """True when the ``ControlPlaneHealthy`` condition is ``"True"``."""
        cond = self.status.condition(CONDITION_CONTROL_PLANE_HEALTHY) if self.status else None
        return cond is not None and cond.status == "True"


class ClusterProfileList(KubeList):
    """A list of v1alpha2 ClusterProfiles."""

    api_version: str = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["ClusterProfileList"] = "ClusterProfileList"
    items: list[ClusterProfile] = Field(default_factory=list)


class ClusterProfileReference(_RefV1):
    """A reference to a ClusterProfile: DNS-1123 name and namespace."""

    name: str = Field(max_length=253)
    namespace: str | None = Field(default=None, max_length=63)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _DNS_SUBDOMAIN.match(value):
            raise ValueError("must be a DNS-1123 subdomain")
        return value

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str | None) -> str | None:
        if value and not _DNS_LABEL.match(value):
            raise ValueError("must be a DNS-1123 label")
        return value


class ClusterDecision(KubeModel):
    """One chosen cluster of a PlacementDecision."""

    cluster_profile_ref: ClusterProfileReference = Field(alias="clusterProfileRef")
    reason: str | None = None


class PlacementDecision(KubeObject):
    """A slice of a scheduler's output (``v1alpha2``)."""

    api_version: str = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["PlacementDecision"] = "PlacementDecision"
    decisions: list[ClusterDecision] = Field(max_length=PLACEMENT_DECISION_MAX_DECISIONS)
    scheduler_name: str | None = Field(default=None, alias="schedulerName")

"""``about.k8s.io``: ClusterProperty (KEP-2149), one named fact about a cluster.

v1alpha1 and v1beta1 (the storage version) have the same object shape, so one model serves
both; ``apiVersion`` says which. A property's name is its ``metadata.name``; its only data is
``spec.value`` (at least one character, no upper limit in the CRD).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cluster_inventory.api._base import KubeList, KubeModel, KubeObject
from cluster_inventory.api.constants import ABOUT_GROUP, V1ALPHA1, V1BETA1

__all__ = [
    "API_VERSION",
    "API_VERSIONS",
    "ClusterProperty",
    "ClusterPropertyList",
    "ClusterPropertySpec",
]

#: The storage version, used when creating.
API_VERSION = f"{ABOUT_GROUP}/{V1BETA1}"
#: Every served version.
API_VERSIONS = (f"{ABOUT_GROUP}/{V1ALPHA1}", API_VERSION)


class ClusterPropertySpec(KubeModel):
    """``spec``: the property's value."""

    value: str = Field(min_length=1)


class ClusterProperty(KubeObject):
    """A cluster-scoped ClusterProperty; ``metadata.name`` is the property name."""

    api_version: Literal["about.k8s.io/v1alpha1", "about.k8s.io/v1beta1"] = Field(
        default="about.k8s.io/v1beta1", alias="apiVersion"
    )
    kind: Literal["ClusterProperty"] = "ClusterProperty"
    spec: ClusterPropertySpec | None = None

    @property
    def name(self) -> str | None:
        """The property name (``metadata.name``)."""
        return self.metadata.name


class ClusterPropertyList(KubeList):
    """A list of ClusterProperties."""

    api_version: str = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["ClusterPropertyList"] = "ClusterPropertyList"
    items: list[ClusterProperty] = Field(default_factory=list)

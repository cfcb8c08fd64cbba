"""``about.k8s.io``: ClusterProperty (KEP-2149), one named fact about a cluster.

v1alpha1 and v1beta1 (the storage version) have the same object shape, so one model serves
both; ``apiVersion`` says which. A property's name is its ``metadata.name``; its only data is
``spec.value`` (at least one character, no upper limit in the CRD). :func:`observe_property`
is how a watcher of them (the cluster manager's member connection, the agent's reporter)
keeps what it observed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, Literal, Protocol, TypeVar

from pydantic import Field

from cluster_inventory.api import objects
from cluster_inventory.api._base import KubeList, KubeModel, KubeObject
from cluster_inventory.api.constants import ABOUT_GROUP, V1ALPHA1, V1BETA1

__all__ = [
    "API_VERSION",
    "API_VERSIONS",
    "ClusterProperty",
    "ClusterPropertyList",
    "ClusterPropertySpec",
    "observe_property",
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


class _Observed(Protocol):
    """What a watcher records of a property: at least its value."""

    @property
    def value(self) -> str:
        """The value observed."""
        ...


_ObservedT = TypeVar("_ObservedT", bound=_Observed)


def observe_property(
    observed: MutableMapping[str, _ObservedT],
    event: str,
    obj: Mapping[str, Any],
    stamp: Callable[[str, str], _ObservedT],
) -> None:
    """Apply one watch event of a ClusterProperty to what has been observed of them. Pure.

    A deleted property is dropped; a new property, or a new value, is recorded as
    ``stamp(name, value)`` (the caller stamps it with the time it observes it); an unchanged
    value keeps its record, so its time stays that of its first observation (what a profile's
    ``properties[].lastObservedTime`` and a MemberReport's property say).

    Args:
        observed: Property name -> its record, changed in place.
        event: The watch event's type (``ADDED``, ``MODIFIED``, ``DELETED``).
        obj: The ClusterProperty as the watch gave it (its name is ``metadata.name``, its
            value ``spec.value``, ``""`` if absent).
        stamp: Makes the record of a value observed now, from the name and the value.
    """
    name = str(objects.meta(obj).get("name"))
    if event == "DELETED":
        observed.pop(name, None)
        return
    value = str(objects.spec(obj).get("value", ""))
    known = observed.get(name)
    if known is None or known.value != value:
        observed[name] = stamp(name, value)

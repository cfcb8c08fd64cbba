"""Shared building blocks: the model base class, Kubernetes time, ObjectMeta, Condition.

Objects read from an API server must survive a read-modify-write untouched, so every model
keeps unknown fields (``extra="allow"``) and :meth:`KubeModel.to_dict` emits only the fields
that were set, under their JSON names: no invented ``null``, nothing dropped.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationError,
)

from cluster_inventory.api.views import format_time

__all__ = [
    "Condition",
    "ConditionStatus",
    "KubeList",
    "KubeModel",
    "KubeObject",
    "ListMeta",
    "ObjectMeta",
    "OwnerReference",
    "Time",
    "TypedObject",
    "field_error",
    "find_condition",
    "label_value_problem",
]


#: A label value's longest length (apimachinery ``validation.LabelValueMaxLength``).
LABEL_VALUE_MAX_LENGTH = 63
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def label_value_problem(value: str, *, required: bool = False) -> str | None:
    """Why ``value`` is not a Kubernetes label value, or None (apimachinery's rule).

    ``validation.IsValidLabelValue``: at most 63 characters, empty or alphanumeric at both
    ends with ``-``, ``_`` and ``.`` between.

    Args:
        value: The candidate value.
        required: An empty value is a problem too (``inventory-member-id``, KEP-4322).

    Returns:
        The problem (never quoting ``value``), or None when it is a label value.
    """
    if required and not value:
        return "is empty"
    if len(value) > LABEL_VALUE_MAX_LENGTH:
        return f"is {len(value)} characters; a label value has at most {LABEL_VALUE_MAX_LENGTH}"
    if not _LABEL_VALUE.match(value):
        return "is not a label value (alphanumeric at both ends, with '-', '_' and '.' between)"
    return None


def _parse_time(value: Any) -> Any:
    if isinstance(value, str) and value.endswith("Z"):
        return value[:-1] + "+00:00"
    return value


#: ``metav1.Time``: an aware datetime in Python, RFC 3339 with second precision on the wire.
Time = Annotated[
    dt.datetime,
    BeforeValidator(_parse_time),
    PlainSerializer(format_time, return_type=str, when_used="json-unless-none"),
]


class KubeModel(BaseModel):
    """Base of every API model: JSON aliases, unknown fields kept, exact round trips.

    Construct with Python names (``ClusterManager(name="m")``) or JSON names
    (``Cluster.model_validate({"certificate-authority-data": ...})``).
    """

    # defer_build: a model is built on its first use, not at import (0.2 s of every start-up).
    model_config = ConfigDict(
        populate_by_name=True, extra="allow", validate_assignment=True, defer_build=True
    )

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """Parse a decoded JSON or YAML object.

        Raises:
            pydantic.ValidationError: A field is missing or invalid; each error names the
                field's location (e.g. ``spec.clusterManager``).
        """
        return cls.model_validate(data)

    def to_dict(self) -> dict[str, Any]:
        """Return the object as JSON-ready data, with JSON names and only the fields set."""
        return self.model_dump(by_alias=True, exclude_unset=True, mode="json")


def field_error(exc: ValidationError) -> tuple[str, str]:
    """The first field a model refused, and why, without the value it was given.

    pydantic's own message quotes the input (which may be long, or a credential) over
    several lines; this is the part a one-line error needs.

    Returns:
        ``(field, problem)``, e.g. ``("status.accessProviders[0].cluster.server",
        "Input should be a valid string")``; ``problem`` counts further errors.
    """
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    if not errors:
        return "(object)", "is not valid"
    field = ""
    for part in errors[0]["loc"]:
        field += f"[{part}]" if isinstance(part, int) else (f".{part}" if field else str(part))
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return field or "(object)", f"{errors[0]['msg']}{more}"


class OwnerReference(KubeModel):
    """``metav1.OwnerReference``."""

    api_version: str = Field(alias="apiVersion")
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = Field(default=None, alias="blockOwnerDeletion")


class ObjectMeta(KubeModel):
    """The parts of ``metav1.ObjectMeta`` this project reads; other fields are kept as extras."""

    name: str | None = None
    generate_name: str | None = Field(default=None, alias="generateName")
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = Field(default=None, alias="resourceVersion")
    generation: int | None = None
    creation_timestamp: Time | None = Field(default=None, alias="creationTimestamp")
    deletion_timestamp: Time | None = Field(default=None, alias="deletionTimestamp")
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = Field(default=None, alias="ownerReferences")
    finalizers: list[str] | None = None
    managed_fields: list[dict[str, Any]] | None = Field(default=None, alias="managedFields")


class ListMeta(KubeModel):
    """``metav1.ListMeta``."""

    resource_version: str | None = Field(default=None, alias="resourceVersion")
    continue_: str | None = Field(default=None, alias="continue")
    remaining_item_count: int | None = Field(default=None, alias="remainingItemCount")


def _condition_status(value: Any) -> Any:
    # YAML reads an unquoted True/False as a boolean; documents (KEP examples) write it so.
    if isinstance(value, bool):
        return "True" if value else "False"
    return value


#: A condition's status: exactly ``"True"``, ``"False"`` or ``"Unknown"``.
ConditionStatus = Annotated[Literal["True", "False", "Unknown"], BeforeValidator(_condition_status)]


_CONDITION_TYPE = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)


class Condition(KubeModel):
    """``metav1.Condition`` with the limits the CRD enforces.

    Attributes:
        type: Condition type, e.g. ``ControlPlaneHealthy`` (at most 316 characters).
        status: ``"True"``, ``"False"`` or ``"Unknown"`` (a YAML boolean is accepted).
        reason: CamelCase reason, 1 to 1024 characters. The API server requires it; the model
            also accepts documents that leave it out (the KEP-4322 example does).
        message: Human-readable detail, at most 32768 characters.
        last_transition_time: When ``status`` last changed.
        observed_generation: The ``metadata.generation`` the condition was computed from.
    """

    type: str = Field(max_length=316, pattern=_CONDITION_TYPE)
    status: ConditionStatus
    reason: str | None = Field(
        default=None,
        min_length=1,
        max_length=1024,
        pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
    )
    message: str = Field(default="", max_length=32768)
    last_transition_time: Time = Field(alias="lastTransitionTime")
    observed_generation: int | None = Field(default=None, ge=0, alias="observedGeneration")


def find_condition(conditions: list[Condition] | None, condition_type: str) -> Condition | None:
    """Return the condition of ``condition_type`` in ``conditions``, or None."""
    for cond in conditions or ():
        if cond.type == condition_type:
            return cond
    return None


class TypedObject(KubeModel):
    """A top-level object or list: ``apiVersion`` and ``kind`` are always written."""

    api_version: str = Field(alias="apiVersion")
    kind: str

    def to_dict(self) -> dict[str, Any]:
        """Return JSON-ready data; ``apiVersion`` and ``kind`` are always included."""
        return {"apiVersion": self.api_version, "kind": self.kind, **super().to_dict()}


class KubeObject(TypedObject):
    """A top-level object with ``metadata``."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)


class KubeList(TypedObject):
    """A list as the API server returns it."""

    metadata: ListMeta = Field(default_factory=ListMeta)

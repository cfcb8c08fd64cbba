"""The MemberReport model and the CRD it mirrors name the same fields with the same limits."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from cluster_inventory import api
from cluster_inventory.api.constants import MEMBER_REPORT_CRD
from cluster_inventory.api.member_report import (
    APIServerHealth,
    MemberReport,
    MemberReportStatus,
    ReportedProperty,
)


def _schema() -> dict[str, Any]:
    (crd,) = [c for c in api.load_crds() if c["metadata"]["name"] == MEMBER_REPORT_CRD]
    (version,) = crd["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]


def _json_names(model: type[BaseModel]) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


def _max_length(model: type[BaseModel], json_name: str) -> int | None:
    for name, field in model.model_fields.items():
        if (field.alias or name) == json_name:
            for meta in field.metadata:
                if hasattr(meta, "max_length"):
                    return int(meta.max_length)
            return None
    raise KeyError(json_name)


_STATUS = _schema()["properties"]["status"]
_PARTS: list[tuple[type[BaseModel], dict[str, Any]]] = [
    (MemberReportStatus, _STATUS),
    (APIServerHealth, _STATUS["properties"]["apiServerHealth"]),
    (ReportedProperty, _STATUS["properties"]["properties"]["items"]),
]


@pytest.mark.parametrize(("model", "schema"), _PARTS, ids=lambda p: getattr(p, "__name__", ""))
def test_model_fields_are_the_crd_schema_fields(
    model: type[BaseModel], schema: dict[str, Any]
) -> None:
    assert _json_names(model) == set(schema["properties"])


@pytest.mark.parametrize(("model", "schema"), _PARTS, ids=lambda p: getattr(p, "__name__", ""))
def test_model_limits_are_the_crd_limits(model: type[BaseModel], schema: dict[str, Any]) -> None:
    for name, prop in schema["properties"].items():
        if prop.get("type") == "array":
            continue
        assert _max_length(model, name) == prop.get("maxLength"), name


def test_model_keeps_the_crd_list_limit_and_required_fields() -> None:
    items = _STATUS["properties"]["properties"]
    assert _max_length(MemberReportStatus, "properties") == items["maxItems"]
    assert set(items["items"]["required"]) == {"name", "value"}
    assert _STATUS["properties"]["apiServerHealth"]["required"] == ["status"]
    with pytest.raises(ValidationError):
        ReportedProperty.model_validate({"name": "a"})
    with pytest.raises(ValidationError):
        APIServerHealth.model_validate({"reason": "x"})


def test_a_report_round_trips_with_json_names() -> None:
    raw = {
        "apiVersion": "cluster-inventory.dev/v1alpha1",
        "kind": "MemberReport",
        "metadata": {"name": "m1", "namespace": "cluster-inventory-system"},
        "status": {
            "memberID": "0d1e",
            "kubernetesVersion": "v1.33.1",
            "apiServerHealth": {
                "status": "True",
                "reason": "APIServerReady",
                "lastProbeTime": "2026-11-27T07:00:00Z",
            },
            "properties": [{"name": "a", "value": "1", "lastObservedTime": "2026-11-27T07:00:00Z"}],
        },
    }
    report = MemberReport.from_dict(raw)
    assert report.status is not None and report.status.member_id == "0d1e"
    assert report.to_dict() == raw

"""Every API failure maps to one error type carrying the server's message."""

from __future__ import annotations

import json

import pytest

from cluster_inventory import kube
from cluster_inventory.kube.errors import error_from_status


def status_body(code: int, reason: str, message: str, causes=()) -> str:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": code,
            "reason": reason,
            "message": message,
            "details": {"causes": [{"field": f, "reason": r, "message": m} for f, r, m in causes]},
        }
    )


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (401, "Unauthorized", kube.UnauthorizedError),
        (403, "Forbidden", kube.ForbiddenError),
        (404, "NotFound", kube.NotFoundError),
        (409, "Conflict", kube.ConflictError),
        (409, "AlreadyExists", kube.AlreadyExistsError),
        (410, "Expired", kube.GoneError),
        (422, "Invalid", kube.InvalidError),
        (429, "TooManyRequests", kube.ServerUnavailableError),
        (503, "ServiceUnavailable", kube.ServerUnavailableError),
        (400, "BadRequest", kube.KubeAPIError),
    ],
)
def test_status_maps_to_its_error_type(code: int, reason: str, cls: type) -> None:
    err = error_from_status(code, status_body(code, reason, "it went wrong"), target="X a/b")
    assert type(err) is cls
    assert err.status == code
    assert err.reason == reason
    assert str(err) == f"X a/b: it went wrong ({code} {reason})"


def test_invalid_error_carries_field_causes() -> None:
    err = error_from_status(
        422,
        status_body(
            422,
            "Invalid",
            'ClusterProfile.multicluster.x-k8s.io "c1" is invalid',
            [("spec.clusterManager", "FieldValueRequired", "Required value")],
        ),
    )
    assert isinstance(err, kube.InvalidError)
    assert err.causes[0].field == "spec.clusterManager"
    assert err.causes[0].reason == "FieldValueRequired"


def test_non_json_body_is_kept_as_message() -> None:
    err = error_from_status(502, b"bad gateway\n", http_reason="Bad Gateway")
    assert isinstance(err, kube.ServerUnavailableError)
    assert err.message == "bad gateway"
    assert err.reason == "Bad Gateway"

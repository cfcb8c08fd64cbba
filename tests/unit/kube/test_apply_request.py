"""What :func:`cluster_inventory.kube.apply` puts on the wire (a recording client, no server)."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_inventory import kube


class RecordingClient:
    """Stands in for an ``ApiClient``: records each ``call_api`` and answers ``{}``."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def call_api(self, path: str, method: str, **kwargs: Any) -> dict[str, Any]:
        self.calls.append({"path": path, "method": method, **kwargs})
        return {}


BODY = {"metadata": {"name": "c1", "namespace": "team-a"}, "status": {}}


@pytest.mark.parametrize("directive", ["Strict", "Warn", "Ignore"])
async def test_apply_sends_the_field_validation_asked_for(directive: str) -> None:
    client = RecordingClient()
    await kube.apply(
        client,  # type: ignore[arg-type]
        kube.CLUSTER_PROFILES,
        BODY,
        field_manager="m",
        subresource="status",
        field_validation=directive,  # type: ignore[arg-type]
    )
    (call,) = client.calls
    assert call["method"] == "PATCH"
    assert call["path"].endswith("/namespaces/team-a/clusterprofiles/c1/status")
    assert dict(call["query_params"]) == {
        "fieldManager": "m",
        "force": "true",
        "fieldValidation": directive,
    }


async def test_apply_leaves_the_server_default_unless_asked() -> None:
    client = RecordingClient()
    await kube.apply(client, kube.CLUSTER_PROFILES, BODY, field_manager="m")  # type: ignore[arg-type]
    assert "fieldValidation" not in dict(client.calls[0]["query_params"])

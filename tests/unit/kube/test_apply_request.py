"""What :func:`cluster_inventory.kube.apply` puts on the wire (a recording client, no server)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

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


@settings(max_examples=200, deadline=None)
@given(value=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40))
async def test_an_apply_body_is_yaml_that_reads_back_as_it_was_sent(value: str) -> None:
    """Any text a member may report (DEL and C1 controls too) survives the YAML apply body.

    The server reads an apply body as YAML, which refuses DEL and the C1 controls raw (a
    400, at every retry of the write); they go escaped, as C0 already does in JSON.
    """
    client = RecordingClient()
    body = {"metadata": {"name": "c1", "namespace": "team-a"}, "status": {"v": value}}
    await kube.apply(client, kube.CLUSTER_PROFILES, body, field_manager="m")  # type: ignore[arg-type]
    sent = client.calls[0]["body"]
    assert yaml.safe_load(sent.decode())["status"] == {"v": value}


async def test_replace_status_is_one_json_patch_of_the_whole_status() -> None:
    client = RecordingClient()
    await kube.replace_status(
        client,  # type: ignore[arg-type]
        kube.MEMBER_REPORTS,
        "edge-1",
        "ns",
        {"memberID": "u"},
        field_manager="agent",
    )
    (call,) = client.calls
    assert call["method"] == "PATCH"
    assert call["path"].endswith("/namespaces/ns/memberreports/edge-1/status")
    assert call["header_params"]["Content-Type"] == "application/json-patch+json"
    assert call["body"] == [{"op": "add", "path": "/status", "value": {"memberID": "u"}}]
    assert dict(call["query_params"]) == {"fieldManager": "agent"}

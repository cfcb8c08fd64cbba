"""client-go's REST client metrics, counted in the one transport for every request."""

from __future__ import annotations

import dataclasses
import socket
from urllib.parse import urlsplit

import pytest
from prometheus_client import REGISTRY

from cluster_inventory import kube


def requests(code: str, method: str, host: str) -> float:
    labels = {"code": code, "method": method, "host": host}
    return REGISTRY.get_sample_value("rest_client_requests_total", labels) or 0.0


def durations(verb: str, host: str) -> float:
    labels = {"verb": verb, "host": host}
    return REGISTRY.get_sample_value("rest_client_request_duration_seconds_count", labels) or 0.0


async def test_each_request_is_counted_by_code_method_and_host(hub, test_namespace: str) -> None:
    host = urlsplit(hub.server).netloc
    before = {
        "200": requests("200", "GET", host),
        "404": requests("404", "GET", host),
        "201": requests("201", "POST", host),
        "duration": durations("GET", host),
    }
    async with await hub.client() as client:
        await kube.get(client, kube.NAMESPACES, test_namespace)
        with pytest.raises(kube.NotFoundError):
            await kube.get(client, kube.CONFIG_MAPS, "absent", test_namespace)
        await kube.create(
            client, kube.CONFIG_MAPS, {"metadata": {"name": "x", "namespace": test_namespace}}
        )
    assert requests("200", "GET", host) == before["200"] + 1
    assert requests("404", "GET", host) == before["404"] + 1
    assert requests("201", "POST", host) == before["201"] + 1
    assert durations("GET", host) == before["duration"] + 2


async def test_a_request_without_a_response_is_counted_as_error(hub) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conn = dataclasses.replace(hub.connection(), server=f"https://127.0.0.1:{port}")
    host = f"127.0.0.1:{port}"
    client = await kube.new_client(conn)
    try:
        with pytest.raises(kube.ServerUnavailableError):
            await kube.get(client, kube.NAMESPACES, "default")
    finally:
        await client.close()
    assert requests("<error>", "GET", host) == 1
    assert durations("GET", host) == 1

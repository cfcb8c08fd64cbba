"""A request that gets no answer in time raises ``RequestTimeoutError``, whatever the wording.

The cluster manager defers a probe that timed out while it was behind; it must recognise a
timeout by its type. Served by a local socket that accepts and never answers (no fake of
the HTTP stack: the timeout comes from aiohttp itself).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from cluster_inventory import kube
from cluster_inventory.manager.rules.status import probe_failure
from cluster_inventory.manager.rules.verdicts import is_busy


@pytest.fixture
async def tarpit() -> AsyncIterator[str]:
    held: list[asyncio.StreamWriter] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)  # read nothing, answer nothing

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_no_answer_in_time_is_a_request_timeout(tarpit: str):
    async with await kube.new_client(kube.ClusterConnection(server=tarpit)) as client:
        with pytest.raises(kube.RequestTimeoutError) as caught:
            await kube.get_text(client, "/readyz?verbose", timeout=0.3)
    exc = caught.value
    assert isinstance(exc, kube.ServerUnavailableError)  # callers of the parent still catch it
    assert str(exc).endswith(f"{tarpit} unreachable: no answer within 0.3 s (0 Unreachable)")
    assert is_busy(exc)
    assert probe_failure(exc).reason == "APIServerUnreachable"


async def test_a_refused_connection_is_not_busy():
    async with await kube.new_client(kube.ClusterConnection(server="http://127.0.0.1:1")) as c:
        with pytest.raises(kube.ServerUnavailableError) as caught:
            await kube.get_text(c, "/readyz", timeout=2.0)
    assert not isinstance(caught.value, kube.RequestTimeoutError)
    assert not is_busy(caught.value)

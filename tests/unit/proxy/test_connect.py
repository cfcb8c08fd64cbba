"""The consumers' CONNECT listener refuses everything but a connected member, by name.

The attacker is a consumer (anyone who reaches the listener): it must not make the proxy
dial anything but a member's agent, nor learn more than a clear status.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from cluster_inventory import kube
from cluster_inventory.proxy import ConnectRefused, ConnectServer, Routes, Tunnel, connect_target
from tests.support.network.tunnels import connect, echo_server, loopback_proxy


def _basic(user_password: bytes) -> bytes:
    return b"Proxy-Authorization: Basic " + base64.b64encode(user_password) + b"\r\n"


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"CONNECT edge-1:443 HTTP/1.1\r\n\r\n", 0),
        (b"CONNECT EDGE-1:443 HTTP/1.0\r\n\r\n", 0),
        (b"GET http://edge-1/ HTTP/1.1\r\n\r\n", 405),
        (b"CONNECT edge-1:6443 HTTP/1.1\r\n\r\n", 403),
        (b"CONNECT 10.0.0.10:443 HTTP/1.1\r\n\r\n", 403),
        (b"CONNECT 169.254.169.254:443 HTTP/1.1\r\n\r\n", 403),
        (b"CONNECT kubernetes.default.svc:443 HTTP/1.1\r\n\r\n", 403),
        (b"CONNECT [::1]:443 HTTP/1.1\r\n\r\n", 403),
        (b"CONNECT edge-1 HTTP/1.1\r\n\r\n", 400),
        (b"CONNECT edge-1:443 SPDY/3\r\n\r\n", 400),
        (b"\xff\xfe\r\n\r\n", 400),
        # The member as the proxy's user (a proxy URL http://NAME@PROXY): any target host.
        (b"CONNECT 127.0.0.1:6443 HTTP/1.1\r\n" + _basic(b"edge-1:") + b"\r\n", 0),
        (b"CONNECT kubernetes.default.svc:443 HTTP/1.1\r\n" + _basic(b"edge-1:") + b"\r\n", 0),
        (b"CONNECT 10.0.0.10:443 HTTP/1.1\r\n" + _basic(b"10.0.0.10:") + b"\r\n", 403),
        (b"CONNECT 10.0.0.10:443 HTTP/1.1\r\n" + _basic(b"Edge-1:") + b"\r\n", 403),
        (b"CONNECT 10.0.0.10:443 HTTP/1.1\r\n" + _basic(b"edge-1:secret") + b"\r\n", 400),
        (b"CONNECT edge-1:443 HTTP/1.1\r\nProxy-Authorization: Bearer x\r\n\r\n", 400),
        (b"CONNECT edge-1:443 HTTP/1.1\r\nProxy-Authorization: Basic !!\r\n\r\n", 400),
        (b"CONNECT :443 HTTP/1.1\r\n" + _basic(b"edge-1:") + b"\r\n", 400),
    ],
)
def test_only_a_member_name_at_443_is_a_target(head: bytes, status: int) -> None:
    if status == 0:
        assert connect_target(head) == "edge-1"
        return
    with pytest.raises(ConnectRefused) as refused:
        connect_target(head)
    assert refused.value.status == status


async def _answer(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return answer


async def test_each_refusal_is_a_status_and_one_line() -> None:
    async with echo_server() as target, loopback_proxy("edge-1", target) as lp:
        port = lp.connect_port
        answers = {
            "unknown member": await _answer(port, b"CONNECT edge-2:443 HTTP/1.1\r\n\r\n"),
            "another host": await _answer(port, b"CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n"),
            "not CONNECT": await _answer(port, b"GET / HTTP/1.1\r\nHost: edge-1\r\n\r\n"),
            "huge head": await _answer(
                port, b"CONNECT edge-1:443 HTTP/1.1\r\nX: " + b"a" * 10000 + b"\r\n\r\n"
            ),
        }
    assert answers["unknown member"].startswith(b"HTTP/1.1 404 Not Found\r\n")
    assert answers["unknown member"].endswith(b"member edge-2 has no agent tunnel to this proxy\n")
    assert answers["another host"].startswith(b"HTTP/1.1 403 Forbidden\r\n")
    assert b"reaches agent members only" in answers["another host"]
    assert answers["not CONNECT"].startswith(b"HTTP/1.1 405 ")
    assert answers["huge head"].startswith(b"HTTP/1.1 431 ")
    assert lp.answers() == {404: 1, 403: 1, 405: 1, 431: 1}
    assert lp.proxy_end.streams == 0  # nothing was opened for any of them


async def test_a_consumer_that_sends_no_head_is_dropped_after_the_timeout() -> None:
    server = ConnectServer(Routes(), head_timeout=0.2)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"CONNECT edge-1:443 HTTP/1.1\r\n")  # and no end of the head
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
    finally:
        listener.close()
        await listener.wait_closed()
    assert answer.startswith(b"HTTP/1.1 408 ")


async def test_a_connected_member_is_reached() -> None:
    async with echo_server() as target, loopback_proxy("edge-1", target) as lp:
        reader, writer, head = await connect(lp.connect_port, "edge-1:443")
        writer.write(b"ping")
        assert await asyncio.wait_for(reader.readexactly(4), 10) == b"ping"
        writer.close()
    assert head == b"HTTP/1.1 200 Connection established\r\n\r\n"


async def test_a_consumer_refused_by_the_proxy_is_told_what_the_proxy_answered() -> None:
    async with echo_server() as target, loopback_proxy("edge-1", target) as lp:
        proxy_url = f"http://127.0.0.1:{lp.connect_port}"
        behind = kube.ClusterConnection(server="https://edge-2", proxy_url=proxy_url)
        async with await kube.new_client(behind) as consumer:
            with pytest.raises(kube.ServerUnavailableError) as refused:
                await kube.request(consumer, "GET", "/version", timeout=5)
    assert str(refused.value).startswith(
        f"https://edge-2 unreachable: the proxy {proxy_url} answered the CONNECT with 404 "
    )
    assert lp.answers() == {404: 1}


async def test_the_proxys_user_names_the_member_whatever_the_target() -> None:
    async with echo_server() as target, loopback_proxy("edge-1", target) as lp:
        reader, writer, head = await connect(lp.connect_port, "127.0.0.1:6443", user="edge-1")
        assert head.startswith(b"HTTP/1.1 200 ")
        writer.write(b"ping")
        assert await asyncio.wait_for(reader.readexactly(4), 10) == b"ping"
        writer.close()
        # Another member's name as the user reaches no tunnel of edge-1's.
        _, other, refused = await connect(lp.connect_port, "127.0.0.1:6443", user="edge-2")
        other.close()
    assert refused.startswith(b"HTTP/1.1 404 ")
    assert lp.answers() == {200: 1, 404: 1}


def _closes_on_open(box: list[Tunnel]) -> Callable[[int], Coroutine[Any, Any, None]]:
    """The agent's duplicate tunnel: a Service led it to a replica it already holds, and it
    closes that connection (as the agent does, not the tunnel from one of its own streams)
    just as a consumer's stream is asked for on it."""

    async def handler(stream_id: int) -> None:
        await box[0].ws.close(message=b"a duplicate: this replica is held already")

    return handler


async def test_a_tunnel_ending_under_a_connect_hands_it_to_the_members_older_tunnel() -> None:
    async with echo_server() as target, loopback_proxy("edge-1", target) as lp:
        _, duplicate = await lp.dial_agent(_closes_on_open)
        assert lp.routes.newest_first("edge-1")[0].tunnel is duplicate
        reader, writer, head = await connect(lp.connect_port, "edge-1:443")
        writer.write(b"ping")
        echoed = await asyncio.wait_for(reader.readexactly(4), 10)
        writer.close()
        await asyncio.wait_for(duplicate.closed.wait(), 10)
    assert head == b"HTTP/1.1 200 Connection established\r\n\r\n"
    assert echoed == b"ping"
    assert duplicate.close_reason is not None
    assert lp.answers() == {200: 1}


async def test_a_member_whose_every_tunnel_ends_under_a_connect_is_a_502_saying_so() -> None:
    async with (
        echo_server() as target,
        loopback_proxy("edge-1", target, on_open=_closes_on_open) as lp,
    ):
        _, duplicate = await lp.dial_agent(_closes_on_open)
        reader, writer, head = await connect(lp.connect_port, "edge-1:443")
        body = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        await asyncio.wait_for(duplicate.closed.wait(), 10)
    assert head.startswith(b"HTTP/1.1 502 ")
    assert body.startswith(b"member edge-1: the tunnel ended: ")
    assert lp.answers() == {502: 1}


async def test_the_agents_own_refusal_is_the_answer_and_no_older_tunnel_is_asked() -> None:
    async with echo_server() as target, loopback_proxy("edge-1", target) as lp:
        asked: list[int] = []

        def refuses(box: list[Tunnel]) -> Callable[[int], Coroutine[Any, Any, None]]:
            async def handler(stream_id: int) -> None:
                asked.append(stream_id)
                await box[0].refuse(stream_id, "cannot reach: ConnectionRefusedError")

            return handler

        await lp.dial_agent(refuses)
        reader, writer, head = await connect(lp.connect_port, "edge-1:443")
        body = await asyncio.wait_for(reader.read(), 10)
        writer.close()
    assert head.startswith(b"HTTP/1.1 502 ")
    assert body == b"member edge-1: cannot reach: ConnectionRefusedError\n"
    assert len(asked) == 1
    assert lp.answers() == {502: 1}
    assert lp.proxy_end.streams == 0  # the older tunnel was never asked

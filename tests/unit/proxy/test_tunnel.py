"""Streams over one tunnel on loopback: bytes intact, flow control, ends, and what breaks it.

No hub here (``tests/support/network/tunnels.py``): the real Tunnel at both ends over a
plain WebSocket and the real CONNECT listener; an echo server stands for the API server.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from cluster_inventory.proxy import Tunnel, wire
from cluster_inventory.proxy.wire import Kind
from tests.support.network.tunnels import connect, echo_server, loopback_proxy
from tests.support.waiting import eventually

ESTABLISHED = b"HTTP/1.1 200 Connection established\r\n\r\n"


async def _echo_through(port: int, payload: bytes) -> bytes:
    reader, writer, head = await connect(port, "edge-1:443")
    assert head == ESTABLISHED
    writer.write(payload)
    writer.write_eof()
    got = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    return got


async def test_bytes_cross_both_ways_intact_past_the_window() -> None:
    payload = os.urandom(3 * wire.WINDOW + 12345)  # needs credit several times over
    async with echo_server() as target, loopback_proxy("edge-1", target) as lp:
        assert await _echo_through(lp.connect_port, payload) == payload
        await eventually(lambda: lp.proxy_end.streams == 0, what="the stream ended at the proxy")
        await eventually(lambda: lp.agent_end.streams == 0, what="the stream ended at the agent")


async def test_a_hundred_concurrent_streams_share_one_tunnel() -> None:
    async with echo_server() as target, loopback_proxy("edge-1", target) as lp:
        payloads = [os.urandom(20000 + i) for i in range(100)]
        got = await asyncio.gather(*(_echo_through(lp.connect_port, p) for p in payloads))
        assert got == payloads
        assert lp.answers() == {200: 100}


async def test_a_consumer_that_stops_reading_does_not_stall_the_others() -> None:
    async with echo_server() as target, loopback_proxy("edge-1", target) as lp:
        _, stalled, head = await connect(lp.connect_port, "edge-1:443")
        assert head == ESTABLISHED
        # Far more than the window plus every socket buffer: the echo comes back, nobody reads.
        stalled.write(os.urandom(8 * wire.WINDOW))
        await asyncio.sleep(0)  # let it start flowing
        small = os.urandom(1000)
        assert await asyncio.wait_for(_echo_through(lp.connect_port, small), 10) == small
        stalled.close()


async def test_a_member_the_agent_cannot_reach_is_a_502_naming_why() -> None:
    async with echo_server() as target:
        pass  # closed: nothing listens there now
    async with loopback_proxy("edge-1", target) as lp:
        reader, writer, head = await connect(lp.connect_port, "edge-1:443")
        body = await reader.read()
        writer.close()
        assert head.startswith(b"HTTP/1.1 502 ")
        assert b"member edge-1: cannot reach: ConnectionRefusedError" in body


async def test_an_agent_that_never_answers_is_a_504() -> None:
    def silent(box: list[Tunnel]) -> Callable[[int], Coroutine[Any, Any, None]]:
        async def on_open(stream_id: int) -> None:
            await asyncio.Event().wait()

        return on_open

    async with (
        echo_server() as target,
        loopback_proxy("edge-1", target, on_open=silent, open_timeout=0.3) as lp,
    ):
        _, writer, head = await connect(lp.connect_port, "edge-1:443")
        writer.close()
        assert head.startswith(b"HTTP/1.1 504 ")


async def test_an_agent_opening_a_stream_is_cut_off() -> None:
    async with echo_server() as target, loopback_proxy("edge-1", target) as lp:
        await lp.agent_end.ws.send_bytes(wire.encode(Kind.OPEN, 99))
        await asyncio.wait_for(lp.proxy_end.closed.wait(), 10)
        assert (
            lp.proxy_end.close_reason == "the agent opened a stream (only the proxy opens streams)"
        )
        await eventually(lambda: lp.routes.get("edge-1") is None, what="the route is gone")


def _flooding(box: list[Tunnel]) -> Callable[[int], Coroutine[Any, Any, None]]:
    """An agent that says OPENED, then sends DATA without end, ignoring its credit."""

    async def on_open(stream_id: int) -> None:
        agent = box[0]
        agent._streams.pop(stream_id)
        await agent.ws.send_bytes(wire.encode(Kind.OPENED, stream_id))
        chunk = wire.encode(Kind.DATA, stream_id, b"x" * wire.MAX_PAYLOAD)
        for _ in range(4000):  # 256 MiB: more than any socket buffer takes
            if agent.close_reason is not None:
                return
            await agent.ws.send_bytes(chunk)

    return on_open


async def test_an_agent_sending_past_its_credit_is_cut_off() -> None:
    async with echo_server() as target, loopback_proxy("edge-1", target, on_open=_flooding) as lp:
        _, writer, head = await connect(lp.connect_port, "edge-1:443")  # and never read
        assert head == ESTABLISHED
        await asyncio.wait_for(lp.proxy_end.closed.wait(), 30)
        assert "past its credit" in (lp.proxy_end.close_reason or "")
        writer.close()


async def test_garbage_on_the_tunnel_closes_it_without_quoting_it() -> None:
    async with echo_server() as target, loopback_proxy("edge-1", target) as lp:
        await lp.agent_end.ws.send_bytes(b"\xffsecret-bytes")
        await asyncio.wait_for(lp.proxy_end.closed.wait(), 10)
        assert lp.proxy_end.close_reason == "unknown frame kind 255"


async def test_no_byte_of_a_stream_reaches_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    marker = b"Authorization: Bearer sk-MARKER-0123456789"
    caplog.set_level(logging.DEBUG)
    async with echo_server() as target, loopback_proxy("edge-1", target) as lp:
        assert await _echo_through(lp.connect_port, marker * 50) == marker * 50
        # A frame of the wrong shape carrying it ends the tunnel: the reason does not quote it.
        bad_credit = bytes([Kind.CREDIT]) + (1).to_bytes(4, "big") + marker
        await lp.agent_end.ws.send_bytes(bad_credit)
        await asyncio.wait_for(lp.proxy_end.closed.wait(), 10)
    text = "\n".join(r.getMessage() + repr(r.args) for r in caplog.records)
    assert caplog.records  # the tunnel's end was logged ...
    assert b"MARKER" not in text.encode()  # ... and nothing it carried

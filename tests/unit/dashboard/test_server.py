"""The dashboard's HTTP side over a state held in memory: headers, Host check, streams."""

from __future__ import annotations

import asyncio

import aiohttp

from cluster_inventory.dashboard import Dashboard
from tests.support.data.dashboard import FakeState
from tests.support.waiting import eventually


async def test_pages_carry_the_policy_and_answer_only_loopback_names() -> None:
    dashboard = Dashboard(FakeState(), address=("127.0.0.1", 0))  # type: ignore[arg-type]
    async with dashboard.serve() as url, aiohttp.ClientSession() as http:
        async with http.get(url + "content?sort=nonsense") as response:
            assert response.status == 200
            assert "script-src 'self'" in response.headers["Content-Security-Policy"]
            assert response.headers["Cache-Control"] == "no-store"
            assert 'data-member="inv/a"' in await response.text()
        async with http.get(url, headers={"Host": "localhost:1"}) as response:
            assert response.status == 200
        async with http.get(url, headers={"Host": "rebound.example"}) as response:
            assert response.status == 421


async def test_a_stream_says_changed_and_ends_when_its_browser_goes_away() -> None:
    state = FakeState()
    dashboard = Dashboard(
        state,  # type: ignore[arg-type]
        address=("127.0.0.1", 0),
        min_interval=0,
        ping_interval=0.2,
    )
    async with dashboard.serve() as url:
        async with aiohttp.ClientSession() as http, http.get(url + "events") as stream:
            assert stream.headers["Content-Type"].startswith("text/event-stream")
            state.bump()
            lines = [await stream.content.readline() for _ in range(3)]
            assert b"event: changed\r\n" in lines or b"event: changed\n" in lines
            assert len(dashboard._streams) == 1
        # The tab closed; a quiet hub: the next keep-alive finds it gone and ends the stream.
        await eventually(lambda: not dashboard._streams, what="the stream ended")


async def test_a_change_between_the_page_and_its_stream_is_not_missed() -> None:
    # The page is rendered at one generation; the hub changes before the browser opens the
    # stream. Without `since` that change would be taken as already seen, and the page
    # would stay stale until the next one.
    state = FakeState()
    dashboard = Dashboard(state, address=("127.0.0.1", 0), min_interval=0)  # type: ignore[arg-type]
    async with dashboard.serve() as url, aiohttp.ClientSession() as http:
        async with http.get(url) as page:
            assert 'sse-connect="events?since=0"' in await page.text()
        state.bump()  # generation 1, before the stream opens
        async with http.get(url + "events?since=0") as stream:
            lines = [await asyncio.wait_for(stream.content.readline(), 10) for _ in range(3)]
            assert b"id: 1\r\n" in lines or b"id: 1\n" in lines
        # A reconnect says what it saw last (Last-Event-ID): nothing newer, nothing sent.
        async with http.get(url + "events", headers={"Last-Event-ID": "1"}) as stream:
            state.bump()  # generation 2: this one is new to it
            lines = [await asyncio.wait_for(stream.content.readline(), 10) for _ in range(3)]
            assert b"id: 2\r\n" in lines or b"id: 2\n" in lines

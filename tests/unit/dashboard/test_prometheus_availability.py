"""The member page's availability from Prometheus's HTTP API (a loopback stand-in answering
``/api/v1/query_range`` as Prometheus documents it; the real server is the integration test's).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from cluster_inventory.api.views import ProfileView
from cluster_inventory.dashboard import build
from cluster_inventory.dashboard.availability import PrometheusAvailability
from cluster_inventory.dashboard.rows import MemberRow
from cluster_inventory.integrations.availability import PrometheusError
from cluster_inventory.testing import free_port


def member(namespace: str = "team-a", name: str = "east") -> MemberRow:
    (row,) = build([ProfileView.of({"metadata": {"namespace": namespace, "name": name}})]).members
    return row


def matrix(query: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
    """Down for the middle fifth of the window, reason APIServerUnreachable."""
    steps = int((end - start) // step) + 1
    down = range(2 * steps // 5, 3 * steps // 5)
    stamps = [start + i * step for i in range(steps)]
    labels = {"namespace": "team-a", "name": "east"}
    if "_reason" in query:
        return [
            {
                "metric": {**labels, "reason": "APIServerUnreachable"},
                "values": [[t, "1"] for i, t in enumerate(stamps) if i in down],
            }
        ]
    return [
        {
            "metric": {**labels, "status": status},
            "values": [
                [t, "1" if (i in down) == (status == "false") else "0"]
                for i, t in enumerate(stamps)
            ],
        }
        for status in ("true", "false")
    ]


@contextlib.asynccontextmanager
async def stand_in(queries: list[str], *, broken: bool = False) -> AsyncIterator[str]:
    async def query_range(request: web.Request) -> web.Response:
        q = request.query
        queries.append(q["query"])
        if broken:
            return web.json_response(
                {"status": "error", "errorType": "bad_data", "error": "parse error"}, status=400
            )
        result = matrix(q["query"], float(q["start"]), float(q["end"]), float(q["step"]))
        return web.json_response(
            {"status": "success", "data": {"resultType": "matrix", "result": result}}
        )

    app = web.Application()
    app.add_routes([web.get("/api/v1/query_range", query_range)])
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def test_each_window_and_the_outage_of_the_member_newest_first_kept_for_its_ttl() -> None:
    queries: list[str] = []
    clock = [0.0]
    async with stand_in(queries) as url:
        store = PrometheusAvailability(f"http://u:secret@{url[7:]}", clock=lambda: clock[0])
        answer = await store.availability(member())
        assert answer.error == ""
        assert answer.source == url  # the password is never shown
        assert [label for label, _ in answer.windows] == ["1h", "1d", "7d", "30d"]
        for _, fraction in answer.windows:
            assert fraction is not None and 0.75 < fraction < 0.85
        # The stand-in has each window down for its middle fifth: the hour's outage (to the
        # second), the day's before the hour began, the week's before the day; not the 30 d's.
        hour, day, week = answer.outages
        assert hour.start > day.start > week.start
        assert all(
            o.reason == "APIServerUnreachable" and o.end is not None for o in (hour, day, week)
        )
        assert 700 <= hour.seconds <= 740
        # Eight queries, each narrowed to the member's first profile.
        assert len(queries) == 8
        assert all('namespace="team-a",name="east"' in q for q in queries)
        assert await store.availability(member()) is answer and len(queries) == 8
        clock[0] = 61.0
        await store.availability(member())
        assert len(queries) == 16


async def test_a_member_prometheus_never_saw_has_no_figure_not_a_perfect_one() -> None:
    async with stand_in([]) as url:
        answer = await PrometheusAvailability(url).availability(member(name="west"))
    assert answer.error == "" and answer.outages == ()
    assert [fraction for _, fraction in answer.windows] == [None, None, None, None]


async def test_an_error_answer_or_no_server_is_said_on_the_page_never_an_empty_history() -> None:
    async with stand_in([], broken=True) as url:
        answer = await PrometheusAvailability(url).availability(member())
    assert "bad_data: parse error" in answer.error and answer.windows == ()
    gone = await PrometheusAvailability(f"http://127.0.0.1:{free_port()}").availability(member())
    assert "cannot be reached" in gone.error


def test_a_url_that_is_not_http_or_a_window_that_is_not_shown_is_refused() -> None:
    with pytest.raises(PrometheusError, match="http:// or https://"):
        PrometheusAvailability("file:///etc/passwd")
    with pytest.raises(ValueError, match="outages_window"):
        PrometheusAvailability("http://p:9090", windows=("1h",), outages_window="7d")

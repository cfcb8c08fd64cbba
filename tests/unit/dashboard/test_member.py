"""A member's page as pure functions: names not UIDs, since, mode, access without secrets."""

from __future__ import annotations

import datetime as dt
from typing import Any

import aiohttp

from cluster_inventory.api.constants import LABEL_INVENTORY_MEMBER_ID
from cluster_inventory.api.views import ProfileView
from cluster_inventory.dashboard import Dashboard, build, select
from cluster_inventory.dashboard.member import (
    Availability,
    find_member,
    member_page,
    member_path,
    mode_of,
    shown_url,
)
from cluster_inventory.dashboard.rows import MemberRow
from cluster_inventory.dashboard.selection import Query
from cluster_inventory.integrations.availability.history import Outage
from tests.support.data.dashboard import FakeState

NOW = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)
UID = "0e0a6dd4-bf74-45d0-ab5d-e4a0fd5784a8"
TOKEN = "eyJhbGciOiJSUzI1NiJ9.do-not-show"


def raw(ns: str, name: str, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": ns,
            "name": name,
            "uid": f"uid-of-{ns}-{name}",
            "labels": {LABEL_INVENTORY_MEMBER_ID: UID},
        },
        "spec": {"clusterManager": {"name": "cm"}},
        "status": status,
    }


def cond(kind: str, status: str, reason: str, at: str = "2026-11-25T11:57:00Z") -> dict[str, str]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": f"{kind} {status}",
        "lastTransitionTime": at,
    }


PROBED = raw(
    "team-a",
    "east",
    conditions=[
        cond("ControlPlaneHealthy", "False", "APIServerUnreachable"),
        cond("Joined", "True", "CredentialAccepted", "2026-11-25T10:00:00Z"),
    ],
    properties=[{"name": "region", "value": "eu", "lastObservedTime": "2026-11-25T11:00:00Z"}],
    accessProviders=[
        {
            "name": "secretreader",
            "cluster": {
                "server": f"https://user:{TOKEN}@east.example:6443/base?token={TOKEN}#x",
                "certificate-authority-data": "QUJD",
                "proxy-url": f"socks5://u:{TOKEN}@proxy:1080",
                "extensions": [
                    {"name": "client.authentication.k8s.io/exec", "extension": {"t": TOKEN}}
                ],
            },
        }
    ],
)


def overview(*profiles: dict[str, Any]):
    return build([ProfileView.of(p) for p in profiles], now=NOW)


def test_a_member_is_named_by_its_profile_never_by_its_uid() -> None:
    shown = dict(PROBED, spec={"displayName": "East (prod)", "clusterManager": {"name": "cm"}})
    ov = overview(shown, raw("team-b", "east"))
    (row,) = ov.members
    assert row.key == UID  # it groups the profiles ...
    assert (row.name, row.ref) == ("East (prod)", "team-a/east")  # ... and is never shown
    assert member_path(row) == "member/team-a/east"
    assert find_member(ov, "team-b", "east") is row and find_member(ov, "team-c", "east") is None
    # Searching by the UID finds nothing: what is not shown is not searched.
    assert select(ov, Query(text=UID[:8])).rows == ()
    assert select(ov, Query(text="prod")).rows == (row,)


def test_page_has_every_profile_conditions_since_and_the_mode() -> None:
    agent = raw(
        "team-b",
        "east",
        conditions=[
            cond("ControlPlaneHealthy", "Unknown", "AgentHeartbeatStale"),
            cond("Joined", "True", "AgentReporting"),
        ],
    )
    row = overview(PROBED, agent).members[0]
    page = member_page(row, {}, now=NOW)
    assert [d.view.key for d in page.profiles] == ["team-a/east", "team-b/east"]
    probed, pulled = page.profiles
    assert (probed.mode, pulled.mode, page.modes) == ("probe", "pull", ("probe", "pull"))
    health = probed.conditions[0]
    assert (health.condition.status, health.held_for) == ("False", "3m")
    assert health.since == dt.datetime(2026, 11, 25, 11, 57, tzinfo=dt.UTC)
    assert probed.properties == (("region", "eu", dt.datetime(2026, 11, 25, 11, tzinfo=dt.UTC)),)
    assert page.availability is None  # no long-run store: the slot stays empty


def test_modes_of_an_agent_before_it_reported_and_of_a_profile_that_says_nothing() -> None:
    waiting = ProfileView.of(
        raw("a", "b", conditions=[cond("Joined", "Unknown", "AgentNotReported")])
    )
    reported = ProfileView.of(
        raw("a", "b", conditions=[cond("cluster-inventory.dev/ReportValid", "True", "x")])
    )
    assert (mode_of(waiting), mode_of(reported), mode_of(ProfileView.of(raw("a", "b")))) == (
        "pull",
        "pull",
        "",
    )


def test_access_providers_show_no_credential_a_writer_misplaced() -> None:
    (detail,) = member_page(overview(PROBED).members[0], {}, now=NOW).profiles
    (access,) = detail.access
    assert access.server == "https://east.example:6443/base"
    assert access.proxy_url == "socks5://proxy:1080"
    assert access.extensions == ("client.authentication.k8s.io/exec",)
    assert access.ca_bytes == 4
    assert TOKEN not in repr(access)
    for hostile in ("not a url", "https://[::1", "https://:80", 7, None):
        assert shown_url(hostile) == ""


def test_the_timeline_merges_every_profile_newest_first_with_counts() -> None:
    row = overview(PROBED, raw("team-b", "east")).members[0]

    def event(name: str, at: str, **extra: Any) -> dict[str, Any]:
        return {
            "metadata": {"name": name},
            "type": "Warning",
            "reason": name,
            "eventTime": at,
            **extra,
        }

    page = member_page(
        row,
        {
            "team-a/east": [event("old", "2026-11-25T10:00:00.000000Z")],
            "team-b/east": [
                event(
                    "flapping",
                    "2026-11-25T09:00:00.000000Z",
                    series={"count": 40, "lastObservedTime": "2026-11-25T11:59:00.000000Z"},
                )
            ],
        },
        events_error="team-c/east: forbidden to this reader",
        now=NOW,
    )
    assert [(t.profile, t.event.reason, t.event.count, t.ago) for t in page.timeline] == [
        ("team-b/east", "flapping", 40, "60s"),
        ("team-a/east", "old", 1, "120m"),
    ]
    assert page.events_error


class _Store:
    async def availability(self, member: MemberRow) -> Availability:
        return Availability(
            windows=(("1h", 0.95), ("30d", None)),
            outages=(
                Outage(
                    start=NOW,
                    end=None,
                    seconds=60.0,
                    status="False",
                    reason="<b>APIServerUnreachable</b>",
                ),
            ),
            source="http://prometheus:9090",
        )


class _MemberState(FakeState):
    def __init__(self) -> None:
        super().__init__()
        self._overview = overview(PROBED)
        self.asked: list[str] = []

    async def events_of(self, row: MemberRow) -> tuple[dict[str, list[dict[str, Any]]], str]:
        self.asked.append(row.ref)
        return {"team-a/east": []}, ""


async def test_the_member_routes_answer_404_escaped_and_fill_the_availability_slot() -> None:
    for store in (None, _Store()):
        state = _MemberState()
        dashboard = Dashboard(state, address=("127.0.0.1", 0), availability=store)  # type: ignore[arg-type]
        async with dashboard.serve() as url, aiohttp.ClientSession() as http:
            async with http.get(url) as response:
                body = await response.text()
                assert 'href="member/team-a/east"' in body and UID not in body
            async with http.get(url + "member/team-a/east") as response:
                assert response.status == 200
                body = await response.text()
                assert "script-src 'self'" in response.headers["Content-Security-Policy"]
                assert 'href="../../static/dashboard.css"' in body
                assert "ClusterProfile team-a/east" in body and UID not in body
                assert TOKEN not in body
                assert ('id="availability"' in body) is (store is not None)
                if store is not None:
                    assert "95.000%" in body and "&lt;b&gt;APIServerUnreachable" in body
            async with http.get(url + "member/team-a/east/content") as response:
                assert response.status == 200 and "<html" not in await response.text()
            async with http.get(url + "member/team-a/%3Cscript%3Ealert(1)%3C%2Fscript%3E") as r:
                assert r.status == 404
                body = await r.text()
                assert "<script>alert" not in body and "&lt;script&gt;alert(1)" in body
        assert state.asked == ["team-a/east", "team-a/east"]

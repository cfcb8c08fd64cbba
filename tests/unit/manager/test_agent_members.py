"""Agent members on the hub: the report and the heartbeat as an observation (pure parts)."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

import pytest

from cluster_inventory.manager import ManagerConfig
from cluster_inventory.manager.members.agent_member import (
    AgentMember,
    AgentReports,
    advertised_connection,
    agent_observation,
)
from cluster_inventory.manager.rules.agent_report_fields import (
    CheckedReport,
    ReportBounds,
    check_report,
)
from cluster_inventory.manager.rules.heartbeat_staleness import after_gap, counted_duration, silence
from cluster_inventory.manager.rules.member_keys import AgentMemberKey, member_key
from cluster_inventory.testing import CertificateAuthority

NOW = dt.datetime(2026, 11, 27, 8, 0, tzinfo=dt.UTC)


def _report(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "edge-1", "namespace": "ns"}, "status": status}


def _checked(report: dict[str, Any]) -> CheckedReport | None:
    status = report["status"]
    return check_report(status, None, ReportBounds(), NOW) if status else None


def test_no_report_yet_is_unknown_and_names_the_member() -> None:
    obs = agent_observation("edge-1", _checked(_report()), None)
    assert (obs.healthy.status, obs.healthy.reason) == ("Unknown", "AgentNotReported")
    assert obs.joined.status == "Unknown" and "edge-1" in obs.healthy.message
    assert obs.properties is None and obs.member_id is None


def test_a_report_is_the_members_observation() -> None:
    report = _report(
        memberID="uid-1",
        kubernetesVersion="v1.36.3",
        apiServerHealth={"status": "False", "reason": "ReadyzCheckFailed", "message": "etcd"},
        properties=[{"name": "region", "value": "eu", "lastObservedTime": "2026-11-27T07:00:00Z"}],
    )
    obs = agent_observation("edge-1", _checked(report), None)
    assert (obs.member_id, obs.version) == ("uid-1", "v1.36.3")
    assert (obs.healthy.status, obs.healthy.reason, obs.healthy.message) == (
        "False",
        "ReadyzCheckFailed",
        "etcd",
    )
    assert obs.joined.status == "True"
    assert obs.properties is not None
    [prop] = obs.properties
    assert (prop.name, prop.value) == ("region", "eu")
    assert prop.observed == dt.datetime(2026, 11, 27, 7, 0, tzinfo=dt.UTC)


def test_a_stale_heartbeat_turns_health_unknown_and_keeps_the_rest() -> None:
    report = _report(
        memberID="uid-1",
        kubernetesVersion="v1.36.3",
        apiServerHealth={"status": "True", "reason": "Healthy"},
        properties=[{"name": "region", "value": "eu"}],
    )
    obs = agent_observation("edge-1", _checked(report), "not renewed for 300 s")
    assert (obs.healthy.status, obs.healthy.reason) == ("Unknown", "AgentHeartbeatStale")
    assert obs.healthy.message == "not renewed for 300 s"
    assert obs.member_id == "uid-1" and obs.properties is not None


def test_the_advertised_server_ca_and_proxy() -> None:
    pem = CertificateAuthority().cert_pem
    ca = base64.b64encode(pem).decode()
    report = _report(server="https://edge", certificateAuthorityData=ca, proxyURL="socks5://p")
    checked = _checked(report)
    assert checked is not None
    conn = advertised_connection("edge-1", checked.fields)
    assert conn is not None
    assert (conn.server, conn.ca_data, conn.proxy_url) == ("https://edge", pem, "socks5://p")
    unreachable = _checked(_report(memberID="u"))
    assert advertised_connection("edge-1", unreachable.fields if unreachable else None) is None
    bad = _checked(_report(server="https://e", certificateAuthorityData="%"))
    assert bad is not None
    conn = advertised_connection("edge-1", bad.fields)
    assert conn is not None and conn.ca_data is None
    assert [p.field for p in bad.problems] == ["status.certificateAuthorityData"]


def test_a_new_advertised_proxy_alone_changes_the_member() -> None:
    """An agent restarted with another ``--proxy-url`` (same health): its profiles follow."""
    reports = AgentReports(object(), ManagerConfig(namespace="ns"))  # type: ignore[arg-type]
    [cached] = reports.reports.informers
    [leases] = reports.leases.informers
    leases._apply("ADDED", _lease("2026-11-27T08:00:00.000000Z"))
    changes: list[None] = []
    member = AgentMember(
        AgentMemberKey("ns", "edge-1"),
        config=ManagerConfig(namespace="ns"),
        on_change=lambda: changes.append(None),
        reports=reports,
        now=lambda: NOW,
    )
    health = {"status": "True", "reason": "APIServerReady"}
    report = _report(apiServerHealth=health, server="https://edge", proxyURL="http://p:1")
    cached._apply(
        "ADDED", {**report, "metadata": {**report["metadata"], "uid": "r", "resourceVersion": "1"}}
    )
    member.refresh()
    assert member.advertised is not None and member.advertised.proxy_url == "http://p:1"
    report = _report(apiServerHealth=health, server="https://edge", proxyURL="socks5://p:2")
    cached._apply(
        "MODIFIED",
        {**report, "metadata": {**report["metadata"], "uid": "r", "resourceVersion": "2"}},
    )
    member.refresh()
    assert member.advertised.proxy_url == "socks5://p:2"
    assert len(changes) == 2
    member.refresh()  # nothing new: no change
    assert len(changes) == 2


class _Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _lease(renewed: str | None, duration: int = 10) -> dict[str, Any]:
    return {
        "metadata": {"name": "edge-1", "namespace": "ns", "uid": "l1", "resourceVersion": "1"},
        "spec": {"leaseDurationSeconds": duration, "renewTime": renewed},
    }


def test_a_heartbeat_is_stale_after_duration_times_multiple_on_our_clock() -> None:
    clock = _Clock()
    reports = AgentReports(
        object(),  # type: ignore[arg-type]
        ManagerConfig(namespace="ns", agent_heartbeat_multiple=3),
        clock=clock,
    )
    assert reports.heartbeat("edge-1")[0] == "the heartbeat Lease ns/edge-1 does not exist"
    [leases] = reports.leases.informers
    leases._apply("ADDED", _lease("2020-01-01T00:00:00.000000Z"))
    # The agent's clock is never read: a renewal seen now counts from now.
    assert reports.heartbeat("edge-1") == (None, pytest.approx(30.0))
    clock.t += 29
    assert reports.heartbeat("edge-1") == (None, pytest.approx(1.0))
    leases._apply("MODIFIED", _lease("2020-01-01T00:00:29.000000Z"))
    clock.t += 29
    assert reports.heartbeat("edge-1")[0] is None
    clock.t += 2
    stale, left = reports.heartbeat("edge-1")
    assert left is None and stale is not None
    assert "ns/edge-1" in stale and "31 s" in stale and "10 s x 3" in stale


def test_the_multiple_must_be_at_least_one() -> None:
    with pytest.raises(ValueError, match="agent_heartbeat_multiple"):
        ManagerConfig(agent_heartbeat_multiple=0.5)


def test_an_agent_members_key_is_its_own_member_key() -> None:
    key = AgentMemberKey("ns", "edge-1")
    assert member_key(key) is key
    assert str(key) == "agent member ns/edge-1"


def _reports(clock: _Clock) -> tuple[AgentReports, Any]:
    reports = AgentReports(
        object(),  # type: ignore[arg-type]
        ManagerConfig(namespace="ns", agent_heartbeat_multiple=3),
        clock=clock,
    )
    [leases] = reports.leases.informers
    return reports, leases


def test_our_blindness_never_turns_a_heartbeat_stale_and_the_resume_restarts_its_grace() -> None:
    clock = _Clock()
    reports, leases = _reports(clock)
    resumed: list[str] = []
    reports.on_resume(lambda: resumed.append("look again"))
    leases._apply("ADDED", _lease("t0"))
    clock.t += 8
    leases._set_failure("ClientConnectorError: the hub is down")  # the watch broke
    clock.t += 300  # the hub is down far longer than 10 s x 3
    assert reports.heartbeat("edge-1") == (None, None)  # no verdict, no timer while blind
    leases._set_failure(None)  # relisted: the Lease was not renewed meanwhile
    assert resumed == ["look again"]
    # A gap of at least a lease duration: the whole grace again, as at a replica's start.
    assert reports.heartbeat("edge-1") == (None, pytest.approx(30.0))
    clock.t += 30
    assert reports.heartbeat("edge-1")[0] is not None  # silent while we saw: stale


def test_a_short_gap_does_not_count_and_does_not_restart_the_grace() -> None:
    clock = _Clock()
    reports, leases = _reports(clock)
    leases._apply("ADDED", _lease("t0"))
    clock.t += 20
    leases._set_failure("ClientPayloadError: watch ended")
    clock.t += 0.5  # reconnected at once: less than a lease duration
    leases._set_failure(None)
    assert reports.heartbeat("edge-1") == (None, pytest.approx(10.0))


def test_a_heartbeat_stale_before_we_went_blind_stays_stale() -> None:
    clock = _Clock()
    reports, leases = _reports(clock)
    leases._apply("ADDED", _lease("t0"))
    clock.t += 31
    assert reports.heartbeat("edge-1")[0] is not None
    leases._set_failure("ClientConnectorError: the hub is down")
    clock.t += 60
    assert reports.heartbeat("edge-1")[0] is not None
    leases._set_failure(None)
    assert reports.heartbeat("edge-1")[0] is not None
    leases._apply("MODIFIED", _lease("t1"))  # renewed: fresh from the renewal seen
    assert reports.heartbeat("edge-1") == (None, pytest.approx(30.0))


@pytest.mark.parametrize(
    ("seen_at", "resumed_at", "expected"),
    [
        (95.0, 160.0, 160.0),  # fresh when the view broke, long gap: the whole grace again
        (95.0, 101.0, 96.0),  # a gap shorter than the duration: only the gap does not count
        (50.0, 160.0, 50.0),  # stale before the break (30 s x 2 >= limit 40): unchanged
        (120.0, 160.0, 120.0),  # renewal seen since (the relist shows it): counts from it
    ],
)
def test_after_gap(seen_at: float, resumed_at: float, expected: float) -> None:
    start = after_gap(seen_at, blind_since=100.0, resumed_at=resumed_at, duration=10, limit=40)
    assert start == pytest.approx(expected)


def test_silence_stops_while_blind() -> None:
    assert silence(10.0, 50.0, None) == 40.0
    assert silence(10.0, 50.0, 20.0) == 10.0
    assert silence(30.0, 50.0, 20.0) == 0.0


def test_a_fresh_heartbeats_renewal_reconciles_nothing_a_stale_ones_does() -> None:
    clock = _Clock()
    reports = AgentReports(
        object(),  # type: ignore[arg-type]
        ManagerConfig(namespace="ns", agent_heartbeat_multiple=3),
        clock=clock,
    )
    first, renewed = _lease("2020-01-01T00:00:00.000000Z"), _lease("2020-01-01T00:00:10.000000Z")
    assert reports.lease_keys("ADDED", first, None) == ["edge-1"]
    [leases] = reports.leases.informers
    leases._apply("ADDED", first)
    assert reports.heartbeat("edge-1")[0] is None
    # Fresh: the renewal only moves the deadline, which the timed reconcile reads.
    assert reports.lease_keys("MODIFIED", renewed, first) == []
    longer = _lease("2020-01-01T00:00:10.000000Z", duration=20)
    assert reports.lease_keys("MODIFIED", longer, first) == ["edge-1"]
    clock.t += 31
    assert reports.heartbeat("edge-1")[0] is not None  # stale now
    assert reports.lease_keys("MODIFIED", renewed, first) == ["edge-1"]
    leases._apply("MODIFIED", renewed)
    assert reports.heartbeat("edge-1")[0] is None
    assert reports.lease_keys("MODIFIED", renewed, first) == []
    assert reports.lease_keys("DELETED", renewed, None) == ["edge-1"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (30, (30.0, False)),  # within the bounds: the agent's own
        (10, (10.0, False)),
        (3600, (3600.0, False)),
        (None, (60.0, False)),  # the Lease names none: the manager's
        (9, (60.0, True)),
        (2**31 - 1, (60.0, True)),  # 68 years
        ("NaN", (60.0, True)),
        ("soon", (60.0, True)),
    ],
)
def test_a_lease_duration_outside_the_bounds_counts_as_the_managers(
    given: object, expected: tuple[float, bool]
) -> None:
    assert counted_duration(given, configured=60.0, low=10.0, high=3600.0) == expected


def test_a_68_year_lease_goes_stale_on_the_managers_grace_and_is_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = _Clock()
    config = ManagerConfig(
        namespace="ns",
        agent_heartbeat_multiple=2,
        agent_lease_duration=5,
        agent_lease_duration_min=1,
        agent_lease_duration_max=10,
    )
    reports = AgentReports(object(), config, clock=clock)  # type: ignore[arg-type]
    [leases] = reports.leases.informers
    leases._apply("ADDED", _lease("2026-11-27T08:00:00.000000Z", duration=2**31 - 1))
    assert reports.heartbeat("edge-1") == (None, pytest.approx(10.0))  # 5 s x 2
    clock.t += 10
    stale, _ = reports.heartbeat("edge-1")
    assert stale is not None and "lease duration 5 s x 2" in stale
    assert "outside the manager's 1-10 s" in stale
    said = [r for r in caplog.records if "2147483647" in r.getMessage()]
    assert len(said) == 1 and said[0].levelname == "WARNING"
    leases._apply("MODIFIED", _lease("2026-11-27T08:00:10.000000Z", duration=3))
    assert reports.heartbeat("edge-1") == (None, pytest.approx(6.0))  # its own 3 s x 2


def test_the_configured_lease_duration_lies_within_its_bounds() -> None:
    with pytest.raises(ValueError, match="agent_lease_duration"):
        ManagerConfig(agent_lease_duration=5)
    with pytest.raises(ValueError, match="agent_lease_duration"):
        ManagerConfig(agent_lease_duration_min=0, agent_lease_duration=1)

"""What the agent writes in its MemberReport status, and when a write is due (pure)."""

from __future__ import annotations

import base64
import datetime as dt

from cluster_inventory.agent.report import (
    MemberView,
    ObservedValue,
    advertised,
    keep_observed_times,
    report_status,
    same_report,
)
from cluster_inventory.api.member_report import MemberReportStatus
from cluster_inventory.kube.probes import ConditionState

T0 = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
T1 = T0 + dt.timedelta(seconds=30)
HEALTHY = ConditionState("True", "APIServerReady", "readyz: all checks passed")
ACCESS = advertised("https://m.example:6443", b"-----BEGIN CERTIFICATE-----\n", None)


def _view(**changes: object) -> MemberView:
    base = MemberView(
        member_id="uid-1",
        version="v1.33.1",
        health=HEALTHY,
        probed=T0,
        properties={"b": ObservedValue("2", T0), "a": ObservedValue("1", T0)},
    )
    return MemberView(**{**base.__dict__, **changes})  # type: ignore[arg-type]


def test_the_status_holds_what_the_agent_knows_in_the_crd_shape() -> None:
    status = report_status(_view(), ACCESS, "0.1.0", None)
    assert status == {
        "memberID": "uid-1",
        "kubernetesVersion": "v1.33.1",
        "server": "https://m.example:6443",
        "certificateAuthorityData": base64.b64encode(b"-----BEGIN CERTIFICATE-----\n").decode(),
        "agentVersion": "0.1.0",
        "apiServerHealth": {
            "status": "True",
            "reason": "APIServerReady",
            "message": "readyz: all checks passed",
            "lastProbeTime": "2030-01-01T00:00:00Z",
        },
        "properties": [
            {"name": "a", "value": "1", "lastObservedTime": "2030-01-01T00:00:00Z"},
            {"name": "b", "value": "2", "lastObservedTime": "2030-01-01T00:00:00Z"},
        ],
    }
    assert MemberReportStatus.from_dict(status).to_dict() == status


def test_advertised_says_only_what_was_given() -> None:
    assert advertised(None, None, None) == {}
    assert advertised(None, None, "socks5://tunnel:1080") == {"proxyURL": "socks5://tunnel:1080"}


def test_a_new_probe_time_alone_is_no_change() -> None:
    written = report_status(_view(), ACCESS, "0.1.0", None)
    again = report_status(_view(probed=T1), ACCESS, "0.1.0", written)
    assert again["apiServerHealth"]["lastProbeTime"] != written["apiServerHealth"]["lastProbeTime"]
    assert same_report(again, written)


def test_health_property_and_version_changes_are_changes() -> None:
    written = report_status(_view(), ACCESS, "0.1.0", None)
    down = ConditionState("False", "APIServerUnreachable", "refused")
    changed = [
        _view(health=down),
        _view(version="v1.34.0"),
        _view(properties={"a": ObservedValue("1", T0)}),
        _view(properties={"a": ObservedValue("9", T1), "b": ObservedValue("2", T0)}),
    ]
    for view in changed:
        assert not same_report(report_status(view, ACCESS, "0.1.0", written), written)
    assert not same_report(written, None)
    assert not same_report(report_status(_view(), {}, "0.1.0", written), written)


def test_what_the_agent_has_not_read_yet_keeps_its_last_reported_value() -> None:
    written = report_status(_view(), ACCESS, "0.1.0", None)
    unread = MemberView(health=HEALTHY, probed=T1)
    status = report_status(unread, ACCESS, "0.1.0", written)
    assert status["memberID"] == "uid-1"
    assert status["kubernetesVersion"] == "v1.33.1"
    assert status["properties"] == written["properties"]
    assert same_report(status, written)


def test_a_property_over_the_crd_limit_is_left_out() -> None:
    huge = "x" * 128001
    status = report_status(
        _view(properties={"big": ObservedValue(huge, T0), "a": ObservedValue("1", T0)}),
        ACCESS,
        "0.1.0",
        None,
    )
    assert [p["name"] for p in status["properties"]] == ["a"]


def test_no_more_properties_than_the_crd_holds() -> None:
    many = {f"p{i:03d}": ObservedValue("v", T0) for i in range(300)}
    status = report_status(_view(properties=many), ACCESS, "0.1.0", None)
    assert len(status["properties"]) == 256
    assert status["properties"][0]["name"] == "p000"


def test_a_restarted_agent_keeps_the_observed_time_of_an_unchanged_value() -> None:
    reported = [
        {"name": "a", "value": "1", "lastObservedTime": "2029-06-01T00:00:00Z"},
        {"name": "b", "value": "old", "lastObservedTime": "2029-06-01T00:00:00Z"},
    ]
    listed = {
        "a": ObservedValue("1", T1),
        "b": ObservedValue("new", T1),
        "c": ObservedValue("3", T1),
    }
    kept = keep_observed_times(listed, reported)
    assert kept["a"] == ObservedValue("1", dt.datetime(2029, 6, 1, tzinfo=dt.UTC))
    assert kept["b"] == listed["b"]
    assert kept["c"] == listed["c"]

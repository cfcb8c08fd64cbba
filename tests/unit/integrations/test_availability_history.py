"""Availability and outages from range-query series (pure), and refusing what is not one."""

from __future__ import annotations

import datetime as dt

import pytest

from cluster_inventory.integrations.availability import (
    SeriesError,
    TimeSeries,
    condition_queries,
    decode_matrix,
    default_step,
    parse_duration,
    summarize,
)

T0 = 1_700_000_000.0


def series(status: str, values: str, name: str = "member2", **labels: str) -> TimeSeries:
    """``values`` one character per 10 s step from T0: 1, 0, or . for no point."""
    points = tuple(
        (T0 + 10 * i, float(c)) for i, c in enumerate(values) if c != "."
    )  # fmt: skip
    return TimeSeries(
        labels={"namespace": "team-a", "name": name, "status": status, **labels}, points=points
    )


def test_an_outage_has_its_start_end_length_status_and_reason() -> None:
    true = series("true", "1111000011")
    false = series("false", "0000110000")
    unknown = series("unknown", "0000001100")
    reason = TimeSeries(
        labels={"namespace": "team-a", "name": "member2", "reason": "ReadyzFailed"},
        points=((T0 + 40, 1.0), (T0 + 50, 1.0)),
    )
    report = summarize([true, false, unknown], [reason], start=T0, end=T0 + 90, step=10)
    (member,) = report.members
    assert (member.namespace, member.name) == ("team-a", "member2")
    assert member.availability == pytest.approx(0.6)
    (outage,) = member.outages
    assert outage.start == dt.datetime.fromtimestamp(T0 + 40, dt.UTC)
    assert outage.end == dt.datetime.fromtimestamp(T0 + 80, dt.UTC)
    assert outage.seconds == 40
    assert (outage.status, outage.reason) == ("False", "ReadyzFailed")
    assert [s[2] for s in member.states] == ["up", "down", "up"]


def test_an_outage_still_running_has_no_end_and_unobserved_time_counts_for_neither() -> None:
    true = series("true", "11....1100")
    unknown = series("unknown", "00....0011")
    report = summarize([true, unknown], start=T0, end=T0 + 90, step=10)
    (member,) = report.members
    assert member.observed_seconds == 60
    assert member.availability == pytest.approx(4 / 6)
    (outage,) = member.outages
    assert outage.end is None and outage.seconds == 20
    assert (outage.status, outage.reason) == ("Unknown", "")
    assert [s[2] for s in member.states] == ["up", "unobserved", "up", "down"]


def test_any_replica_saying_true_wins_and_profiles_stay_apart() -> None:
    a = series("true", "1111111111", pod="manager-0")
    b = series("false", "0011000000", pod="manager-1")
    other = series("false", "1111111111", name="member3")
    report = summarize([a, b, other], start=T0, end=T0 + 90, step=10)
    by_name = {m.name: m for m in report.members}
    assert by_name["member2"].availability == 1.0 and not by_name["member2"].outages
    assert by_name["member3"].availability == 0.0
    assert len(by_name["member3"].outages) == 1


def test_a_series_without_a_profile_s_labels_is_left_out() -> None:
    stray = TimeSeries(labels={"status": "true"}, points=((T0, 1.0),))
    assert summarize([stray], start=T0, end=T0 + 10, step=10).members == ()


def test_decode_refuses_what_is_not_a_matrix_naming_the_field() -> None:
    ok = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"namespace": "a", "name": "b"}, "values": [[T0, "1"]]}
    ]}}  # fmt: skip
    assert decode_matrix(ok, query="q")[0].points == ((T0, 1.0),)
    bad = [
        ({"status": "error", "error": "parse error"}, "status"),
        ({"status": "success", "data": {"resultType": "vector", "result": []}}, "resultType"),
        ({"status": "success", "data": {"resultType": "matrix", "result": [
            {"metric": {"name": 3}, "values": []}]}}, r"data.result\[0\].metric"),
        ({"status": "success", "data": {"resultType": "matrix", "result": [
            {"metric": {}, "values": [[T0, "x"]]}]}}, r"values\[0\]"),
        ({"status": "success", "data": {"resultType": "matrix", "result": [
            {"metric": {}, "values": [["NaN", "1"]]}]}}, r"values\[0\]"),
        ([], "body"),
    ]  # fmt: skip
    for body, field in bad:
        with pytest.raises(SeriesError, match=field):
            decode_matrix(body, query="q")


@pytest.mark.parametrize(
    ("text", "seconds"), [("7d", 604800), ("1h30m", 5400), ("90s", 90), ("250ms", 0.25)]
)
def test_durations_read_as_prometheus_writes_them(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "7", "d", "1.5h", "-1h", "0s", "7 d"])
def test_a_bad_duration_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_the_default_step_keeps_a_window_under_prometheus_s_point_limit() -> None:
    assert default_step(300) == 1
    assert default_step(7 * 86400) == 61
    assert 30 * 86400 / default_step(30 * 86400) <= 10_000


def test_queries_quote_what_they_match() -> None:
    statuses, reasons = condition_queries(namespace='te"am')
    assert 'namespace="te\\"am"' in statuses
    assert statuses.startswith("max by (namespace, name, status) (")
    assert "cluster_inventory_cluster_profile_condition_reason{" in reasons

"""client-go's Event correlation: aggregation, counting and the spam filter, on a fake clock."""

from __future__ import annotations

import pytest

from cluster_inventory.kube._event_correlation import (
    AGGREGATED_NOTE_PREFIX,
    CorrelatorOptions,
    EventCorrelator,
    EventReport,
)
from cluster_inventory.kube.workqueue import BucketRateLimiter

PROFILE = {
    "apiVersion": "multicluster.x-k8s.io/v1alpha1",
    "kind": "ClusterProfile",
    "namespace": "team-a",
    "name": "member2",
    "uid": "u-1",
}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def report(note: str = "readyz: etcd failed", **changes: object) -> EventReport:
    fields: dict[str, object] = {
        "regarding": PROFILE,
        "reason": "ControlPlaneUnhealthy",
        "note": note,
        "action": "Probe",
        "event_type": "Warning",
        "controller": "cluster-inventory.dev/cluster-manager",
        "instance": "replica-0",
    }
    fields.update(changes)
    return EventReport(**fields)  # type: ignore[arg-type]


def test_a_repeated_report_counts_on_one_event() -> None:
    clock = Clock()
    c = EventCorrelator(clock=clock)
    first = c.correlate(report())
    clock.now += 1
    second = c.correlate(report())
    assert first.key == second.key and not first.aggregated
    assert (first.count, second.count) == (1, 2)
    assert first.write and second.write


def test_the_tenth_distinct_note_in_600_s_aggregates_and_the_aggregate_counts() -> None:
    clock = Clock()
    c = EventCorrelator(clock=clock)
    seen = []
    for i in range(12):
        clock.now += 30
        seen.append(c.correlate(report(f"readyz: check {i} failed")))
    assert not any(s.aggregated for s in seen[:9])
    assert len({s.key for s in seen[:9]}) == 9
    tenth, eleventh, twelfth = seen[9:]
    assert tenth.aggregated and tenth.key == eleventh.key == twelfth.key
    assert tenth.note == AGGREGATED_NOTE_PREFIX + "readyz: check 9 failed"
    assert [s.count for s in seen[9:]] == [1, 2, 3]


def test_alike_reports_are_forgotten_600_s_after_the_last() -> None:
    clock = Clock()
    c = EventCorrelator(clock=clock)
    for i in range(9):
        c.correlate(report(f"note {i}"))
    clock.now += 601
    assert not c.correlate(report("note 9")).aggregated
    # Within the window they still aggregate (the window slides with each report).
    for i in range(10, 19):
        clock.now += 599
        last = c.correlate(report(f"note {i}"))
    assert last.aggregated


def test_different_reasons_or_objects_do_not_aggregate_together() -> None:
    c = EventCorrelator(clock=Clock())
    for i in range(9):
        c.correlate(report(f"note {i}"))
    assert not c.correlate(report("other", reason="Joined")).aggregated
    other = {**PROFILE, "name": "member3"}
    assert not c.correlate(report("note 99", regarding=other)).aggregated


def test_dedupe_stands_in_for_the_note() -> None:
    c = EventCorrelator(clock=Clock())
    a = c.correlate(report("first wording", dedupe="k"))
    b = c.correlate(report("second wording", dedupe="k"))
    assert a.key == b.key and b.count == 2


def test_spam_filter_allows_25_then_one_per_300_s_per_object_and_type() -> None:
    clock = Clock()
    c = EventCorrelator(clock=clock)
    writes = [c.correlate(report()).write for _ in range(30)]
    assert writes == [True] * 25 + [False] * 5
    # Another type of the same object, and another object, have buckets of their own.
    assert c.correlate(report(event_type="Normal", reason="ControlPlaneHealthy")).write
    assert c.correlate(report(regarding={**PROFILE, "name": "member3"})).write
    clock.now += 299
    assert not c.correlate(report()).write
    clock.now += 1
    held = c.correlate(report())
    assert held.write
    # What the filter held back is still counted: the write carries every occurrence.
    assert held.count == 32
    assert not c.correlate(report()).write


def test_a_flapping_object_writes_25_then_one_per_5_minutes() -> None:
    clock = Clock()
    c = EventCorrelator(clock=clock)
    writes_per_minute = []
    for _minute in range(11):
        writes = 0
        for second in range(60):
            clock.now += 1
            healthy = second % 2 == 0
            seen = c.correlate(
                report(
                    "ok" if healthy else "readyz: etcd failed",
                    event_type="Normal" if healthy else "Warning",
                    reason="ControlPlaneHealthy" if healthy else "ControlPlaneUnhealthy",
                )
            )
            writes += seen.write
        writes_per_minute.append(writes)
    # Two buckets (Normal, Warning): 25 each at once, then one each per 300 s.
    assert writes_per_minute == [50, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2]


def test_settle_and_exists_track_the_servers_count() -> None:
    c = EventCorrelator(clock=Clock())
    first = c.correlate(report())
    c.exists(first.key)  # a restarted replica: the Event was there
    again = c.correlate(report())
    assert (again.count, again.known) == (1, False)
    c.settle(again.key, 7)
    assert c.correlate(report()).count == 8


def test_the_caches_forget_the_least_recently_used_key() -> None:
    c = EventCorrelator(CorrelatorOptions(lru_size=2), clock=Clock())
    c.correlate(report(regarding={**PROFILE, "name": "a"}))
    c.correlate(report(regarding={**PROFILE, "name": "b"}))
    c.correlate(report(regarding={**PROFILE, "name": "a"}))
    c.correlate(report(regarding={**PROFILE, "name": "c"}))  # evicts b
    assert c.correlate(report(regarding={**PROFILE, "name": "b"})).count == 1
    assert c.correlate(report(regarding={**PROFILE, "name": "c"})).count == 2


@pytest.mark.parametrize(
    ("field", "value"), [("lru_size", 0), ("burst", 0), ("max_events", 0), ("refill_interval", 0)]
)
def test_options_refuse_limits_that_mean_nothing(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        CorrelatorOptions(**{field: value})  # type: ignore[arg-type]


def test_bucket_try_accept_takes_nothing_when_empty() -> None:
    now = [0.0]
    bucket = BucketRateLimiter(rate=1.0, burst=2, clock=lambda: now[0])
    assert [bucket.try_accept() for _ in range(3)] == [True, True, False]
    now[0] = 0.5
    assert not bucket.try_accept()
    now[0] = 1.0
    assert bucket.try_accept()

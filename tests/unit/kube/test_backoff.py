"""kube.Backoff and kube.Throttle: growing delays, one warning per streak, one line at its end."""

from __future__ import annotations

import logging

import pytest

from cluster_inventory import kube

_LOG = logging.getLogger("test.backoff")


def test_delays_grow_from_first_by_the_factor_up_to_the_cap() -> None:
    rule = kube.Backoff(first=0.5, cap=10)
    assert [rule.delay(n) for n in range(1, 8)] == [0.5, 1, 2, 4, 8, 10, 10]
    assert rule.delay(0) == 0.5  # a streak has at least one failure
    assert rule.delay(10_000) == 10  # a long outage stays at the cap, no overflow
    assert kube.Backoff(first=1, cap=60, factor=3).delay(3) == 9


def test_jitter_only_adds_up_to_its_share() -> None:
    rule = kube.Backoff(first=2, cap=2, jitter=0.25)
    assert rule.delay(5, rnd=0.0) == 2
    assert rule.delay(5, rnd=0.999) == pytest.approx(2.4995)


@pytest.mark.parametrize(
    "settings",
    [
        {"first": 0, "cap": 1},
        {"first": 2, "cap": 1},
        {"first": 1, "cap": 2, "factor": 0.5},
        {"first": 1, "cap": 2, "jitter": -0.1},
    ],
)
def test_a_bad_rule_is_refused_naming_it(settings: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="backoff"):
        kube.Backoff(**settings)


def _throttle(clock: list[float], slept: list[float]) -> kube.Throttle:
    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    return kube.Throttle(
        "renew Lease ns/x",
        logger=_LOG,
        backoff=kube.Backoff(first=1, cap=4),
        extra={"object": "ns/x"},
        sleep=sleep,
        clock=lambda: clock[0],
    )


async def test_a_streak_is_one_warning_and_its_end_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock, slept = [100.0], []
    throttle = _throttle(clock, slept)
    with caplog.at_level(logging.DEBUG, logger="test.backoff"):
        for _ in range(4):
            await throttle.pause(kube.KubeError("hub down"), note="transient")
        assert throttle.failing and throttle.failures == 4
        assert throttle.succeeded() is True
        assert throttle.succeeded() is False  # nothing to end twice
    assert slept == [1, 2, 4, 4]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings] == [
        "cannot renew Lease ns/x: hub down (transient); retrying with backoff (next try in 1.0 s)"
    ]
    assert warnings[0].object == "ns/x"  # type: ignore[attr-defined]
    assert sum(r.levelno == logging.DEBUG for r in caplog.records) == 3
    (info,) = [r for r in caplog.records if r.levelno == logging.INFO]
    assert info.getMessage() == "renew Lease ns/x: succeeded again after 4 failed tries (11 s)"
    assert not throttle.failing and throttle.last_error is None


async def test_a_new_streak_after_a_success_warns_again_from_the_first_delay(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock, slept = [0.0], []
    throttle = _throttle(clock, slept)
    with caplog.at_level(logging.WARNING, logger="test.backoff"):
        await throttle.pause(kube.KubeError("one"))
        await throttle.pause(kube.KubeError("two"))
        throttle.succeeded()
        await throttle.pause(kube.KubeError("three"))
    assert slept == [1, 2, 1]
    assert len(caplog.records) == 2


async def test_a_caller_with_its_own_schedule_gives_the_delay() -> None:
    clock, slept = [0.0], []
    throttle = _throttle(clock, slept)
    await throttle.pause(kube.KubeError("rotation failed"), delay=360.0)
    assert slept == [360.0]


async def test_attempt_swallows_only_the_errors_named_and_ends_the_streak() -> None:
    clock, slept = [0.0], []
    throttle = _throttle(clock, slept)
    async with throttle.attempt(errors=(kube.KubeError,)):
        raise kube.ServerUnavailableError(status=503, reason="Unavailable", message="x")
    assert throttle.failures == 1 and slept == [1]
    with pytest.raises(ValueError):
        async with throttle.attempt(errors=(kube.KubeError,)):
            raise ValueError("not ours to retry")
    assert throttle.failures == 1
    async with throttle.attempt(errors=(kube.KubeError,)):
        pass
    assert not throttle.failing

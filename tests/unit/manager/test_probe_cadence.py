"""A member that is not healthy is probed again sooner than the probe interval."""

from __future__ import annotations

import asyncio
import time

from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.controller.overload import LoopLag
from cluster_inventory.manager import ManagerConfig
from cluster_inventory.manager.members.connection import (
    BUSY_VERDICT_AFTER,
    VERSION_EVERY,
    MemberConnection,
)
from cluster_inventory.manager.rules.status import ConditionState, Observation
from cluster_inventory.manager.rules.verdicts import BEHIND_AFTER, REASON_BEHIND


class Recorded(MemberConnection):
    """Probes only record when they happen and what health they found (no member)."""

    def __init__(self, outcomes: list[str], config: ManagerConfig) -> None:
        super().__init__(
            kube.ClusterConnection(server="https://member.invalid"),
            config=config,
            on_change=lambda: None,
        )
        self.outcomes = outcomes
        self.times: list[float] = []

    async def probe(self) -> None:
        self.probes += 1
        self.times.append(asyncio.get_running_loop().time())
        status = self.outcomes.pop(0) if self.outcomes else "True"
        self.observation = self.observation.__class__(
            **{**self.observation.__dict__, "healthy": ConditionState(status, "R", "")}
        )


async def test_unhealthy_members_are_retried_with_backoff_up_to_the_interval(monkeypatch):
    slept: list[float] = []
    real_sleep = asyncio.sleep

    probe_loop: list[asyncio.Task[None]] = []

    async def fast_sleep(seconds: float) -> None:
        # Only the probe loop's own waits: the session's event loop may run other tasks.
        if asyncio.current_task() in probe_loop:
            slept.append(round(seconds))
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", fast_sleep)
    member = Recorded(["False"] * 6 + ["True"], ManagerConfig(probe_interval=30.0))
    await member.probe_safely()  # the first probe (start_members), which failed
    loop = asyncio.ensure_future(member._probe_loop())
    probe_loop.append(loop)
    while len(member.times) < 9:
        await real_sleep(0)
    loop.cancel()
    # 1, 2, 4, 8, 16 s while failing, never above the interval; back to 30 s once healthy.
    assert slept[:8] == [1, 2, 4, 8, 16, 30, 30, 30], slept


async def test_the_cadence_starts_from_the_first_probe(monkeypatch):
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def fast_sleep(seconds: float) -> None:
        slept.append(round(seconds))
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", fast_sleep)
    member = Recorded(["False"], ManagerConfig(probe_interval=30.0))
    loop = asyncio.ensure_future(member._probe_loop())
    for _ in range(20):  # the loop waits for the first probe: no probe of its own before it
        await real_sleep(0)
    assert member.times == [] and slept == []
    await member.probe_safely()  # start_members' probe fails: the next one comes after 1 s
    while len(member.times) < 2:
        await real_sleep(0)
    loop.cancel()
    assert slept[0] == 1


async def test_timeouts_are_probed_again_before_they_count(monkeypatch):
    """A healthy member whose readyz times out stays healthy until the third in a row."""
    timeout = kube.RequestTimeoutError(
        status=0, reason="Unreachable", message="https://m unreachable: no answer within 2 s"
    )

    async def no_answer(*args, **kwargs):
        raise timeout

    member = MemberConnection(
        kube.ClusterConnection(server="https://member.invalid"),
        config=ManagerConfig(probe_interval=30.0),
        on_change=lambda: None,
    )
    member._client = object()  # type: ignore[assignment]  # never used: get_text is replaced
    member.observation = member.observation.__class__(
        **{**member.observation.__dict__, "healthy": ConditionState("True", "APIServerReady", "")}
    )
    monkeypatch.setattr(kube, "get_text", no_answer)
    for attempt in range(1, BUSY_VERDICT_AFTER):
        await member.probe()
        assert member.observation.healthy.status == "True"
        assert member._timeouts == attempt  # the probe loop re-probes in 1, then 2 s
    await member.probe()
    assert member.observation.healthy.reason == "APIServerUnreachable"


def _healthy_member(lag: LoopLag | None) -> MemberConnection:
    member = MemberConnection(
        kube.ClusterConnection(server="https://member.invalid"),
        config=ManagerConfig(probe_interval=30.0),
        on_change=lambda: None,
        lag=lag,
        registry=CollectorRegistry(),
    )
    member._client = object()  # type: ignore[assignment]  # never used: get_text is replaced
    member.observation = member.observation.__class__(
        **{**member.observation.__dict__, "healthy": ConditionState("True", "APIServerReady", "")}
    )
    return member


async def test_a_timeout_while_we_were_behind_is_no_verdict_on_the_member(monkeypatch):
    """Overload is not failure: timeouts while our loop lagged never turn a member False."""
    timeout = kube.RequestTimeoutError(
        status=0, reason="Unreachable", message="https://m unreachable: no answer within 2 s"
    )
    lag = LoopLag(registry=CollectorRegistry())

    async def no_answer_while_we_lag(*args, **kwargs):
        lag.record(time.monotonic(), 1.5)  # our loop ran 1.5 s late during the probe
        raise timeout

    monkeypatch.setattr(kube, "get_text", no_answer_while_we_lag)
    member = _healthy_member(lag)
    for _ in range(5):
        await member.probe()
    assert member.observation.healthy.status == "True"
    assert member.deferred == 5


async def test_a_timeout_while_we_kept_up_still_counts(monkeypatch):
    timeout = kube.RequestTimeoutError(
        status=0, reason="Unreachable", message="https://m unreachable: no answer within 2 s"
    )
    lag = LoopLag(registry=CollectorRegistry())

    async def no_answer(*args, **kwargs):
        lag.record(time.monotonic(), 0.002)
        raise timeout

    monkeypatch.setattr(kube, "get_text", no_answer)
    member = _healthy_member(lag)
    for _ in range(BUSY_VERDICT_AFTER):
        await member.probe()
    assert member.deferred == 0
    assert member.observation.healthy.reason == "APIServerUnreachable"


async def test_a_healthy_member_costs_one_request_per_probe_once_known(monkeypatch):
    """The member id and version are read on (re)connect; then readyz alone, version rarely."""
    paths: list[str] = []

    async def readyz(client, path, **kwargs):
        paths.append(path)
        return 200, "[+]ping ok\nreadyz check passed"

    async def request(client, method, path, **kwargs):
        paths.append(path)
        return {"gitVersion": "v1.36.3"}

    async def get(client, resource, name, **kwargs):
        paths.append(f"namespaces/{name}")
        return {"metadata": {"uid": "uid-1"}}

    monkeypatch.setattr(kube, "get_text", readyz)
    monkeypatch.setattr(kube, "request", request)
    monkeypatch.setattr(kube, "get", get)
    member = _healthy_member(None)
    await member.probe()  # a first probe: everything
    assert paths == ["/readyz?verbose", "/version", "namespaces/kube-system"]
    assert member.observation.member_id == "uid-1"
    paths.clear()
    for _ in range(VERSION_EVERY - 1):
        await member.probe()
    assert paths == ["/readyz?verbose"] * (VERSION_EVERY - 1)
    paths.clear()
    await member.probe()
    assert paths == ["/readyz?verbose", "/version"]


async def test_a_member_not_probed_for_long_because_we_are_behind_says_so(monkeypatch):
    """Pushed past capacity, a profile keeps its last status, with a reason naming us."""
    timeout = kube.RequestTimeoutError(
        status=0, reason="Unreachable", message="https://m unreachable: no answer within 2 s"
    )
    lag = LoopLag(registry=CollectorRegistry())

    async def no_answer_while_we_lag(*args, **kwargs):
        lag.record(time.monotonic(), 1.5)
        raise timeout

    monkeypatch.setattr(kube, "get_text", no_answer_while_we_lag)
    member = _healthy_member(lag)
    member._verdict_at = time.monotonic() - (BEHIND_AFTER + 1) * member.config.probe_interval
    await member.probe()
    assert member.observation.healthy.status == "True"
    assert member.observation.healthy.reason == REASON_BEHIND


async def test_a_first_probe_deferred_gives_no_verdict_to_write(monkeypatch):
    """A member taken over while we are behind keeps its profile's last status: unobserved."""
    timeout = kube.RequestTimeoutError(
        status=0, reason="Unreachable", message="https://m unreachable: no answer within 2 s"
    )
    lag = LoopLag(registry=CollectorRegistry())

    async def no_answer_while_we_lag(*args, **kwargs):
        lag.record(time.monotonic(), 1.5)
        raise timeout

    monkeypatch.setattr(kube, "get_text", no_answer_while_we_lag)
    member = MemberConnection(
        kube.ClusterConnection(server="https://member.invalid"),
        config=ManagerConfig(probe_interval=30.0),
        on_change=lambda: None,
        lag=lag,
        registry=CollectorRegistry(),
    )
    member._client = object()  # type: ignore[assignment]  # never used: get_text is replaced
    await member.probe_safely()
    assert not member.observed
    assert member.observation.healthy.status == "Unknown"
    assert member.observation.healthy.reason != REASON_BEHIND


async def test_a_taken_over_member_is_observed_from_its_seed_while_we_are_behind(monkeypatch):
    """A takeover's profiles are written from the last holder's verdict: a first probe
    deferred (we are behind) does not hold them back, and the verdict ages from the takeover.
    """
    timeout = kube.RequestTimeoutError(
        status=0, reason="Unreachable", message="https://m unreachable: no answer within 2 s"
    )
    lag = LoopLag(registry=CollectorRegistry())

    async def no_answer_while_we_lag(*args, **kwargs):
        lag.record(time.monotonic(), 1.5)
        raise timeout

    monkeypatch.setattr(kube, "get_text", no_answer_while_we_lag)
    seed = Observation(
        healthy=ConditionState("True", "APIServerReady", ""),
        joined=ConditionState("True", "CredentialAccepted", ""),
        version="v1.33.0",
        member_id="uid-1",
    )
    member = MemberConnection(
        kube.ClusterConnection(server="https://member.invalid"),
        config=ManagerConfig(probe_interval=30.0),
        on_change=lambda: None,
        lag=lag,
        registry=CollectorRegistry(),
        seed=seed,
    )
    assert member.observed
    member._client = object()  # type: ignore[assignment]  # never used: get_text is replaced
    await member.probe_safely()
    assert member.deferred == 1
    assert member.observed
    assert member.observation.healthy == seed.healthy  # the seed stands, not yet "behind"
    member._verdict_at = time.monotonic() - (BEHIND_AFTER + 1) * member.config.probe_interval
    await member.probe_safely()
    assert member.observation.healthy.status == "True"
    assert member.observation.healthy.reason == REASON_BEHIND

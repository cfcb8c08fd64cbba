"""A member that is not healthy is probed again sooner than the probe interval."""

from __future__ import annotations

import asyncio

from cluster_inventory import kube
from cluster_inventory.manager import ManagerConfig
from cluster_inventory.manager.member import MemberConnection
from cluster_inventory.manager.status import ConditionState


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

    async def fast_sleep(seconds: float) -> None:
        slept.append(round(seconds))
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", fast_sleep)
    member = Recorded(["False"] * 6 + ["True"], ManagerConfig(probe_interval=30.0))
    await member.probe_safely()  # the first probe (start_members), which failed
    loop = asyncio.ensure_future(member._probe_loop())
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


async def test_one_timeout_is_probed_again_before_it_counts(monkeypatch):
    """A healthy member whose readyz times out once stays healthy until a second timeout."""
    timeout = kube.ServerUnavailableError(
        status=0, reason="Unreachable", message="https://m unreachable: TimeoutError: "
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
    await member.probe()
    assert member.observation.healthy.status == "True"
    assert member._timeouts == 1  # the probe loop re-probes in 1 s
    await member.probe()
    assert member.observation.healthy.reason == "APIServerUnreachable"

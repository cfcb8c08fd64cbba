"""Lease leader election against the real hub, with a test clock for expiry."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.kube.leaderelection import LeaderElectionConfig, LeaderElector


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def elector(client, ns, ident, clock):
    config = LeaderElectionConfig(namespace=ns, name="lease", identity=ident)
    return LeaderElector(client, config, clock=clock, registry=CollectorRegistry())


async def test_only_one_candidate_wins_a_race(hub, test_namespace) -> None:
    async with await hub.client() as client:
        clock = Clock()
        candidates = [elector(client, test_namespace, f"c{i}", clock) for i in range(5)]
        results = await asyncio.gather(*(c.try_acquire_or_renew() for c in candidates))
        assert sum(results) == 1
        lease = await kube.get(client, kube.LEASES, "lease", namespace=test_namespace)
        winner = candidates[results.index(True)].config.identity
        assert lease["spec"]["holderIdentity"] == winner
        assert lease["spec"]["leaseDurationSeconds"] == 15


async def test_takeover_only_after_lease_duration_on_the_local_clock(hub, test_namespace) -> None:
    async with await hub.client() as client:
        holder_clock, clock = Clock(), Clock()
        holder = elector(client, test_namespace, "holder", holder_clock)
        other = elector(client, test_namespace, "other", clock)
        assert await holder.try_acquire_or_renew()
        assert not await other.try_acquire_or_renew()  # first sight starts its timer
        clock.t += 14.9
        assert not await other.try_acquire_or_renew()
        clock.t += 0.2
        assert await other.try_acquire_or_renew()
        lease = await kube.get(client, kube.LEASES, "lease", namespace=test_namespace)
        assert lease["spec"]["holderIdentity"] == "other"
        assert lease["spec"]["leaseTransitions"] == 1


async def test_release_lets_a_successor_in_at_once(hub, test_namespace) -> None:
    async with await hub.client() as client:
        first = elector(client, test_namespace, "first", Clock())
        second = elector(client, test_namespace, "second", Clock())
        await first.acquire()
        assert first.is_leader
        await first.release()
        assert not first.is_leader
        lease = await kube.get(client, kube.LEASES, "lease", namespace=test_namespace)
        assert not lease["spec"].get("holderIdentity")
        assert await second.try_acquire_or_renew()  # no holder: no need to wait for expiry


async def test_bad_timings_are_refused() -> None:
    with pytest.raises(ValueError, match="lease_duration > renew_deadline"):
        LeaderElectionConfig(
            namespace="n", name="l", identity="i", lease_duration=5, renew_deadline=10
        )


async def test_a_lease_in_a_missing_namespace_stops_the_candidate_at_once(hub) -> None:
    """Issue 32: the create's 404 was swallowed and the candidate retried forever, silent."""
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async with await hub.client() as client:
        config = LeaderElectionConfig(namespace="no-such-ns", name="sync", identity="me")
        candidate = LeaderElector(client, config, sleep=sleep, registry=CollectorRegistry())
        with pytest.raises(kube.LeaseUnavailableError) as info:
            await candidate.acquire()
    assert (info.value.namespace, info.value.name) == ("no-such-ns", "sync")
    assert str(info.value).startswith("leader election Lease no-such-ns/sync cannot be taken: ")
    assert '"no-such-ns" not found (404 NotFound)' in str(info.value)
    assert sleeps == []  # not one retry
    assert not candidate.is_leader


async def test_a_forbidden_lease_stops_the_candidate_at_once(hub, test_namespace) -> None:
    async with await hub.client(f"nobody-{test_namespace[-6:]}") as client:
        config = LeaderElectionConfig(namespace=test_namespace, name="sync", identity="me")
        candidate = LeaderElector(client, config, registry=CollectorRegistry())
        with pytest.raises(kube.LeaseUnavailableError) as info:
            await candidate.acquire()
    assert f"Lease {test_namespace}/sync cannot be taken" in str(info.value)
    assert "(403 Forbidden)" in str(info.value)


async def test_an_unreachable_hub_is_retried_not_fatal(hub, test_namespace) -> None:
    """Transient failures keep the candidate trying, every retry_period."""
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 3:
            raise asyncio.CancelledError

    async with await hub.client() as client:
        client.configuration.host = "https://127.0.0.1:9"  # discard port: refused
        config = LeaderElectionConfig(namespace=test_namespace, name="sync", identity="me")
        candidate = LeaderElector(client, config, sleep=sleep, registry=CollectorRegistry())
        with pytest.raises(asyncio.CancelledError):
            await candidate.acquire()
    assert sleeps == [2.0, 2.0, 2.0]

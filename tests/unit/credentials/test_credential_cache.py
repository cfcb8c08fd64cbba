import asyncio
import datetime as dt

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory.credentials import (
    ClusterAccess,
    CredentialCache,
    CredentialMetrics,
    ExecConfig,
    ExecCredential,
    ExecPluginFailed,
)

T0 = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)


class Clock:
    def __init__(self):
        self.now = T0

    def __call__(self):
        return self.now


def access(server="https://m1"):
    return ClusterAccess(
        profile="ns/c1",
        provider="p",
        server=server,
        exec_config=ExecConfig(command="plug"),
    )


class CountingFetch:
    def __init__(self, lifetime=None, fail=False, delay=0.01):
        self.calls = 0
        self.lifetime = lifetime
        self.fail = fail
        self.delay = delay

    async def __call__(self, a):
        self.calls += 1
        await asyncio.sleep(self.delay)
        if self.fail:
            raise ExecPluginFailed("plug", "p", 1, "nope")
        exp = T0 + self.lifetime if self.lifetime else None
        return ExecCredential(token=f"t{self.calls}", expiration=exp)


def cache(fetch, clock=None, **kw):
    metrics = CredentialMetrics.create(registry=CollectorRegistry())
    return CredentialCache(fetch=fetch, now=clock or Clock(), metrics=metrics, **kw)


async def test_concurrent_callers_share_one_run():
    fetch = CountingFetch()
    c = cache(fetch)
    creds = await asyncio.gather(*(c.get(access()) for _ in range(100)))
    assert fetch.calls == 1
    assert {cr.token for cr in creds} == {"t1"}
    assert c.runs == 1


async def test_reused_until_expiry_minus_skew_then_one_rerun():
    clock = Clock()
    fetch = CountingFetch(lifetime=dt.timedelta(minutes=10))
    c = cache(fetch, clock, expiry_skew=10)
    assert (await c.get(access())).token == "t1"
    clock.now = T0 + dt.timedelta(minutes=9, seconds=49)
    assert (await c.get(access())).token == "t1"
    clock.now = T0 + dt.timedelta(minutes=9, seconds=51)
    results = await asyncio.gather(*(c.get(access()) for _ in range(10)))
    assert {r.token for r in results} == {"t2"}
    assert fetch.calls == 2


async def test_invalidate_drops_only_the_rejected_credential():
    fetch = CountingFetch()
    c = cache(fetch)
    first = await c.get(access())
    assert c.invalidate(access(), first) is True
    second = await c.get(access())
    assert second.token == "t2"
    assert c.invalidate(access(), first) is False  # someone already refreshed
    assert c.invalidate(access(), "t1") is False
    assert c.invalidate(access(), "t2") is True
    assert fetch.calls == 2


async def test_failure_reaches_every_waiter_and_is_not_cached():
    fetch = CountingFetch(fail=True)
    c = cache(fetch)
    results = await asyncio.gather(*(c.get(access()) for _ in range(5)), return_exceptions=True)
    assert all(isinstance(r, ExecPluginFailed) for r in results)
    assert fetch.calls == 1
    fetch.fail = False
    assert (await c.get(access())).token == "t2"


async def test_bounded_least_recently_used():
    fetch = CountingFetch(delay=0)
    c = cache(fetch, max_entries=2)
    for server in ("https://a", "https://b", "https://c"):
        await c.get(access(server))
    assert len(c) == 2
    assert c.peek(access("https://a")) is None
    assert c.peek(access("https://c")) is not None


async def test_different_keys_run_separately():
    fetch = CountingFetch()
    c = cache(fetch)
    await asyncio.gather(c.get(access("https://a")), c.get(access("https://b")))
    assert fetch.calls == 2


async def test_metrics_count_runs_and_lookups():
    registry = CollectorRegistry()
    c = CredentialCache(fetch=CountingFetch(), metrics=CredentialMetrics.create(registry))
    await c.get(access())
    await c.get(access())
    assert (
        registry.get_sample_value(
            "cluster_inventory_exec_plugin_runs_total", {"provider": "p", "result": "success"}
        )
        == 1
    )
    assert (
        registry.get_sample_value(
            "cluster_inventory_credential_cache_lookups_total", {"result": "hit"}
        )
        == 1
    )


def test_max_entries_must_be_positive():
    with pytest.raises(ValueError, match="max_entries"):
        CredentialCache(max_entries=0)


async def test_an_unexpected_failure_reaches_the_waiter_and_is_logged_once(caplog):
    async def broken(a):
        raise RuntimeError("a bug in the fetch")

    c = cache(broken)
    with caplog.at_level("ERROR", logger="cluster_inventory.credentials"):
        with pytest.raises(RuntimeError, match="a bug in the fetch"):
            await c.get(access())
        for _ in range(3):  # the refresh task's callbacks run
            await asyncio.sleep(0)
    crashed = [r for r in caplog.records if "crashed" in r.getMessage()]
    assert [r.getMessage() for r in crashed] == [
        "credential cache: task credential cache: refresh ns/c1 crashed: a bug in the fetch"
    ]

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory.kube.workqueue import (
    BucketRateLimiter,
    ItemExponentialRateLimiter,
    QueueShutDown,
    WorkQueue,
    WorkQueueMetrics,
)


def queue():
    return WorkQueue("t", metrics=WorkQueueMetrics(CollectorRegistry()))


async def test_adds_coalesce_and_processing_keys_are_not_handed_out_twice():
    q = queue()
    q.add("a")
    q.add("a")
    q.add("b")
    assert len(q) == 2
    key = await q.get()
    assert key == "a"
    q.add("a")  # while processing: queued again only after done
    assert await q.get() == "b"
    assert len(q) == 0
    q.done("a")
    assert await q.get() == "a"


async def test_add_after_fires_later_and_earliest_wins():
    q = queue()
    q.add_after("a", 0.2)
    q.add_after("a", 0.05)
    got = await asyncio.wait_for(q.get(), 1)
    assert got == "a"


def test_item_backoff_doubles_from_5ms_and_caps():
    lim = ItemExponentialRateLimiter()
    assert [lim.when("k") for _ in range(4)] == [0.005, 0.01, 0.02, 0.04]
    for _ in range(30):
        last = lim.when("k")
    assert last == 1000.0
    lim.forget("k")
    assert lim.when("k") == 0.005


def test_bucket_allows_burst_then_ten_per_second():
    now = [0.0]
    bucket = BucketRateLimiter(clock=lambda: now[0])
    assert all(bucket.when() == 0 for _ in range(100))
    assert bucket.when() == pytest.approx(0.1)
    now[0] = 10.0
    assert bucket.when() == 0


async def test_rate_limited_adds_are_counted_until_forgotten():
    q = queue()
    q.add_rate_limited("k")
    q.add_rate_limited("k")
    assert q.num_requeues("k") == 2
    q.forget("k")
    assert q.num_requeues("k") == 0
    q.shut_down()


async def test_shutdown_wakes_waiters():
    q = queue()
    waiter = asyncio.ensure_future(q.get())
    await asyncio.sleep(0)
    q.shut_down()
    assert q.shutting_down
    with pytest.raises(QueueShutDown):
        await waiter

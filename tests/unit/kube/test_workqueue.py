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


async def test_queue_and_work_durations_are_client_go_s_histograms() -> None:
    registry = CollectorRegistry()
    now = [100.0]
    q: WorkQueue[str] = WorkQueue(
        "profiles", controller="clustermanager", clock=lambda: now[0],
        metrics=WorkQueueMetrics(registry),
    )  # fmt: skip
    labels = {"name": "profiles", "controller": "clustermanager"}
    q.add("a")
    now[0] += 0.5
    q.add("a")  # coalesced: the wait counts from the first add
    now[0] += 1.5
    assert await q.get() == "a"
    now[0] += 0.02
    q.done("a")

    def sample(name: str, **extra: str) -> float | None:
        return registry.get_sample_value(name, {**labels, **extra})

    assert sample("workqueue_queue_duration_seconds_sum") == pytest.approx(2.0)
    assert sample("workqueue_work_duration_seconds_sum") == pytest.approx(0.02)
    assert sample("workqueue_queue_duration_seconds_count") == 1
    assert sample("workqueue_adds_total") == 1
    assert sample("workqueue_depth") == 0
    # ExponentialBuckets(10e-9, 10, 12): 10 ns, 100 ns, ... 1,000 s.
    assert sample("workqueue_work_duration_seconds_bucket", le="0.01") == 0
    assert sample("workqueue_work_duration_seconds_bucket", le="0.1") == 1
    assert sample("workqueue_queue_duration_seconds_bucket", le="1e-08") == 0
    assert sample("workqueue_queue_duration_seconds_bucket", le="1000.0") == 1
    buckets = [
        s.labels["le"]
        for family in registry.collect()
        if family.name == "workqueue_work_duration_seconds"
        for s in family.samples
        if s.name.endswith("_bucket")
    ]
    assert len(buckets) == 13  # twelve and +Inf


async def test_a_key_added_while_processing_waits_from_that_add() -> None:
    registry = CollectorRegistry()
    now = [0.0]
    q: WorkQueue[str] = WorkQueue("w", clock=lambda: now[0], metrics=WorkQueueMetrics(registry))
    q.add("a")
    await q.get()
    now[0] = 10.0
    q.add("a")  # while processing
    now[0] = 12.0
    q.done("a")
    now[0] = 15.0
    await q.get()
    labels = {"name": "w", "controller": "w"}
    assert registry.get_sample_value("workqueue_queue_duration_seconds_sum", labels) == 5.0
    assert registry.get_sample_value("workqueue_work_duration_seconds_sum", labels) == 12.0

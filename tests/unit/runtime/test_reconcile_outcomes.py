"""What the controller does with each reconcile outcome (a pure-logic test: no server).

The reconcile function here is a plain coroutine over a real WorkQueue; the clusters the
controller looks up are stand-ins that only need a name, ``closing`` and ``run``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.controller import reconcile_loop
from cluster_inventory.kube.workqueue import WorkQueue, WorkQueueMetrics
from cluster_inventory.runtime import Request, Result, TerminalError
from cluster_inventory.runtime.cluster import WatchSpec
from cluster_inventory.runtime.reconciler import FleetController


def _queue(registry: CollectorRegistry) -> WorkQueue[str]:
    return WorkQueue("test", metrics=kube.collectors_for(WorkQueueMetrics, registry))


async def _run(queue: WorkQueue[str], reconcile, registry: CollectorRegistry) -> asyncio.Task:
    metrics = kube.ReconcileMetrics.for_registry(registry)
    metrics.start("test", 1)
    return asyncio.get_running_loop().create_task(
        reconcile_loop(
            queue, reconcile, controller="test", metrics=metrics, describe=lambda k: {"object": k}
        )
    )


def _count(registry: CollectorRegistry, result: str) -> float:
    return (
        registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": "test", "result": result}
        )
        or 0.0
    )


async def _until(predicate, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.001)


async def test_counters_start_at_zero_for_every_result() -> None:
    registry = CollectorRegistry()
    kube.ReconcileMetrics.for_registry(registry).start("test", 3)
    for result in kube.RECONCILE_RESULTS:
        assert (
            registry.get_sample_value(
                "controller_runtime_reconcile_total", {"controller": "test", "result": result}
            )
            == 0.0
        )
    assert (
        registry.get_sample_value(
            "controller_runtime_max_concurrent_reconciles", {"controller": "test"}
        )
        == 3
    )


async def test_errors_retry_with_backoff_and_success_resets_it() -> None:
    registry = CollectorRegistry()
    queue = _queue(registry)
    calls: list[int] = []

    async def reconcile(key: str) -> None:
        calls.append(queue.num_requeues(key))
        if len(calls) < 3:
            raise kube.ConflictError(409, "Conflict", "the object has been modified")

    task = await _run(queue, reconcile, registry)
    queue.add("a")
    await _until(lambda: len(calls) == 3 and _count(registry, "success") == 1)
    assert calls == [0, 1, 2]  # two rate-limited retries
    assert queue.num_requeues("a") == 0  # forgotten after the success
    assert _count(registry, "error") == 2
    assert (
        registry.get_sample_value(
            "controller_runtime_reconcile_errors_total", {"controller": "test"}
        )
        == 2
    )
    queue.shut_down()
    await task


async def test_terminal_errors_are_not_retried() -> None:
    registry = CollectorRegistry()
    queue = _queue(registry)
    calls: list[str] = []

    async def reconcile(key: str) -> None:
        calls.append(key)
        if key == "bad":
            raise TerminalError("spec.replicas: must be >= 0")

    task = await _run(queue, reconcile, registry)
    queue.add("bad")
    await _until(lambda: calls == ["bad"] and len(queue) == 0)
    # The bad key was forgotten, not scheduled: nothing else will arrive for it.
    assert queue.num_requeues("bad") == 0 and not queue._timers
    queue.add("good")
    await _until(lambda: calls == ["bad", "good"])
    assert (
        registry.get_sample_value(
            "controller_runtime_terminal_reconcile_errors_total", {"controller": "test"}
        )
        == 1
    )
    queue.shut_down()
    await task


async def test_requeue_after_and_requeue() -> None:
    registry = CollectorRegistry()
    queue = _queue(registry)
    calls: list[str] = []

    async def reconcile(key: str) -> Result | None:
        calls.append(key)
        n = calls.count(key)
        if key == "later" and n == 1:
            return Result(requeue_after=0.01)
        if key == "again" and n == 1:
            return Result(requeue=True)
        return None

    task = await _run(queue, reconcile, registry)
    queue.add("later")
    queue.add("again")
    await _until(lambda: calls.count("later") == 2 and calls.count("again") == 2)
    assert _count(registry, "requeue_after") == 1
    assert _count(registry, "requeue") == 1
    assert _count(registry, "success") == 2
    queue.shut_down()
    await task


def test_result_refuses_a_negative_delay() -> None:
    with pytest.raises(ValueError, match="requeue_after"):
        Result(requeue_after=-1)


class _Cluster:
    """Stand-in with the three members the controller uses."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.closing = False
        self.tasks: set[asyncio.Task[Any]] = set()

    def run(self, coro):
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        return task


async def test_requests_of_a_disengaged_cluster_are_dropped_and_a_cancelled_reconcile_too() -> None:
    registry = CollectorRegistry()
    clusters: dict[str, Any] = {"c1": _Cluster("c1")}
    entered = asyncio.Event()
    calls: list[Request] = []

    async def reconcile(request: Request, cluster: Any) -> None:
        calls.append(request)
        entered.set()
        await asyncio.Event().wait()

    controller = FleetController(
        "test", WatchSpec("v1/ConfigMap"), reconcile, clusters, registry=registry
    )
    controller.start()
    controller.enqueue(Request("c1", "ns", "a"))
    await asyncio.wait_for(entered.wait(), 5)
    # Disengage: the cluster cancels its tasks and leaves the map.
    cluster = clusters.pop("c1")
    for task in cluster.tasks:
        task.cancel()
    controller.enqueue(Request("c1", "ns", "b"))  # for a cluster that is gone
    await _until(lambda: len(controller.queue) == 0 and not controller.queue._processing)
    assert calls == [Request("c1", "ns", "a")]
    assert _count(registry, "error") == 0 and _count(registry, "success") == 0
    assert not controller.queue._timers, "dropped requests are not retried"
    await controller.stop(grace=1)


async def test_enqueue_all_reaches_every_engaged_cluster() -> None:
    registry = CollectorRegistry()
    clusters: dict[str, Any] = {"a/x": _Cluster("a/x"), "b/y": _Cluster("b/y")}
    seen: list[Request] = []

    async def reconcile(request: Request, cluster: Any) -> None:
        seen.append(request)

    controller = FleetController(
        "test",
        WatchSpec("v1/ConfigMap"),
        reconcile,
        clusters,
        registry=registry,
        max_concurrent_reconciles=2,
    )
    controller.start()
    controller.enqueue_all("default", "shared")
    await _until(lambda: len(seen) == 2)
    assert sorted(seen) == [
        Request("a/x", "default", "shared"),
        Request("b/y", "default", "shared"),
    ]
    await controller.stop(grace=1)


def test_controller_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="max_concurrent_reconciles"):
        FleetController(
            "c",
            WatchSpec("v1/Pod"),
            None,
            {},
            max_concurrent_reconciles=0,
            registry=CollectorRegistry(),
        )  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="reconcile_timeout"):
        FleetController(
            "c", WatchSpec("v1/Pod"), None, {}, reconcile_timeout=0, registry=CollectorRegistry()
        )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "parts"),
    [
        ("v1/ConfigMap", ("", "v1", "ConfigMap")),
        ("/v1/ConfigMap", ("", "v1", "ConfigMap")),
        ("apps/v1/Deployment", ("apps", "v1", "Deployment")),
    ],
)
def test_kinds_parse_as_group_version_kind(kind: str, parts: tuple[str, str, str]) -> None:
    assert kube.parse_kind(kind) == parts


@pytest.mark.parametrize("kind", ["ConfigMap", "a/b/c/d", "apps//Deployment", ""])
def test_malformed_kinds_are_refused_with_the_value(kind: str) -> None:
    with pytest.raises(ValueError, match="group/version/Kind"):
        kube.parse_kind(kind)


async def test_a_worker_gives_the_loop_back_between_keys_that_never_wait() -> None:
    # 1,000 profiles listed together, each reconcile returning at once (not ready): the
    # worker must not hold the loop for all of them ahead of a task woken by the same list.
    registry = CollectorRegistry()
    queue = _queue(registry)
    done: list[str] = []

    async def reconcile(key: str) -> None:
        done.append(key)

    for i in range(100):
        queue.add(f"k{i}")
    woken = asyncio.Event()
    worker = await _run(queue, reconcile, registry)
    woken.set()  # like an informer's synced: its waiter is queued behind the worker

    async def waiter() -> int:
        await woken.wait()
        return len(done)

    seen = await asyncio.get_running_loop().create_task(waiter())
    try:
        assert seen < 100
        await _until(lambda: len(done) == 100)
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)

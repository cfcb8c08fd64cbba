"""The Manager's lifecycle rules with stand-in runnables (pure asyncio, no server).

What a Manager does with the hub (leader election, caches) is tested on real control
planes in tests/integration/controller; here: ordering, a bounded stop, and one runnable
ending or failing ending the rest.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory.controller import DEFAULT_GRACEFUL_SHUTDOWN, Controller, Manager, Result


class Stub:
    """A runnable recording what the Manager asked of it."""

    def __init__(self, name: str, log: list[str], *, stubborn: bool = False) -> None:
        self.name = name
        self.log = log
        self.stubborn = stubborn
        self.finished = asyncio.Event()
        self.end: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def prepare(self) -> None:
        self.log.append(f"prepare {self.name}")

    async def run(self) -> None:
        self.log.append(f"run {self.name}")
        try:
            await self.end
        finally:
            if self.stubborn:  # a clean-up that takes far longer than the grace period
                await asyncio.sleep(3600)
            self.finished.set()

    def ready(self) -> bool:
        return True

    async def stop(self) -> None:
        self.log.append(f"stop {self.name}")


HUB: Any = object()  # an "open client": the Manager opens nothing without a lease


async def test_every_runnable_prepares_before_any_runs_and_all_stop_in_reverse() -> None:
    log: list[str] = []
    a, b = Stub("a", log), Stub("b", log)
    task = asyncio.get_running_loop().create_task(Manager(HUB).add(a).add(lambda _: b).run())
    while len(log) < 4:
        await asyncio.sleep(0)
    assert log[:2] == ["prepare a", "prepare b"]
    assert sorted(log[2:]) == ["run a", "run b"]
    a.end.set_result(None)  # one runnable ending ends the Manager
    assert await asyncio.wait_for(task, 10) is False
    assert b.finished.is_set()
    assert log[-2:] == ["stop b", "stop a"]


async def test_a_failing_runnable_ends_the_manager_with_its_error() -> None:
    log: list[str] = []
    a, b = Stub("a", log), Stub("b", log)
    task = asyncio.get_running_loop().create_task(Manager(HUB).add(a).add(b).run())
    while len(log) < 4:
        await asyncio.sleep(0)
    a.end.set_exception(RuntimeError("cache gone"))
    with pytest.raises(RuntimeError, match="cache gone"):
        await asyncio.wait_for(task, 10)
    assert b.finished.is_set()


async def test_a_stop_is_bounded_even_when_a_clean_up_hangs() -> None:
    log: list[str] = []
    stubborn, polite = Stub("stubborn", log, stubborn=True), Stub("polite", log)
    manager = Manager(HUB, graceful_shutdown=0.2).add(stubborn).add(polite)
    task = asyncio.get_running_loop().create_task(manager.run())
    while len(log) < 4:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 30)
    assert polite.finished.is_set()
    assert not stubborn.finished.is_set()  # left behind instead of holding the process
    assert "stop stubborn" in log


class SlowReconcile:
    """A reconcile that takes ``seconds`` and records whether it finished."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = asyncio.Event()
        self.finished = False
        self.cancelled = False

    async def __call__(self, key: str) -> Result | None:
        self.started.set()
        try:
            await asyncio.sleep(self.seconds)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        self.finished = True
        return None


async def _stop_while_reconciling(manager: Manager, reconcile: SlowReconcile) -> float:
    task = asyncio.get_running_loop().create_task(manager.run())
    await asyncio.wait_for(reconcile.started.wait(), 10)
    began = asyncio.get_running_loop().time()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 30)
    return asyncio.get_running_loop().time() - began


@pytest.mark.parametrize("runnable", ["controller", "factory"])
async def test_the_managers_graceful_shutdown_is_the_grace_its_controllers_give(
    runnable: str,
) -> None:
    reconcile = SlowReconcile(0.5)
    controller: Controller[str] = Controller(
        "slow", reconcile, graceful_shutdown=0.0, registry=CollectorRegistry()
    )
    controller.queue.add("k")
    manager = Manager(HUB, graceful_shutdown=5.0)
    manager.add(controller if runnable == "controller" else (lambda _: controller))
    await _stop_while_reconciling(manager, reconcile)
    assert controller.graceful_shutdown == 5.0  # the Manager's, not the controller's own 0 s
    assert reconcile.finished and not reconcile.cancelled


async def test_a_reconcile_longer_than_the_grace_is_cancelled_in_time() -> None:
    reconcile = SlowReconcile(3600)
    controller: Controller[str] = Controller("stuck", reconcile, registry=CollectorRegistry())
    controller.queue.add("k")
    took = await _stop_while_reconciling(
        Manager(HUB, graceful_shutdown=0.2).add(controller), reconcile
    )
    assert reconcile.cancelled
    assert took < 5


def test_one_default_grace() -> None:
    assert Manager(HUB).graceful_shutdown == DEFAULT_GRACEFUL_SHUTDOWN
    assert Controller("c", SlowReconcile(0), registry=CollectorRegistry()).graceful_shutdown == (
        DEFAULT_GRACEFUL_SHUTDOWN
    )

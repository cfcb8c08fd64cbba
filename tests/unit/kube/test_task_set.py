"""``kube.TaskSet``: background tasks named, a crash nobody awaits logged once, stopped together."""

from __future__ import annotations

import asyncio
import logging

import pytest

from cluster_inventory import kube

_log = logging.getLogger("test.task_set")


async def test_tasks_are_named_after_their_owner_and_leave_the_set_when_done() -> None:
    tasks = kube.TaskSet("member https://m1", logger=_log)
    gate = asyncio.Event()
    task = tasks.spawn(gate.wait(), name="probe")
    assert task.get_name() == "member https://m1: probe"
    assert list(tasks) == [task]
    gate.set()
    await task
    await asyncio.sleep(0)  # the done callback
    assert len(tasks) == 0


async def test_a_crash_nobody_awaits_is_logged_once_with_its_owner(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tasks = kube.TaskSet("reporter ns/m1", logger=_log)

    async def crashes() -> None:
        raise RuntimeError("odd answer")

    task = tasks.spawn(crashes(), name="write")
    with caplog.at_level(logging.ERROR, logger=_log.name):
        await asyncio.wait([task])
        await asyncio.sleep(0)
    crashed = [r for r in caplog.records if "crashed" in r.getMessage()]
    assert len(crashed) == 1
    assert (
        "reporter ns/m1: task reporter ns/m1: write crashed: odd answer" in crashed[0].getMessage()
    )
    await tasks.stop()  # not raised again


async def test_an_awaited_task_is_not_logged_its_failure_is_its_callers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tasks = kube.TaskSet("agent m1", logger=_log)

    async def rejected() -> None:
        raise PermissionError("rejected")

    task = tasks.spawn(rejected(), name="report", awaited=True)
    with caplog.at_level(logging.ERROR, logger=_log.name):
        await asyncio.wait([task])
        await tasks.stop()
    with pytest.raises(PermissionError):
        task.result()
    assert not [r for r in caplog.records if "crashed" in r.getMessage()]


async def test_stop_cancels_and_awaits_every_task_and_gives_a_grace_first() -> None:
    tasks = kube.TaskSet("controller c", logger=_log)
    finishing = asyncio.Event()
    cancelled: list[str] = []

    async def forever(name: str) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(name)
            raise

    async def finishes_in_grace() -> str:
        await finishing.wait()
        return "done"

    a = tasks.spawn(forever("a"), name="a")
    b = tasks.spawn(forever("b"), name="b", awaited=True)
    c = tasks.spawn(finishes_in_grace(), name="c", awaited=True)
    asyncio.get_running_loop().call_soon(finishing.set)
    await tasks.stop(grace=0.1)
    assert a.cancelled() and b.cancelled()
    assert c.result() == "done"  # it finished within its grace, not cancelled
    assert sorted(cancelled) == ["a", "b"]
    assert len(tasks) == 0
    await tasks.stop()  # idempotent


async def test_stop_does_not_swallow_the_callers_own_cancellation() -> None:
    tasks = kube.TaskSet("owner", logger=_log)

    async def slow_to_stop() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(3600)  # ignores its cancel for a while

    tasks.spawn(slow_to_stop(), name="slow", awaited=True)
    await asyncio.sleep(0)
    stopper = asyncio.ensure_future(tasks.stop())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    stopper.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopper

"""``kube.cancel_and_wait``: stops tasks, never swallows a cancel aimed at the caller."""

from __future__ import annotations

import asyncio

import pytest

from cluster_inventory import kube


async def test_the_tasks_own_cancellation_is_not_raised() -> None:
    task = asyncio.ensure_future(asyncio.sleep(3600))
    await asyncio.sleep(0)
    await kube.cancel_and_wait(task, None)
    assert task.cancelled()


async def test_a_cancel_aimed_at_the_caller_while_it_waits_propagates() -> None:
    release = asyncio.Event()
    stopping = asyncio.Event()

    async def slow_to_stop() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            stopping.set()
            await release.wait()  # ignores the cancel until told
            raise

    task = asyncio.ensure_future(slow_to_stop())
    await asyncio.sleep(0)
    caller = asyncio.ensure_future(kube.cancel_and_wait(task))
    await stopping.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert caller.cancelled()
    release.set()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_stop_inside_a_cancelled_callers_cleanup_still_finishes() -> None:
    stopped: list[str] = []

    async def worker() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            stopped.append("worker")

    async def caller() -> None:
        task = asyncio.ensure_future(worker())
        try:
            await asyncio.sleep(3600)
        finally:
            # cancelling() is already 1 here: the worker's cancellation must not look like
            # a new cancel aimed at the caller, or the rest of the cleanup would be skipped.
            await kube.cancel_and_wait(task)
            stopped.append("after")

    outer = asyncio.ensure_future(caller())
    await asyncio.sleep(0)
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert stopped == ["worker", "after"]


async def test_a_task_failure_is_raised_after_every_task_stopped() -> None:
    async def fails() -> None:
        raise ValueError("boom")

    failing = asyncio.ensure_future(fails())
    other = asyncio.ensure_future(asyncio.sleep(3600))
    await asyncio.sleep(0)
    with pytest.raises(ValueError, match="boom"):
        await kube.cancel_and_wait(failing, other)
    assert other.cancelled()

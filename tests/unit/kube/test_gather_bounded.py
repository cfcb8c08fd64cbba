"""``kube.gather_bounded``: the concurrency gate for the manager's profile creates and deletes."""

from __future__ import annotations

import asyncio
import gc

import pytest

from cluster_inventory.kube import gather_bounded


async def test_calls_are_made_only_when_their_turn_comes() -> None:
    made: list[int] = []
    release = asyncio.Event()

    def call(i: int):
        async def run() -> None:
            made.append(i)
            await release.wait()

        return run

    task = asyncio.get_running_loop().create_task(gather_bounded([call(i) for i in range(10)], 3))
    for _ in range(5):
        await asyncio.sleep(0)
    assert made == [0, 1, 2]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gc.collect()  # an unawaited coroutine would warn here, and warnings are errors
    assert made == [0, 1, 2]


async def test_every_call_runs_and_the_first_error_is_raised_after_all() -> None:
    done: list[int] = []

    def call(i: int):
        async def run() -> None:
            if i in (2, 5):
                raise ValueError(f"call {i}")
            done.append(i)

        return run

    with pytest.raises(ValueError, match="call 2"):
        await gather_bounded([call(i) for i in range(8)], 2)
    assert sorted(done) == [0, 1, 3, 4, 6, 7]

"""Stopping background tasks without swallowing the caller's own cancellation.

The usual stop idiom, ``task.cancel()`` then ``with suppress(CancelledError): await task``,
cannot tell the task's ``CancelledError`` from one aimed at the caller while it waits: a
second cancel sent to the caller (a test's timeout, a shutdown) is swallowed and the caller
runs on. :func:`cancel_and_wait` tells them apart with ``Task.cancelling()``, as
``asyncio.timeout`` does: a cancel request counted against the caller after it started
waiting is re-raised; the tasks' own cancellation is not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["cancel_and_wait", "gather_bounded"]


async def cancel_and_wait(*tasks: asyncio.Future[Any] | None) -> None:
    """Cancel ``tasks`` and wait until each has finished.

    Args:
        tasks: Tasks or futures to stop; ``None`` entries and finished ones are allowed.

    Raises:
        asyncio.CancelledError: The *caller* was cancelled while waiting (its
            ``Task.cancelling()`` count rose), so a stop never hides the caller's own
            cancellation. The tasks are cancelled already; they are not awaited further.
        Exception: Whatever a task raised other than ``CancelledError`` (the first one, in
            argument order), after every task has finished.
    """
    current = asyncio.current_task()
    before = current.cancelling() if current is not None else 0
    pending = [t for t in tasks if t is not None]
    for task in pending:
        task.cancel()
    failure: BaseException | None = None
    for task in pending:
        try:
            await task
        except asyncio.CancelledError:
            if current is not None and current.cancelling() > before:
                raise
        except Exception as exc:  # the task's own failure: report it once all have stopped
            failure = failure or exc
    if failure is not None:
        raise failure


async def gather_bounded(calls: list[Callable[[], Awaitable[None]]], limit: int) -> None:
    """Run ``calls`` with at most ``limit`` in flight; the first error is raised after all ran.

    Each call is made only when its turn comes, so a cancelled placement (shutdown) leaves
    no coroutine that was created and never awaited.
    """
    gate = asyncio.Semaphore(limit)

    async def one(call: Callable[[], Awaitable[None]]) -> None:
        async with gate:
            await call()

    results = await asyncio.gather(*(one(c) for c in calls), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result

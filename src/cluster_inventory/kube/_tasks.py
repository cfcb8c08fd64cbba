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
from typing import Any

__all__ = ["cancel_and_wait"]


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

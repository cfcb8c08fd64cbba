"""Where is an async test stuck? The await chain of every asyncio task, as text.

pytest-timeout prints the stacks of threads, but an asyncio test that hangs has an idle
event loop: its main thread sits in ``select`` and says nothing about which ``await`` never
returned. ``Task.get_stack()`` shows only a task's outermost frame, so this module follows
each coroutine's ``cr_await`` chain (and generators' ``gi_yieldfrom``, async generators'
``ag_await``) down to the innermost awaitable, which names the step that waits.
"""

from __future__ import annotations

import asyncio
import linecache
from collections.abc import Iterator
from types import FrameType
from typing import Any

__all__ = ["format_asyncio_tasks"]


def _await_chain(awaitable: Any) -> Iterator[tuple[FrameType | None, Any]]:
    """Yield ``(frame, object)`` from the outermost coroutine down what it awaits."""
    seen: set[int] = set()
    current = awaitable
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        frame = (
            getattr(current, "cr_frame", None)
            or getattr(current, "gi_frame", None)
            or getattr(current, "ag_frame", None)
        )
        yield frame, current
        current = (
            getattr(current, "cr_await", None)
            or getattr(current, "gi_yieldfrom", None)
            or getattr(current, "ag_await", None)
        )


def _describe(frame: FrameType) -> str:
    code = frame.f_code
    line = linecache.getline(code.co_filename, frame.f_lineno).strip()
    where = f'    File "{code.co_filename}", line {frame.f_lineno}, in {code.co_name}'
    return f"{where}\n      {line}" if line else where


def format_asyncio_tasks(loop: asyncio.AbstractEventLoop | None = None) -> str:
    """Describe every unfinished task of ``loop`` and the await it is suspended in.

    Args:
        loop: The loop to inspect; the running loop of this thread if None.

    Returns:
        One block per task (its name, then its await chain, outermost first), or a line
        saying there is no loop or no task. Never raises: it runs from a signal handler.
    """
    try:
        if loop is None:
            loop = asyncio.get_running_loop()
    except RuntimeError:
        return "no asyncio event loop is running in this thread"
    try:
        tasks = sorted(asyncio.all_tasks(loop), key=lambda t: t.get_name())
    except RuntimeError as exc:  # the task set changed while we copied it
        return f"asyncio tasks could not be listed: {exc}"
    if not tasks:
        return "no unfinished asyncio task"
    blocks = []
    for task in tasks:
        lines = [f"Task {task.get_name()!r} ({'cancelling' if task.cancelling() else 'pending'})"]
        # A frameless link is a future's iterator: the "waiting on" line below says more.
        lines.extend(_describe(f) for f, _ in _await_chain(task.get_coro()) if f is not None)
        waiter = getattr(task, "_fut_waiter", None)
        if waiter is not None and not isinstance(waiter, asyncio.Task):
            lines.append(f"    waiting on {waiter!r}"[:300])
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)

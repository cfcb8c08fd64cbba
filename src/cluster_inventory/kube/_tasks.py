"""Background tasks: one way to spawn them, one way to stop them.

:class:`TaskSet` is kopf's ``create_guarded_task`` in this project's terms: every background
task of an object (a probe loop, a watch, a worker, a retirement) is spawned through one,
which names it (py-spy, ``asyncio.all_tasks()``), logs a crash nobody awaits once, at error
level, and stops them all together: optionally a grace to finish, then cancel and await.

The usual stop idiom, ``task.cancel()`` then ``with suppress(CancelledError): await task``,
cannot tell the task's ``CancelledError`` from one aimed at the caller while it waits: a
second cancel sent to the caller (a test's timeout, a shutdown) is swallowed and the caller
runs on. :func:`cancel_and_wait` tells them apart with ``Task.cancelling()``, as
``asyncio.timeout`` does: a cancel request counted against the caller after it started
waiting is re-raised; the tasks' own cancellation is not.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from typing import Any, TypeVar

__all__ = ["TaskSet", "cancel_and_wait", "gather_bounded"]

T = TypeVar("T")


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


class TaskSet:
    """The background tasks of one object: spawned named, crashes logged, stopped together.

    A finished task leaves the set by itself. One that ends with an exception nobody takes
    (``awaited=False``) is logged once (``<owner>: task <name> crashed``, with the traceback)
    instead of Python's "Task exception was never retrieved" at garbage collection, which
    comes late or never.

    Args:
        owner: Who owns the tasks, the prefix of their names and of the crash line
            (e.g. ``member https://10.0.0.1:6443``).
        logger: Where a crash is logged.
        extra: ``extra`` of the crash record (e.g. ``{"cluster": ...}``).
    """

    def __init__(
        self, owner: str, *, logger: logging.Logger, extra: Mapping[str, Any] | None = None
    ) -> None:
        self.owner = owner
        self._log = logger
        self._extra = dict(extra or {})
        self._tasks: set[asyncio.Task[Any]] = set()
        self._awaited: set[asyncio.Task[Any]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Iterator[asyncio.Task[Any]]:
        return iter(list(self._tasks))

    def spawn(
        self, coro: Coroutine[Any, Any, T], *, name: str, awaited: bool = False
    ) -> asyncio.Task[T]:
        """Run ``coro`` as a task named ``<owner>: <name>`` on the running loop.

        Args:
            coro: The coroutine.
            name: What the task does (``probe``, ``worker 3``).
            awaited: The caller takes the task's result itself (awaits it or calls
                ``result()``): a failure is the caller's to report, not logged here.

        Returns:
            The task (in the set until it finishes).
        """
        task = asyncio.get_running_loop().create_task(coro, name=f"{self.owner}: {name}")
        self._tasks.add(task)
        if awaited:
            self._awaited.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task in self._awaited:
            self._awaited.discard(task)
            return
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self._log.error(
                "%s: task %s crashed: %s",
                self.owner,
                task.get_name(),
                exc,
                exc_info=exc,
                extra=self._extra,
            )

    async def stop(self, grace: float = 0.0) -> None:
        """Stop every task: wait up to ``grace`` seconds for them to finish, cancel the rest.

        Idempotent; tasks spawned while it waits are stopped too. A task's own failure is
        not raised here: an unawaited one's was logged, an ``awaited`` one's is its
        caller's, who holds the task.

        Args:
            grace: Seconds the tasks get to finish on their own (0: cancel at once).

        Raises:
            asyncio.CancelledError: The caller was cancelled while it waited.
        """
        if grace > 0 and self._tasks:
            await asyncio.wait(list(self._tasks), timeout=grace)
        while self._tasks:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            # A cancel aimed at the caller cancels the gather, which raises it here.
            await asyncio.gather(*tasks, return_exceptions=True)
            self._tasks.difference_update(tasks)  # their done callbacks may not have run yet

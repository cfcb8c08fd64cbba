"""One async start/stop pair, usable as an async or a sync context manager.

The sync form runs each half in its own ``asyncio.run``: processes are plain children, not
tied to an event loop, and every client a half opens is closed before it returns. It cannot
be used inside a running event loop; use ``async with`` there.
"""

from __future__ import annotations

import abc
import asyncio
from types import TracebackType
from typing import Self

__all__ = ["StartStop"]


class StartStop(abc.ABC):
    """Base: subclasses implement ``async start()`` and ``async stop()``."""

    @abc.abstractmethod
    async def start(self) -> None:
        """Start; on failure, clean up what was started and raise."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Stop everything and release resources."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def __enter__(self) -> Self:
        asyncio.run(self.start())
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        asyncio.run(self.stop())

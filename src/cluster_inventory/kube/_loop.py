"""Which event loop a long-running process of ours runs on."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["EVENT_LOOP_ENV", "event_loop_factory", "run"]

T = TypeVar("T")

#: Environment variable choosing the loop: ``uvloop`` (default when installed) or ``asyncio``.
EVENT_LOOP_ENV = "CLUSTER_INVENTORY_EVENT_LOOP"


def event_loop_factory(name: str | None = None) -> Callable[[], asyncio.AbstractEventLoop]:
    """The factory of the event loop to run on.

    Args:
        name: ``"uvloop"``, ``"asyncio"``, or None for ``$CLUSTER_INVENTORY_EVENT_LOOP``,
            then uvloop when it is installed (a dependency on Linux and macOS), then asyncio.

    Why uvloop: CPython's asyncio keeps a 256 KiB read buffer for every TLS connection
    (``asyncio.sslproto.SSLProtocol``), so a process holding one watch per member cluster
    pays about 360 KiB per cluster; on uvloop it is about 80 KiB
    (``bench/runtime_engage.py --distinct-sizes``, docs/benchmarks.md).

    Raises:
        ValueError: An unknown name, or ``uvloop`` asked for and not installed.
    """
    chosen = name or os.environ.get(EVENT_LOOP_ENV) or ""
    if chosen not in ("", "uvloop", "asyncio"):
        raise ValueError(f"{EVENT_LOOP_ENV}={chosen!r}: expected 'uvloop' or 'asyncio'")
    if chosen == "asyncio":
        return asyncio.new_event_loop
    try:
        import uvloop
    except ImportError:
        if chosen == "uvloop":
            raise ValueError(
                "the uvloop event loop was asked for but uvloop is not installed "
                "(pip install uvloop)"
            ) from None
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T], *, event_loop: str | None = None) -> T:
    """Run ``main`` to completion on a new event loop, then close it (like ``asyncio.run``).

    Args:
        main: The coroutine to run.
        event_loop: See :func:`event_loop_factory` (default: uvloop when installed).

    Returns:
        What ``main`` returned.

    Raises:
        ValueError: As :func:`event_loop_factory`; ``main`` is then closed unrun.
        Whatever ``main`` raises (``CancelledError`` if it was cancelled, e.g. on SIGTERM).
    """
    try:
        factory = event_loop_factory(event_loop)
    except ValueError:
        main.close()
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)

"""Which event loop a long-running process of ours runs on."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from cluster_inventory.kube._malloc import tune_malloc

__all__ = ["EVENT_LOOP_ENV", "event_loop_factory", "run"]

T = TypeVar("T")
_log = logging.getLogger("cluster_inventory.kube")

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

    Fixes glibc's mmap threshold first (:mod:`._malloc`): a process holding a TLS connection
    per member cluster otherwise keeps their read buffers in a fragmented heap.

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
    tune_malloc()  # a long-running process: TLS read buffers in mappings of their own
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.get_loop().set_exception_handler(_exception_handler)
        return runner.run(main)


def _exception_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's default handler, except for two ends of TLS connections already abandoned.

    uvloop reports a TLS connection that a timeout or a cancellation closed while it had
    bytes to send as "Fatal error on SSL protocol" with a RuntimeError traceback; and a
    handshake that the connect's timeout gave up on, and that the server then reset, as
    "Future exception was never retrieved" with a ConnectionResetError traceback (its
    handshake waiter, a plain Future nobody awaits any more: uvloop issue 437). Either way
    the request has already failed (and been reported) by then, so one debug line says it
    instead. Seen when a replica probes hundreds of members at once on a loaded machine, and
    when a CPU limit starves it (``bench/fleet_scale.py --squeeze``).
    """
    failure = context.get("exception")
    message = str(context.get("message", ""))
    if (
        message.startswith("Fatal error on SSL")
        and isinstance(failure, RuntimeError)
        and "closed" in str(failure)
    ):
        _log.debug("TLS connection closed while writing: %s", failure)
        return
    if (
        message == "Future exception was never retrieved"
        and isinstance(failure, ConnectionError)
        and not isinstance(context.get("future"), asyncio.Task)
    ):
        _log.debug("TLS handshake given up on, then reset: %r", failure)
        return
    loop.default_exception_handler(context)

"""pytest plugin (opt-in): on a pytest-timeout timeout, print the asyncio tasks' await chains.

Enable it with ``-p cluster_inventory.testing.pytest_hang_report`` beside pytest-timeout (its
default ``signal`` method): a test that times out then prints the await chain of every asyncio
task on the test's event loop before pytest-timeout's thread stacks, so a hung async test names
the ``await`` it is stuck in, not only the (idle) threads. Without pytest-timeout it does
nothing.
"""

from __future__ import annotations

import signal
from collections.abc import Generator
from typing import Any

import pytest

from cluster_inventory.testing._hangs import format_asyncio_tasks

__all__ = ["pytest_timeout_set_timer"]


@pytest.hookimpl(hookwrapper=True, optionalhook=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> Generator[None, None, None]:
    """pytest-timeout hook: on a timeout, print the asyncio tasks before its thread stacks.

    pytest-timeout's ``signal`` method installs a SIGALRM handler; this wraps it. The
    ``thread`` method ends the process from another thread, where the test's event loop
    cannot be inspected safely, so it is left as it is.
    """
    yield
    if getattr(settings, "method", None) != "signal":
        return
    original = signal.getsignal(signal.SIGALRM)
    if not callable(original):
        return

    def on_timeout(signum: int, frame: Any) -> None:
        __tracebackhide__ = True
        writer = item.config.get_terminal_writer()
        writer.sep("+", title="asyncio tasks at the timeout")
        writer.write(format_asyncio_tasks() + "\n")
        original(signum, frame)

    signal.signal(signal.SIGALRM, on_timeout)

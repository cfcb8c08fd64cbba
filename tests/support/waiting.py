"""Waiting for a condition on real servers without sleeping a fixed time."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from cluster_inventory import kube

T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T] | T], *, timeout: float = 20.0, what: str = "condition"
) -> T:
    """Call ``probe`` (sync or async) until it returns a truthy value, or raise with the last
    value or failure."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            value = probe()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
            last = value
        except (AssertionError, KeyError, kube.KubeError) as exc:
            last = exc
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last: {last!r}")
        await asyncio.sleep(0.1)

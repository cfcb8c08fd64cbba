"""The CLI's one error form: ``error: MESSAGE`` on stderr, exit code 1.

:func:`run_or_fail` is the one way a command runs its async part and turns an API error
into that form.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Coroutine
    from typing import Any, NoReturn, TypeVar

    T = TypeVar("T")

__all__ = ["fail", "run_or_fail"]


def fail(message: str) -> NoReturn:
    """Print ``error: MESSAGE`` on stderr and exit with code 1 (the CLI's one error form)."""
    sys.stdout.flush()
    sys.stderr.write(f"error: {message}\n")
    raise SystemExit(1)


def run_or_fail(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to its end (``asyncio.run``); a ``KubeError`` is :func:`fail`'s one line.

    Args:
        coro: The command's async part (it opens and closes its own clients).

    Returns:
        What ``coro`` returns.

    Raises:
        SystemExit: Exit code 1 after ``error: MESSAGE`` when the API server refused or
            could not be reached (:class:`cluster_inventory.kube.KubeError`).
    """
    import asyncio

    from cluster_inventory import kube

    try:
        return asyncio.run(coro)
    except kube.KubeError as exc:
        fail(str(exc))

"""Running a long-lived controller command until SIGTERM, the way every ``... run``/``sync`` does.

SIGTERM and SIGINT cancel the controller's task (it stops its workers and releases its
Lease on the way out); a lost Lease, a refused first LIST or an address already in use end
the command with one line on stderr and exit code 1, so the supervisor restarts it.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable

from cluster_inventory.cli._get import fail

__all__ = ["run_until_signal"]


def run_until_signal(main: Callable[[], Awaitable[bool]]) -> None:
    """Run ``main()`` on :func:`cluster_inventory.kube.run` until it returns or a signal.

    Args:
        main: The controller; returns True when leadership was lost.

    Raises:
        typer.Exit: Exit code 1 after printing the error (KubeError, OSError) or
            ``leadership lost``.
    """
    from cluster_inventory import kube

    async def supervised() -> bool:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)
        return await main()

    try:
        lost = kube.run(supervised())
    except asyncio.CancelledError:
        lost = False
    except (kube.KubeError, OSError) as exc:
        fail(str(exc))
    if lost:
        fail("leadership lost")

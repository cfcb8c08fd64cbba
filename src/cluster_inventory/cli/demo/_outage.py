"""Step 9: stop one member's API server, watch its profiles turn unhealthy, then recover."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TypeVar

from cluster_inventory import api, kube
from cluster_inventory.api.views import ProfileView
from cluster_inventory.cli.demo._plan import DemoRun, poll

T = TypeVar("T")


async def outage(demo: DemoRun, hub: kube.ApiClient) -> None:
    """Stop the last member's API server and start it again, timing each health flip."""
    name = demo.outage_member
    keys = [key for key in demo.expected_profiles() if key[1] == name]
    where = ", ".join("/".join(k) for k in keys)
    demo.out("\nOUTAGE\n")
    # kube-apiserver stops serving readiness as soon as it gets SIGTERM, then drains for a
    # while: the manager may see the outage before the process is gone. So each flip is
    # timed from the request, with the request and the wait running together.
    phases = (
        ("stopping", "stopped", demo.stop_member, "False", "told to stop"),
        ("starting", "started", demo.start_member, "True", "started"),
    )
    for doing, done, act, wanted, since in phases:
        async with demo.step(f"{doing} {name}'s API server"):
            reason, seconds = await _while(act(name), _wait_health(demo, hub, keys, wanted))
        if wanted == "False":
            demo.outcome.down_after = seconds
        else:
            demo.outcome.up_after = seconds
        demo.out(
            f"{name} {done}: ControlPlaneHealthy={wanted} ({reason}) on {where} "
            f"{seconds:.1f} s after its API server was {since}\n"
        )


async def _while(action: Awaitable[None], wait: Awaitable[T]) -> T:
    """Run ``action`` and ``wait`` together and return ``wait``'s result.

    Both must finish; if ``action`` fails first, ``wait`` is cancelled and the error
    raised at once rather than after ``wait`` times out.
    """
    acting = asyncio.ensure_future(action)
    waiting = asyncio.ensure_future(wait)
    try:
        await asyncio.wait({acting, waiting}, return_when=asyncio.FIRST_EXCEPTION)
        if acting.done() and acting.exception() is not None:
            waiting.cancel()
        await acting
        return await waiting
    finally:
        await kube.cancel_and_wait(*(t for t in (acting, waiting) if not t.done()))


async def _wait_health(
    demo: DemoRun, hub: kube.ApiClient, keys: list[tuple[str, str]], wanted: str
) -> tuple[str, float]:
    """Wait until ``ControlPlaneHealthy`` is ``wanted`` on every profile of ``keys``.

    Returns:
        The reasons seen (comma-separated) and the seconds waited.
    """
    started = time.monotonic()
    seen = "not read yet"

    async def flipped() -> str | None:
        nonlocal seen
        demo.check_manager()
        reasons = set()
        for namespace, name in keys:
            profile = await kube.get(hub, kube.CLUSTER_PROFILES, name, namespace=namespace)
            cond = ProfileView.of(profile).condition(api.CONDITION_CONTROL_PLANE_HEALTHY)
            seen = f"{namespace}/{name}: ControlPlaneHealthy={cond.status if cond else 'absent'}"
            if cond is None or cond.status != wanted:
                return None
            reasons.add(cond.reason)
        return ",".join(sorted(reasons))

    reason = await poll(flipped, demo.ready_timeout, lambda: seen)
    return reason, time.monotonic() - started

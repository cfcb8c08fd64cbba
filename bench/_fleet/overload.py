"""Past capacity and back (``--squeeze``): every replica limited, then the limit lifted.

During the squeeze: the profiles that said the manager is behind (most at once, at the end,
ever), and how many of the sample's property changes, written when it began, got through.
The drain: seconds from lifting the limit until no profile says behind and a second change
on every sample member shows. False transitions, shard changes and Lease lateness of both
come from the watches over the windows ``squeeze`` and ``drain`` (``run.watched``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from _cpu_limit import CpuLimit

from .live import LiveRun
from .phases import write_sample
from .profiles import behind, props, wait
from .record import Drain, Squeeze


def _stamped(stamp: str, value: str) -> Callable[[str, dict[str, Any]], bool]:
    """A waiter's test: the profile's property ``stamp.<its name>`` is ``value``."""
    return lambda name, o: props(o).get(f"{stamp}.{name}") == value


async def squeeze(live: LiveRun, limit: CpuLimit, sample: list[int]) -> Squeeze:
    """Every replica limited to ``Settings.squeeze`` cores for ``Settings.squeeze_for`` s,
    the sample's property changes written as it begins; the limit lifted at its end."""
    watch, s = live.watch, live.s
    names = {live.vm.name(i) for i in sample}
    stamp = f"squeeze-{live.names.run}"
    await live.scrape("squeeze_start")
    throttled = limit.throttled()
    watch.reset_behind()
    started = time.perf_counter()
    limit.set(s.squeeze)
    during = watch.waiter(names, _stamped(stamp, "during"))
    await write_sample(live, sample, stamp, "during")
    await asyncio.sleep(max(0.0, s.squeeze_for - (time.perf_counter() - started)))
    behind_max, behind_end = watch.behind_max, len(watch.behind)
    behind_ever, through = len(watch.behind_ever), len(names) - len(during.pending)
    watch.waiters.remove(during)
    lifted = time.perf_counter()
    limit.set(None)
    live.windows["squeeze"] = (started, lifted)
    throttled_s = {k: round(v - throttled.get(k, 0.0), 2) for k, v in limit.throttled().items()}
    await live.scrape("squeeze_end")
    return Squeeze(
        behind_max=behind_max,
        behind_end=behind_end,
        behind_ever=behind_ever,
        changes_through=through,
        changes=len(names),
        throttled_s=throttled_s,
    )


async def drain(live: LiveRun, sample: list[int]) -> Drain:
    """From the lift (the end of window ``squeeze``): a second change on every sample member,
    until it shows everywhere and no profile says the manager is behind.

    Raises:
        RuntimeError: either did not happen within ``Settings.timeout``.
    """
    watch, timeout = live.watch, live.s.timeout
    lifted = live.windows["squeeze"][1]
    stamp = f"squeeze-{live.names.run}"
    after = watch.waiter({live.vm.name(i) for i in sample}, _stamped(stamp, "after"))
    calm = watch.waiter(set(watch.by_name()), lambda _, o: not behind(o))
    await write_sample(live, sample, stamp, "after")
    fresh_at = await wait(after, timeout, "property changes after the squeeze")
    calm_at = await wait(calm, timeout, "profiles no longer saying the manager is behind")
    for waiter in (after, calm):
        watch.waiters.remove(waiter)
    live.windows["drain"] = (lifted, max(fresh_at, calm_at))
    return Drain(fresh_s=fresh_at - lifted, calm_s=calm_at - lifted, behind_end=len(watch.behind))

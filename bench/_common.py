"""Helpers shared by the benchmarks: process memory, bounded concurrency, percentiles."""

from __future__ import annotations

import asyncio
import math
import os


def rss_mib(*pids: int) -> float:
    """Resident memory of the processes together, in MiB (from /proc)."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total / 1024


def _stat_seconds(pid: int, first: int) -> float:
    """Fields ``first`` and ``first + 1`` (after the command) of /proc/PID/stat, in seconds."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[first]) + int(fields[first + 1])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds the process has used so far (from /proc/PID/stat)."""
    return _stat_seconds(pid, 11)


def children_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of the children the process has waited for (a runtime's
    exec plugins): ``cutime`` and ``cstime`` of /proc/PID/stat."""
    return _stat_seconds(pid, 13)


async def bounded(calls, limit=16):
    """Await the coroutines with at most ``limit`` in flight; results in order."""
    gate = asyncio.Semaphore(limit)

    async def one(c):
        async with gate:
            return await c

    return await asyncio.gather(*(one(c) for c in calls))


def percentile(values, q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1) of a non-empty sequence."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


SMOKE_HELP = (
    "tiny sizes and one run, in seconds: exercises the same code paths and checks the "
    "output is sane (CI runs every benchmark this way so none can rot)"
)


def require(ok: bool, what: str) -> None:
    """Stop the benchmark with exit code 1 when a sanity check on its own output fails."""
    if not ok:
        raise SystemExit(f"benchmark sanity check failed: {what}")


def require_times(**seconds: float) -> None:
    """Every named figure is a finite, non-negative number of seconds (or MiB)."""
    for name, value in seconds.items():
        require(
            isinstance(value, int | float) and math.isfinite(value) and value >= 0,
            f"{name} = {value!r}",
        )

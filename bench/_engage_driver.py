"""The driver side of bench/runtime_engage.py: the runtime processes it starts and what they say.

Each runtime process (bench/_runtime_child.py) writes one JSON record a line on stdout
(``synced``, ``replicas``, ``reconcile``, ``ready-seen``, ``stats``); :class:`Runtime` keeps
them with the driver's clock, :class:`Runtimes` waits on all of a run's processes at once.
"""

from __future__ import annotations

import asyncio
import json


class Runtime:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.reconciled: dict[str, float] = {}
        self.ready_seen: dict[str, float] = {}
        self.synced = asyncio.Event()
        self.replicas = 0  # the live replicas it sees (1 unsharded)
        self.changed = asyncio.Event()
        self._stats: asyncio.Future[dict] | None = None
        self.reader = asyncio.get_running_loop().create_task(self._read())

    async def stats(self) -> dict:
        """The process's own counts (``plugin_runs``), asked for on its stdin."""
        assert self.proc.stdin is not None
        self._stats = asyncio.get_running_loop().create_future()
        self.proc.stdin.write(b"stats\n")
        await self.proc.stdin.drain()
        async with asyncio.timeout(30):
            return await self._stats

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for line in self.proc.stdout:
            record = json.loads(line)
            if record["event"] == "stats" and self._stats is not None:
                self._stats.set_result(record)
            elif record["event"] == "synced":
                self.replicas = record["replicas"]
                self.synced.set()
            elif record["event"] == "replicas":
                self.replicas = record["n"]
            elif record["event"] == "reconcile":
                self.reconciled[record["cluster"]] = record["t"]
            elif record["event"] == "ready-seen":
                self.ready_seen[record["cluster"]] = record["t"]
            self.changed.set()


class Runtimes:
    """The runtime processes of one run (one unsharded, or the replicas of a shard group)."""

    def __init__(self, procs: list[asyncio.subprocess.Process]) -> None:
        self.each = [Runtime(proc) for proc in procs]
        self.changed = asyncio.Event()
        for runtime in self.each:
            runtime.changed = self.changed  # one event: any process's record wakes a wait

    def count(self) -> int:
        """Clusters reconciled, summed over the replicas."""
        return sum(len(r.reconciled) for r in self.each)

    def engaged(self) -> set[str]:
        """Clusters reconciled by any replica."""
        return set().union(*(r.reconciled for r in self.each))

    def reconciled(self, key: str) -> Runtime | None:
        """The replica that reconciled ``key`` first (None: not yet)."""
        found = [r for r in self.each if key in r.reconciled]
        return min(found, key=lambda r: r.reconciled[key]) if found else None

    async def wait(self, predicate, timeout: float) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

    async def close(self) -> None:
        for runtime in self.each:
            if runtime.proc.returncode is None:
                runtime.proc.terminate()
        for runtime in self.each:
            await runtime.proc.wait()
            runtime.reader.cancel()

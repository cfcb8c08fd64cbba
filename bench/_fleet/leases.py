"""The shard group's Leases as one watch outside the replicas sees them."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from cluster_inventory import kube
from cluster_inventory.controller.sharding import LABEL_SHARD_GROUP
from cluster_inventory.kube.informer import Informer


class LeaseWatch:
    """The shard group's Leases as one watch outside the replicas sees them.

    A replica (its Lease's holder) is live from a change of its Lease record (holder,
    renewTime) until ``leaseDurationSeconds`` later on this process's monotonic clock, or
    until its Lease is deleted: the replicas' own rule, timed by one delayed callback per
    Lease, not by polling. Keeps every change of the live set (time, replica, ``new``,
    ``gone`` or ``back``) and every renewal's lateness (time, replica, gap since the previous
    renewal minus the renew interval). Seen from here, so a late watch event on this side
    counts like a late renewal.
    """

    def __init__(
        self, hub: kube.ApiClient, namespace: str, group: str, renew_interval: float
    ) -> None:
        self.informer = Informer(
            hub,
            kube.LEASES,
            namespace=namespace,
            label_selector=f"{LABEL_SHARD_GROUP}={group}",
            name="bench shard Leases",
        )
        self.renew_interval = renew_interval
        self.records: dict[str, tuple[Any, Any]] = {}
        self.renewed_at: dict[str, float] = {}
        self.live: set[str] = set()
        self.timers: dict[str, asyncio.TimerHandle] = {}
        self.changes: list[tuple[float, str, str]] = []
        self.lateness: list[tuple[float, str, float]] = []
        self.informer.add_handler(self._on_event)

    def _on_event(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        now = time.perf_counter()
        spec = obj.get("spec") or {}
        who = str(spec.get("holderIdentity") or obj["metadata"]["name"])
        if event == "DELETED":
            self._gone(who, now)
            return
        record = (spec.get("holderIdentity"), spec.get("renewTime"))
        if self.records.get(who) == record:
            return
        self.records[who] = record
        if who in self.renewed_at:
            self.lateness.append((now, who, now - self.renewed_at[who] - self.renew_interval))
        if who not in self.live:
            self.changes.append((now, who, "back" if who in self.renewed_at else "new"))
            self.live.add(who)
        self.renewed_at[who] = now
        if who in self.timers:
            self.timers.pop(who).cancel()
        duration = float(spec.get("leaseDurationSeconds") or 0)
        self.timers[who] = asyncio.get_running_loop().call_later(duration, self._gone, who, None)

    def _gone(self, who: str, now: float | None) -> None:
        if who in self.timers:
            self.timers.pop(who).cancel()
        if who in self.live:
            self.live.discard(who)
            self.changes.append((now or time.perf_counter(), who, "gone"))

    def unexpected(self, victim: str | None, killed: float) -> list[tuple[float, str, str]]:
        """The changes the benchmark did not cause: all but each replica's first Lease and
        the victim's first ``gone`` after the kill."""
        excused = False
        out = []
        for t, who, what in self.changes:
            if what == "new":
                continue
            if what == "gone" and who == victim and t >= killed and not excused:
                excused = True
                continue
            out.append((t, who, what))
        return out

    def stop(self) -> None:
        for timer in self.timers.values():
            timer.cancel()
        self.timers.clear()

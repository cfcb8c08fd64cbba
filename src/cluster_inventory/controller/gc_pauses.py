"""Garbage-collector pauses: measured, and kept short in a process holding thousands of members.

CPython's cyclic garbage collector runs in whichever thread allocates, and holds the GIL for
the whole collection. A full collection (generation 2) walks every object the collector
tracks: a replica's caches, member clients, tasks and connections. On a free machine that is
a hiccup; under a CPU limit (a pod's ``limits.cpu``) the same CPU seconds are spread over
``seconds / limit`` of wall time, in which no other thread runs Python: not the shard Lease's
renewal thread either. ``bench/fleet_scale.py --squeeze`` saw renewals 26 s late, and peers
count the replica gone, at 0.015 cores for 1,000 members (``docs/scale.md``).

- :class:`GcPauses` times every collection (``gc.callbacks``):
  ``cluster_inventory_gc_pause_seconds{generation}`` (wall seconds the collector held the
  GIL) and ``cluster_inventory_gc_cpu_seconds_total{generation}``; Go's
  ``go_gc_duration_seconds`` is the model.
- :func:`settle` is called when start-up or a takeover has settled: it collects once and
  moves every object alive then to the permanent generation (``gc.freeze()``, as Instagram
  does for its long-lived processes), so later full collections walk only what was created
  since. It unfreezes first, so the garbage of members that left since the last settle is
  collected there and never kept. The collector is the process's, so only the process's
  main :class:`~cluster_inventory.controller.Manager` turns this on (:func:`enable`); in any
  other process (a test's) :func:`settle` does nothing. Enabling also raises the youngest
  generation's threshold (:data:`YOUNG_THRESHOLD`), so the short-lived objects of a burst
  die young instead of filling the old generation.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

from cluster_inventory import kube

__all__ = ["GcMetrics", "GcPauses", "enable", "settle"]

#: Pause buckets (seconds): a young collection takes well under 1 ms.
_PAUSE_BUCKETS = (0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(frozen=True)
class GcMetrics(kube.PerRegistry):
    """How long garbage collections hold the GIL, by ``generation`` (0, 1, 2).

    - ``cluster_inventory_gc_pause_seconds`` (histogram): wall seconds per collection;
    - ``cluster_inventory_gc_cpu_seconds_total``: CPU seconds the collector used.
    """

    pause: Histogram = kube.metric(
        Histogram,
        "cluster_inventory_gc_pause_seconds",
        "Wall seconds one garbage collection held the GIL",
        ["generation"],
        buckets=_PAUSE_BUCKETS,
    )
    cpu: Counter = kube.metric(
        Counter,
        "cluster_inventory_gc_cpu_seconds",
        "CPU seconds the garbage collector used",
        ["generation"],
    )


class GcPauses:
    """Times every garbage collection of this process into :class:`GcMetrics`.

    Args:
        registry: Where the metrics are registered.

    :meth:`start` adds a ``gc.callbacks`` hook and :meth:`stop` removes it; both idempotent.
    """

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self._metrics = GcMetrics.for_registry(registry)
        self._began: tuple[float, float] | None = None

    def start(self) -> None:
        """Begin timing collections."""
        if self._callback not in gc.callbacks:
            gc.callbacks.append(self._callback)

    def stop(self) -> None:
        """Stop timing collections."""
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = (time.perf_counter(), time.thread_time())
            return
        if self._began is None:
            return
        wall, cpu = self._began
        self._began = None
        generation = str(info.get("generation", ""))
        self._metrics.pause.labels(generation).observe(time.perf_counter() - wall)
        self._metrics.cpu.labels(generation).inc(max(0.0, time.thread_time() - cpu))


_enabled = False
#: The youngest generation's threshold while enabled (CPython's default: 700 allocations).
#: A replica starting or taking over members allocates in bursts (parsed objects, requests,
#: TLS state); at 700 most of a burst's short-lived objects survive a young collection or two
#: and reach the old generation, which makes full collections come sooner. The older
#: generations keep CPython's thresholds.
YOUNG_THRESHOLD = 10_000
_default_thresholds: tuple[int, int, int] | None = None


def enable(on: bool = True) -> None:
    """Let :func:`settle` work in this process (the main Manager of a long-lived process).

    Also raises the youngest generation's threshold to :data:`YOUNG_THRESHOLD` (``on``) or
    puts back the thresholds found at the first call (off).
    """
    global _enabled, _default_thresholds
    _enabled = on
    if _default_thresholds is None:
        t0, t1, t2 = gc.get_threshold()
        _default_thresholds = (t0, t1, t2)
    if on:
        gc.set_threshold(max(YOUNG_THRESHOLD, _default_thresholds[0]), *_default_thresholds[1:])
    else:
        gc.set_threshold(*_default_thresholds)


def settle() -> int | None:
    """Collect once, then exclude every object alive now from later collections.

    Call it when a long-lived process has built what it keeps (caches synced, members
    started), not on every change: the collection it runs is a full one.

    Returns:
        Objects moved to the permanent generation (``gc.get_freeze_count()``), or None when
        :func:`enable` was not called (nothing done).
    """
    if not _enabled:
        return None
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()

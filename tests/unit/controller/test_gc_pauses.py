"""Garbage-collector pauses are timed, and settling freezes what lives long, garbage excepted."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from cluster_inventory.controller import gc_pauses
from cluster_inventory.controller.gc_pauses import GcPauses


@pytest.fixture
def enabled() -> Iterator[None]:
    gc_pauses.enable()
    try:
        yield
    finally:
        gc_pauses.enable(False)
        gc.unfreeze()


def test_every_collection_is_timed_by_generation_until_stopped() -> None:
    registry = CollectorRegistry()
    pauses = GcPauses(registry)
    pauses.start()
    pauses.start()  # idempotent: one hook
    try:
        gc.collect()
        gc.collect(0)
    finally:
        pauses.stop()
    count = registry.get_sample_value
    assert count("cluster_inventory_gc_pause_seconds_count", {"generation": "2"}) == 1
    assert count("cluster_inventory_gc_pause_seconds_count", {"generation": "0"}) == 1
    assert count("cluster_inventory_gc_cpu_seconds_total", {"generation": "2"}) >= 0
    gc.collect()
    assert count("cluster_inventory_gc_pause_seconds_count", {"generation": "2"}) == 1


def test_settle_does_nothing_unless_the_process_enabled_it() -> None:
    frozen = gc.get_freeze_count()
    assert gc_pauses.settle() is None
    assert gc.get_freeze_count() == frozen


class _Node:
    def __init__(self) -> None:
        self.me = self


def test_settle_freezes_what_lives_and_frees_garbage_frozen_before(enabled: None) -> None:
    kept = _Node()
    dropped = _Node()
    gone = weakref.ref(dropped)
    assert (gc_pauses.settle() or 0) > 0
    assert gc.is_tracked(kept) and gc.get_freeze_count() > 0
    del dropped  # a cycle that became garbage while frozen
    gc.collect()
    assert gone() is not None, "a frozen cycle is not collected by a normal collection"
    gc_pauses.settle()
    assert gone() is None, "the next settle unfroze and collected it"
    assert kept.me is kept


def test_enabling_raises_the_young_threshold_and_disabling_puts_it_back() -> None:
    before = gc.get_threshold()
    gc_pauses.enable()
    try:
        young, *older = gc.get_threshold()
        assert young == max(gc_pauses.YOUNG_THRESHOLD, before[0])
        assert tuple(older) == before[1:]
    finally:
        gc_pauses.enable(False)
    assert gc.get_threshold() == before

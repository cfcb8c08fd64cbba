"""The pure parts of overload handling: loop-lag bookkeeping and the adaptive start limit."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prometheus_client import CollectorRegistry

from cluster_inventory.controller.overload import AdaptiveLimit, CpuPressure, LoopLag


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_lag_is_remembered_for_the_window_and_only_from_the_given_time():
    clock = Clock()
    lag = LoopLag(window=30.0, threshold=0.1, clock=clock, registry=CollectorRegistry())
    lag.record(clock.now, 0.5)
    clock.now += 1
    lag.record(clock.now, 0.001)
    assert lag.behind_since(99.0)  # the late sample is inside
    assert not lag.behind_since(100.5)  # only a sample that kept up since then
    clock.now += 40
    lag.record(clock.now, 0.001)
    assert not lag.behind_since(0.0)  # forgotten after the window


def _psi(path: Path, stalled_us: int) -> None:
    path.write_text(
        f"some avg10=0.00 avg60=0.00 avg300=0.00 total={stalled_us}\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    )


def test_cpu_pressure_is_the_share_of_wall_time_stalled_between_samples(tmp_path: Path):
    psi = tmp_path / "cpu.pressure"
    _psi(psi, 5_000_000)
    pressure = CpuPressure(psi, threshold=0.5, window=30.0)
    assert pressure.sample(100.0) == 0.0  # the first read only sets the baseline
    _psi(psi, 5_200_000)
    assert abs(pressure.sample(101.0) - 0.2) < 1e-9  # 0.2 s stalled in 1 s
    assert not pressure.high_since(99.0)
    _psi(psi, 6_100_000)
    assert abs(pressure.sample(102.0) - 0.9) < 1e-9
    assert pressure.high_since(101.5) and not pressure.high_since(102.5)
    psi.unlink()
    assert pressure.sample(103.0) == 0.0  # unreadable: no evidence that we are behind


def test_a_loop_on_time_under_cpu_pressure_is_behind(tmp_path: Path):
    psi = tmp_path / "cpu.pressure"
    _psi(psi, 0)
    clock = Clock()
    pressure = CpuPressure(psi)
    lag = LoopLag(threshold=0.1, clock=clock, registry=CollectorRegistry(), pressure=pressure)
    pressure.sample(clock.now)
    lag.record(clock.now, 0.001)  # the loop wakes its sleeper on time ...
    assert not lag.behind_since(clock.now - 1)
    clock.now += 1
    _psi(psi, 800_000)  # ... while its runnable tasks waited for a CPU 80% of a second
    pressure.sample(clock.now)
    lag.record(clock.now, 0.001)
    assert lag.behind_since(clock.now - 2)


def test_an_overdue_sample_counts_as_lag_before_it_is_taken():
    clock = Clock()
    lag = LoopLag(threshold=0.1, clock=clock, registry=CollectorRegistry())
    lag._due = clock.now  # the sampler should have woken now
    clock.now += 0.7  # ... and still has not: the loop is blocked
    assert abs(lag.current - 0.7) < 1e-9
    assert lag.behind_since(clock.now - 1)


def test_the_start_limit_grows_while_starts_succeed_and_halves_on_overload():
    clock = Clock()
    seen: list[int] = []
    limit = AdaptiveLimit(
        initial=8, minimum=2, maximum=64, cooldown=2.0, clock=clock, on_change=seen.append
    )
    for _ in range(8):
        limit.success()
    assert limit.limit == 16  # slow start: +1 per success
    limit.overload()
    assert limit.limit == 8
    limit.overload()  # a second signal within the cooldown is the same overload
    assert limit.limit == 8
    for _ in range(9):
        limit.success()
    assert limit.limit == 9  # congestion avoidance: +1 per round of `limit` successes
    clock.now += 3
    for _ in range(10):
        limit.overload()
        clock.now += 3
    assert limit.limit == 2  # never below the minimum
    assert seen[0] == 8 and seen[-1] == 2


async def test_slots_are_handed_out_in_order_up_to_the_limit():
    limit = AdaptiveLimit(initial=2, minimum=1, maximum=4)
    running: list[int] = []
    most = 0
    release = asyncio.Event()

    async def work(n: int) -> None:
        nonlocal most
        async with limit.slot():
            running.append(n)
            most = max(most, limit.in_flight)
            await release.wait()

    tasks = [asyncio.ensure_future(work(n)) for n in range(6)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert running == [0, 1]
    release.set()
    await asyncio.gather(*tasks)
    assert running == list(range(6))
    assert most <= 2
    assert limit.in_flight == 0


async def test_a_cancelled_waiter_gives_its_slot_back():
    limit = AdaptiveLimit(initial=1, minimum=1, maximum=1)
    gate = asyncio.Event()

    async def hold() -> None:
        async with limit.slot():
            await gate.wait()

    first = asyncio.ensure_future(hold())
    await asyncio.sleep(0)
    second = asyncio.ensure_future(hold())
    await asyncio.sleep(0)
    second.cancel()
    gate.set()
    await first
    await asyncio.gather(second, return_exceptions=True)
    assert limit.in_flight == 0
    async with limit.slot():
        assert limit.in_flight == 1


def test_a_restart_grows_by_doubling_again_until_the_next_overload():
    clock = [0.0]
    limit = AdaptiveLimit(initial=8, minimum=2, maximum=64, clock=lambda: clock[0])
    limit.overload()  # slow start over: 4, and one per round after
    for _ in range(4):
        limit.success()
    assert limit.limit == 4  # 4 + 4 * (1/4..)
    limit.restart()
    for _ in range(4):
        limit.success()
    assert limit.limit == 8  # one per success again: a round doubles it
    clock[0] += 10
    limit.overload()
    assert limit.limit == 4
    limit.success()
    assert limit.limit == 4  # back to one per round

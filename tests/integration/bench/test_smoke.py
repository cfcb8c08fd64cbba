"""Every benchmark runs in its ``--smoke`` mode, so a broken one fails CI instead of rotting.

Smoke mode uses tiny sizes and one run against real control planes, exercises the same code
paths as a full run, and checks its own output (non-negative times, expected counts): a
benchmark whose sanity check fails exits non-zero. New files in bench/ are picked up here
without editing this module.

The smoke runs are started together, a few at a time (:data:`AT_ONCE`), longest first: each
spends most of its time waiting on its own control planes' leases, probes and timers, so
run one after the other they cost the suite three minutes of a mostly idle machine
(together: about one). Each still runs alone in its own process with its own fleet and
scratch directory; a test reads its script's result.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

#: After the parallel pass (Makefile): each smoke run starts fleets of its own, and some
#: squeeze a replica to a CPU quota, figures a second pytest worker's load would distort.
pytestmark = pytest.mark.alone

BENCH = Path(__file__).resolve().parents[3] / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if not p.name.startswith("_"))
#: Smoke runs at a time: on this project's 2-core machines four measured 67 s for all of
#: them against 180 s one by one; three leave room for a slower CI machine.
AT_ONCE = 3
#: The slowest smoke runs (seconds measured one by one: 47, 20, 14, 14, 12, 12), started first
#: so that the last to finish is not a long one started late.
LONGEST = ("fleet_scale", "manager_scale", "runtime_engage", "fault_campaign", "cluster_proxy")


def test_every_benchmark_is_found() -> None:
    assert {p.name for p in SCRIPTS} >= {
        "cli_get.py",
        "credentials.py",
        "delivery.py",
        "fault_campaign.py",
        "fleet_scale.py",
        "fleet_startup.py",
        "http_stack.py",
        "integrations.py",
        "manager_scale.py",
        "profile_series.py",
        "runtime_engage.py",
    }


def _smoke(script: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), "--smoke"],
        cwd=BENCH.parent,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


@pytest.fixture(scope="module")
def smoke_runs(
    request: pytest.FixtureRequest,
) -> Iterator[dict[str, Future[subprocess.CompletedProcess[str]]]]:
    """The smoke run of every script this session selected, started at once (by stem)."""
    chosen = {
        item.callspec.params["script"]
        for item in request.session.items
        if item.path == Path(__file__) and hasattr(item, "callspec")
    }
    first = sorted(chosen, key=lambda p: LONGEST.index(p.stem) if p.stem in LONGEST else 99)
    with ThreadPoolExecutor(AT_ONCE, thread_name_prefix="smoke") as pool:
        yield {p.stem: pool.submit(_smoke, p) for p in first}


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_benchmark_smoke_run_succeeds_and_prints_its_figures(
    script: Path, smoke_runs: dict[str, Future[subprocess.CompletedProcess[str]]]
) -> None:
    run = smoke_runs[script.stem].result()
    tail = f"\n--- stdout ---\n{run.stdout[-3000:]}\n--- stderr ---\n{run.stderr[-3000:]}"
    assert run.returncode == 0, f"{script.name} --smoke exited {run.returncode}{tail}"
    assert "sanity check failed" not in run.stderr, tail
    figures = [line for line in run.stdout.splitlines() if any(ch.isdigit() for ch in line)]
    assert figures, f"{script.name} --smoke printed no figures{tail}"

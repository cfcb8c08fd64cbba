"""Every benchmark runs in its ``--smoke`` mode, so a broken one fails CI instead of rotting.

Smoke mode uses tiny sizes and one run against real control planes, exercises the same code
paths as a full run, and checks its own output (non-negative times, expected counts): a
benchmark whose sanity check fails exits non-zero. New files in bench/ are picked up here
without editing this module.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if not p.name.startswith("_"))


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


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_benchmark_smoke_run_succeeds_and_prints_its_figures(script: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(script), "--smoke"],
        cwd=BENCH.parent,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    tail = f"\n--- stdout ---\n{run.stdout[-3000:]}\n--- stderr ---\n{run.stderr[-3000:]}"
    assert run.returncode == 0, f"{script.name} --smoke exited {run.returncode}{tail}"
    assert "sanity check failed" not in run.stderr, tail
    figures = [line for line in run.stdout.splitlines() if any(ch.isdigit() for ch in line)]
    assert figures, f"{script.name} --smoke printed no figures{tail}"

"""A test that times out names the ``await`` it is stuck in (pytest-timeout + our opt-in plugin)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cluster_inventory.testing._hangs import format_asyncio_tasks

HANGING = """
import asyncio

async def wait_for_the_lease_that_never_comes(event):
    await event.wait()

async def test_hangs():
    event = asyncio.Event()
    helper = asyncio.create_task(asyncio.sleep(3600), name="idle-helper")
    await wait_for_the_lease_that_never_comes(event)
"""


def test_a_timed_out_async_test_prints_every_tasks_await_chain(tmp_path: Path) -> None:
    (tmp_path / "test_hanging.py").write_text(HANGING)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nasyncio_mode = auto\ntimeout = 2\ntimeout_method = signal\n"
    )
    run = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
            *("-p", "cluster_inventory.testing.pytest_hang_report", str(tmp_path)),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "asyncio tasks at the timeout" in out, out
    # the innermost step of the test's own task, and the other task by name
    assert "in wait_for_the_lease_that_never_comes" in out, out
    assert "await event.wait()" in out, out
    assert "Task 'idle-helper'" in out, out
    assert "Timeout (>2.0s)" in out, out


def test_without_a_running_loop_it_says_so() -> None:
    assert format_asyncio_tasks() == "no asyncio event loop is running in this thread"


@pytest.mark.parametrize("n", [1, 3])
async def test_it_lists_every_pending_task(n: int) -> None:
    import asyncio

    tasks = [asyncio.create_task(asyncio.sleep(3600), name=f"sleeper-{i}") for i in range(n)]
    await asyncio.sleep(0)
    try:
        text = format_asyncio_tasks()
        for i in range(n):
            assert f"Task 'sleeper-{i}' (pending)" in text
        assert "in sleep" in text  # the chain reaches asyncio.sleep's own frame
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def test_without_the_opt_in_a_timeout_prints_no_task(tmp_path: Path) -> None:
    (tmp_path / "test_hanging.py").write_text(HANGING)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "timeout = 1\ntimeout_method = signal\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = run.stdout + run.stderr
    assert "Timeout (>1.0s)" in out, out
    assert "asyncio tasks at the timeout" not in out, out

"""The plugin spawner against real children, on asyncio's loop and on uvloop."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import textwrap
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
import uvloop

from cluster_inventory.credentials._spawn import run_process

LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}


def on(loop: str, main: Coroutine[Any, Any, Any]) -> Any:
    with asyncio.Runner(loop_factory=LOOPS[loop]) as runner:
        return runner.run(main)


def python(code: str) -> tuple[str, list[str]]:
    return sys.executable, ["-c", textwrap.dedent(code)]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture(params=sorted(LOOPS))
def loop(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_both_outputs_and_the_exit_code_come_back(loop: str) -> None:
    exe, args = python(
        """
        import os, sys
        sys.stdout.write("o" * 200000); sys.stdout.flush()
        sys.stderr.write("e" * 200000 + os.environ["ONLY_HERE"] + sys.stdin.read())
        sys.exit(3)
        """
    )
    done = on(loop, run_process(exe, args, env={"ONLY_HERE": "!"}, timeout=30))
    assert done.returncode == 3
    assert done.stdout == b"o" * 200000  # more than a pipe holds: both read as they fill
    assert done.stderr == b"e" * 200000 + b"!"  # stdin is /dev/null: empty


def test_a_child_killed_by_a_signal_says_which(loop: str) -> None:
    exe, args = python("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)")
    done = on(loop, run_process(exe, args, env={}, timeout=30))
    assert done.returncode == -signal.SIGTERM


def test_a_timeout_kills_the_whole_process_group_and_reaps_it(loop: str, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    exe, args = python(
        f"""
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
        time.sleep(60)
        """
    )
    with pytest.raises(TimeoutError):
        on(loop, run_process(exe, args, env={}, timeout=2))
    plugin, grandchild = (int(p) for p in pids.read_text().split())
    with pytest.raises(ChildProcessError):  # reaped already: no zombie left behind
        os.waitpid(plugin, os.WNOHANG)
    for _ in range(100):  # the grandchild is not ours to reap: init does it
        if gone(grandchild):
            break
        on(loop, asyncio.sleep(0.05))
    assert gone(grandchild)


def test_a_cancelled_run_leaves_no_child(loop: str, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    exe, args = python(f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n")
    exe, args = exe, [args[0], args[1] + "time.sleep(60)\n"]

    async def main() -> None:
        task = asyncio.ensure_future(run_process(exe, args, env={}, timeout=60))
        while not pid_file.exists() or not pid_file.read_text():
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    on(loop, main())
    with pytest.raises(ChildProcessError):
        os.waitpid(int(pid_file.read_text()), os.WNOHANG)


def test_the_plugin_sees_no_descriptor_of_ours_beyond_0_1_2(loop: str, tmp_path: Path) -> None:
    # A plugin is someone else's program: the runtime's member connections and files must
    # not reach it, nor what this process inherited without close-on-exec (close_fds).
    held = [socket.socket(), open(tmp_path / "ours", "w"), socket.socket()]
    held[0].bind(("127.0.0.1", 0))
    held[0].listen()
    try:
        exe, args = python(
            """
            import os
            def is_open(fd):
                try:
                    os.fstat(fd)
                except OSError:
                    return False
                return True
            print([fd for fd in range(1024) if is_open(fd)])
            """
        )
        done = on(loop, run_process(exe, ["-S", "-I", *args], env={}, timeout=30))
    finally:
        for thing in held:
            thing.close()
    assert done.stdout.strip() == b"[0, 1, 2]"


def test_a_missing_executable_is_an_os_error(loop: str, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        on(loop, run_process(str(tmp_path / "nope"), [], env={}, timeout=5))


def test_names_are_looked_up_in_the_childs_path(loop: str, tmp_path: Path) -> None:
    tool = tmp_path / "my-plugin"
    tool.write_text("#!/bin/sh\necho found\n")
    tool.chmod(0o755)
    done = on(loop, run_process("my-plugin", [], env={"PATH": str(tmp_path)}, timeout=30))
    assert done.stdout == b"found\n"
    with pytest.raises(FileNotFoundError):
        on(loop, run_process("my-plugin", [], env={"PATH": "/nonexistent"}, timeout=5))

"""The Lease loop's thread gets the GIL soon while the main thread is CPU-bound, and the loop
is stopped and closed on its own thread before the interpreter finalizes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

from cluster_inventory import kube
from cluster_inventory.kube.background import SWITCH_INTERVAL


def test_a_background_loop_lowers_the_switch_interval_and_runs_coroutines() -> None:
    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        background = kube.BackgroundLoop("test-background")

        async def answer() -> int:
            return 42

        assert background.submit(answer()).result(timeout=5) == 42
        assert sys.getswitchinterval() <= SWITCH_INTERVAL
        background.stop()
    finally:
        sys.setswitchinterval(before)


def test_stop_cancels_what_runs_there_closes_the_loop_and_a_later_use_starts_another() -> None:
    background = kube.BackgroundLoop("test-background-stop")
    ended: list[str] = []

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            ended.append("cancelled")

    running = background.submit(forever())
    first = background.loop
    background.stop()
    background.stop()  # again: nothing
    assert ended == ["cancelled"]
    assert running.cancelled()
    assert first.is_closed()

    async def answer() -> int:
        return 7

    assert background.submit(answer()).result(timeout=5) == 7
    assert background.loop is not first
    background.stop()


def test_a_process_exiting_with_work_on_the_lease_loop_stops_it_first() -> None:
    # uvloop (the default) left running on a daemon thread while the interpreter finalizes
    # can crash the process (SIGSEGV); the atexit hook stops and closes it first.
    script = textwrap.dedent(
        """
        import asyncio
        from cluster_inventory import kube

        async def watch():
            async def serve(reader, writer):
                while True:
                    writer.write(b"x" * 4096)
                    await writer.drain()
            server = await asyncio.start_server(serve, "127.0.0.1", 0)
            port = server.sockets[0].getsockname()[1]
            reader, _ = await asyncio.open_connection("127.0.0.1", port)
            try:
                while await reader.read(65536):
                    pass
            except asyncio.CancelledError:  # not GeneratorExit: the loop ran to cancel it
                print("cancelled before exit", flush=True)
                raise

        async def main():
            kube.lease_loop().submit(watch())
            await asyncio.sleep(0.2)

        kube.run(main())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "cancelled before exit\n"

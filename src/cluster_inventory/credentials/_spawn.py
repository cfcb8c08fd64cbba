"""Run a child process without copying the parent: vfork + exec, pipes and a pidfd.

A runtime engaging 1,000 members runs 1,000 exec plugins from a process holding thousands
of mappings (a TLS connection and its read buffers per member). uvloop starts a subprocess
with ``fork()``: the kernel copies the parent's page tables for every run (the parent's CPU)
and the child tears that copy down again at ``exec`` (the plugin's CPU): 10 ms and 13 ms a
run beside a 150 MiB parent, against 0.6 ms and 1.2 ms for ``vfork`` (docs/benchmarks.md,
issue 48). CPython's :class:`subprocess.Popen` starts a child with ``vfork`` when it needs
no ``preexec_fn`` (nor user or group changes), whatever the event loop; in the child it
closes every descriptor above 2 (``close_fds``, one ``close_range`` call) and starts a new
session, as this runner always did. (``os.posix_spawn`` would save another 0.3 ms but
cannot close descriptors a parent passed down without close-on-exec.)

The child's output is read from non-blocking pipes through the running loop's readers and
its exit is awaited on a pidfd (Linux 5.3+; elsewhere a worker thread waits), so this works
on asyncio's loop and on uvloop alike and installs no SIGCHLD handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Finished", "run_process"]

_READ_SIZE = 65536


@dataclass(frozen=True)
class Finished:
    """A child that exited: its exit code (``-N`` when killed by signal N) and its output."""

    returncode: int
    stdout: bytes
    stderr: bytes


async def run_process(
    command: str, args: Sequence[str], *, env: Mapping[str, str], timeout: float
) -> Finished:
    """Run ``command args...`` in a session of its own; stdin is ``/dev/null``.

    Args:
        command: A path, or a name looked up in ``env["PATH"]`` (as ``Popen`` does).
        args: The arguments after ``argv[0]`` (which is ``command``).
        env: The child's whole environment.
        timeout: Seconds before the child's process group is killed (``SIGKILL``).

    Returns:
        The exit code and everything the child wrote to stdout and stderr.

    Raises:
        TimeoutError: The child ran longer than ``timeout`` (it was killed and reaped).
        OSError: The child could not be started (``FileNotFoundError``, ``PermissionError``).
        asyncio.CancelledError: Cancelled; the child was killed and reaped first.
    """
    loop = asyncio.get_running_loop()
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    try:
        # Blocks only until the child has exec'd (vfork): well under a millisecond.
        proc = subprocess.Popen(  # noqa: ASYNC220 - vfork: no preexec_fn, no user/group change
            [command, *args],
            stdin=subprocess.DEVNULL,
            stdout=out_write,
            stderr=err_write,
            env=env,
            close_fds=True,
            start_new_session=True,
        )
    except BaseException:
        for fd in (out_read, err_read):
            os.close(fd)
        raise
    finally:
        os.close(out_write)
        os.close(err_write)
    waiting = asyncio.ensure_future(
        asyncio.gather(_read_all(loop, out_read), _read_all(loop, err_read), _exited(proc))
    )
    try:
        async with asyncio.timeout(timeout):
            stdout, stderr, code = await asyncio.shield(waiting)
    except BaseException:  # the timeout, a cancellation: nothing may outlive this call
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        waiting.cancel()
        with contextlib.suppress(BaseException):
            await waiting
        await asyncio.shield(_exited(proc))
        raise
    finally:
        for fd in (out_read, err_read):
            with contextlib.suppress(OSError):
                os.close(fd)
    return Finished(returncode=code, stdout=stdout, stderr=stderr)


async def _read_all(loop: asyncio.AbstractEventLoop, fd: int) -> bytes:
    """Everything written to the pipe ``fd`` until its last writer closes it."""
    os.set_blocking(fd, False)
    chunks: list[bytes] = []

    def drain() -> bool:  # True at end of file
        while True:
            try:
                data = os.read(fd, _READ_SIZE)
            except BlockingIOError:
                return False
            if not data:
                return True
            chunks.append(data)

    await _when_readable(loop, fd, drain)
    return b"".join(chunks)


async def _exited(proc: subprocess.Popen[bytes]) -> int:
    """Wait for ``proc`` to exit and reap it (``Popen.wait``); its exit code (``-N``: signal N)."""
    if proc.returncode is not None:
        return proc.returncode
    loop = asyncio.get_running_loop()
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd (not Linux, or before 5.3): a thread waits
        return await loop.run_in_executor(None, proc.wait)
    try:
        # A pidfd turns readable once its process has exited (and stays so).
        await _when_readable(loop, pidfd, lambda: True)
        return proc.wait()  # it has exited: returns at once
    finally:
        os.close(pidfd)


async def _when_readable(
    loop: asyncio.AbstractEventLoop, fd: int, step: Callable[[], bool]
) -> None:
    """Call ``step`` each time ``fd`` is readable until it returns True (its OSError is raised)."""
    done = loop.create_future()

    def readable() -> None:
        if done.done():
            return
        try:
            finished = step()
        except OSError as exc:
            done.set_exception(exc)
        else:
            if finished:
                done.set_result(None)

    loop.add_reader(fd, readable)
    try:
        await done
    finally:
        loop.remove_reader(fd)

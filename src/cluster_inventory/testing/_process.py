"""Child processes that never outlive their owner.

A control plane left running after a test run eats memory the next run needs, so every
child is started in its own session (one signal stops it and anything it spawned), with
``PR_SET_PDEATHSIG`` so the kernel kills it if the Python process dies, even by SIGKILL,
and is registered for an ``atexit`` sweep. The death signal fires when the *thread* that
started the child exits, so processes are started from the thread that owns the fleet (the
event loop's, or the caller's in the sync facade), never from a worker thread.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["ManagedProcess", "free_port", "pid_alive"]

_PR_SET_PDEATHSIG = 1
_LIVE: set[ManagedProcess] = set()
_PORT_LOCK_SECONDS = 120
_pruned = False


def _die_with_parent(parent_pid: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def pid_alive(pid: int) -> bool:
    """True while process ``pid`` runs (a zombie is dead; a child of ours is reaped here)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except OSError:
        return False


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on ``host`` that was free a moment ago.

    The port is reserved for two minutes with a lock file under the cache directory (as
    envtest does) so that parallel test processes do not pick the same one.
    """
    from cluster_inventory.testing.gobuild import cache_root

    lock_dir = cache_root() / "ports"
    lock_dir.mkdir(parents=True, exist_ok=True)
    global _pruned  # pruning once per process is enough
    if not _pruned:
        _pruned = True
        for stale in lock_dir.glob("port-*"):
            with contextlib.suppress(FileNotFoundError):
                if time.time() - stale.stat().st_mtime > _PORT_LOCK_SECONDS:
                    stale.unlink()
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        lock = lock_dir / f"port-{port}"
        with contextlib.suppress(FileNotFoundError):
            if time.time() - lock.stat().st_mtime > _PORT_LOCK_SECONDS:
                lock.unlink()
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            continue
        os.close(fd)
        return port
    raise RuntimeError("no free port found on loopback after 100 tries")


class ManagedProcess:
    """One long-running child (etcd, kube-apiserver, kube-controller-manager).

    Output goes to a log file, not a pipe, so a chatty server can never block on a full pipe;
    :meth:`log_tail` shows the end of it in error messages.

    Args:
        name: Label for messages, e.g. ``hub/kube-apiserver``.
        argv: Command and arguments.
        log_path: File that receives stdout and stderr.
        env: Extra environment variables.
        detach: Let the child outlive this Python process: no parent-death signal and no
            ``atexit`` sweep (the caller records the PID to stop it later).
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        env: Mapping[str, str] | None = None,
        *,
        detach: bool = False,
    ) -> None:
        self.name = name
        self.detach = detach
        self.argv = list(argv)
        self.log_path = log_path
        self.env = dict(env or {})
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """PID of the running child, or None."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        """True while the child has not exited."""
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the child; raises ``OSError`` if the binary cannot be executed."""
        if self.running:
            return
        env = {**os.environ, **self.env}
        parent = os.getpid()
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=None if self.detach else lambda: _die_with_parent(parent),
            )
        if not self.detach:
            _LIVE.add(self)

    def log_tail(self, lines: int = 15) -> str:
        """Return the last ``lines`` lines of the child's output."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _signal(self, sig: int) -> None:
        if self._proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, sig)

    def kill_now(self) -> None:
        """SIGKILL the child's process group and reap it (used at exit)."""
        if self._proc is not None and self._proc.poll() is None:
            self._signal(signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=5)
        _LIVE.discard(self)

    async def stop(self, timeout: float = 20.0, *, kill: bool = False) -> None:
        """SIGTERM the child's process group, wait up to ``timeout`` seconds, then SIGKILL.

        Args:
            timeout: Seconds to wait for a graceful exit after SIGTERM.
            kill: Send SIGKILL at once (a crash, not a shutdown: kube-apiserver drains for
                seconds after SIGTERM while it answers 503).
        """
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            self._signal(signal.SIGKILL if kill else signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while proc.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            if proc.poll() is None:
                self._signal(signal.SIGKILL)
                while proc.poll() is None:
                    await asyncio.sleep(0.02)
        _LIVE.discard(self)


@atexit.register
def _sweep() -> None:
    for proc in list(_LIVE):
        proc.kill_now()

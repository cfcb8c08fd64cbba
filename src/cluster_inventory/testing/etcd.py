"""etcd for the control planes, and the readiness wait every control-plane process shares.

Timeouts follow envtest's variables (``KUBEBUILDER_CONTROLPLANE_START_TIMEOUT`` and
``..._STOP_TIMEOUT``, Go durations); a process that exits or stays unready fails with its log
tail, so a broken binary or flag reads as what it is.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from pathlib import Path

import aiohttp

from cluster_inventory.testing._process import ManagedProcess, free_port
from cluster_inventory.testing.assets import find_binary

__all__ = ["ControlPlaneError", "Etcd", "start_timeout", "stop_timeout", "wait_http_ok"]

_LOOPBACK = "127.0.0.1"


def start_timeout() -> float:
    """Seconds to wait for a control-plane process to become ready (envtest's variable)."""
    raw = os.environ.get("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT", "")
    return _go_duration(raw) if raw else 180.0


def stop_timeout() -> float:
    """Seconds a control-plane process gets to exit after SIGTERM (envtest's variable)."""
    raw = os.environ.get("KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT", "")
    return _go_duration(raw) if raw else 20.0


def _go_duration(text: str) -> float:
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    total, number = 0.0, ""
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isdigit() or ch == ".":
            number += ch
            i += 1
            continue
        unit = "ms" if text[i : i + 2] == "ms" else ch
        total += float(number or 0) * units.get(unit, 1.0)
        number = ""
        i += len(unit)
    return total + (float(number) if number else 0.0)


class ControlPlaneError(RuntimeError):
    """A control-plane process failed to start or become ready; carries its log tail."""


async def wait_http_ok(
    url: str,
    *,
    proc: ManagedProcess,
    timeout: float,
    ssl_ctx: ssl.SSLContext | None = None,
) -> None:
    """Poll ``url`` until it answers 200.

    Raises:
        ControlPlaneError: ``proc`` exited, or ``timeout`` seconds passed; with its log tail.
    """
    deadline = time.monotonic() + timeout
    last = "no answer"
    async with aiohttp.ClientSession(trust_env=False) as session:
        while time.monotonic() < deadline:
            if not proc.running:
                raise ControlPlaneError(
                    f"{proc.name} exited before becoming ready; last output:\n{proc.log_tail()}"
                )
            try:
                async with session.get(
                    url,
                    ssl=ssl_ctx if ssl_ctx is not None else False,
                    timeout=aiohttp.ClientTimeout(total=2),
                ) as resp:
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}: {(await resp.text())[-300:]}"
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                last = f"{type(exc).__name__}"
            await asyncio.sleep(0.1)
    raise ControlPlaneError(
        f"{proc.name} not ready at {url} after {timeout:.0f} s ({last}); last output:\n"
        f"{proc.log_tail()}"
    )


class Etcd:
    """A single-member etcd on loopback with a throwaway data directory.

    Several control planes may share one etcd, each under its own ``--etcd-prefix``.

    Args:
        workdir: Directory for data and logs (created).
        name: Label for messages.
        detach: Let the process outlive this Python process.
    """

    def __init__(self, workdir: Path, *, name: str = "etcd", detach: bool = False) -> None:
        self.workdir = workdir
        self.detach = detach
        self.name = name
        self.client_port = 0
        self.peer_port = 0
        self._proc: ManagedProcess | None = None

    @property
    def url(self) -> str:
        """Client URL, e.g. ``http://127.0.0.1:23790``."""
        return f"http://{_LOOPBACK}:{self.client_port}"

    @property
    def process(self) -> ManagedProcess | None:
        """The running etcd process, if started."""
        return self._proc

    async def start(self) -> None:
        """Start etcd and wait until ``/health`` answers 200.

        Raises:
            AssetNotFoundError: No etcd binary (the message says how to install it).
            ControlPlaneError: etcd exited or did not become healthy in time.
        """
        binary = find_binary("etcd")
        self.workdir.mkdir(parents=True, exist_ok=True)
        data = self.workdir / "data"
        self.client_port, self.peer_port = free_port(), free_port()
        peer = f"http://{_LOOPBACK}:{self.peer_port}"
        argv = [
            str(binary),
            f"--name={self.name}",
            f"--data-dir={data}",
            f"--listen-client-urls={self.url}",
            f"--advertise-client-urls={self.url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster={self.name}={peer}",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
            "--quota-backend-bytes=1073741824",
        ]
        self._proc = ManagedProcess(self.name, argv, self.workdir / "etcd.log", detach=self.detach)
        self._proc.start()
        await wait_http_ok(f"{self.url}/health", proc=self._proc, timeout=start_timeout())

    async def stop(self) -> None:
        """Stop etcd (SIGTERM, then SIGKILL after the stop timeout)."""
        if self._proc is not None:
            await self._proc.stop(stop_timeout())

"""The cluster manager replicas of a run: ``cluster-inventory manager run --sharding`` processes.

Each has its own identity (``POD_NAME``), metrics port and log file (JSON lines, in the
temporary directory); a CPU limit (``_cpu_limit``) wraps it from its start when one is given.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from _cpu_limit import CpuLimit

from .scrapes import replica_metrics
from .settings import Settings

CLI = Path(sys.executable).parent / "cluster-inventory"


def replica_name(run: str, k: int) -> str:
    """The ``k``-th replica's name (its ``POD_NAME``) in run ``run``: the run's name and a letter."""
    return f"{run}-{chr(ord('a') + k)}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Replica:
    """One ``manager run --sharding`` process."""

    name: str
    proc: subprocess.Popen[bytes]
    metrics_port: int
    log: Path
    spawned: float  # epoch seconds

    def joined_after(self) -> float:
        """Seconds from spawning to joining its shard group (its log's line), or -1."""
        for line in self.log.read_text(errors="replace").splitlines():
            if "joined as" in line and line.startswith("{"):
                ts = json.loads(line)["ts"]
                return dt.datetime.fromisoformat(ts).timestamp() - self.spawned
        return -1.0

    def metrics(self) -> dict[str, float]:
        """The wanted samples of its /metrics (empty if it is gone), see :func:`replica_metrics`."""
        return replica_metrics(self.metrics_port)

    def tracebacks(self) -> int:
        """How many tracebacks its log holds."""
        return self.log.read_text(errors="replace").count("Traceback")


#: Metric families kept from a replica's /metrics; the last five come with the lead's


def spawn(
    name: str,
    manager: str,
    system: str,
    hub_kubeconfig: str,
    s: Settings,
    limit: CpuLimit | None = None,
    extra: list[str] | None = None,
) -> Replica:
    """Start replica ``name`` of cluster manager ``manager`` (shard group ``manager``) on the hub.

    Registrations and shard Leases in ``system``; the timings from ``s``; ``extra`` more
    arguments of ``manager run``.
    """
    port = free_port()
    spawned = time.time()
    # One file per replica process: two runs on one machine never write into each other's log.
    fd, path = tempfile.mkstemp(prefix=f"fleet-scale-{name}-", suffix=".log")
    os.close(fd)
    log = Path(path)
    argv = [
        str(CLI),
        "manager",
        "run",
        "--kubeconfig",
        hub_kubeconfig,
        "--name",
        manager,
        "--namespace",
        system,
        "--member-namespace",
        "fleet-scale",
        "--sharding",
        "--shard-lease-duration",
        str(s.lease_duration),
        "--shard-renew-interval",
        str(s.renew_interval),
        "--probe-interval",
        str(s.probe_interval),
        "--health-probe-bind-address",
        "0",
        "--metrics-bind-address",
        f"127.0.0.1:{port}",
        "--log-format",
        "json",
        *(extra or ()),
    ]
    proc = subprocess.Popen(
        limit.wrap(name, argv) if limit else argv,
        env={**os.environ, "POD_NAME": name},
        stdout=subprocess.DEVNULL,
        stderr=open(log, "wb"),
    )
    return Replica(name, proc, port, log, spawned)


async def stop(replicas: Iterable[Replica]) -> None:
    """SIGTERM every replica still running, then wait for each (60 s, then SIGKILL)."""
    replicas = list(replicas)
    for rep in replicas:
        if rep.proc.poll() is None:
            rep.proc.send_signal(signal.SIGTERM)
    for rep in replicas:
        try:
            await asyncio.to_thread(rep.proc.wait, 60)
        except subprocess.TimeoutExpired:
            rep.proc.kill()
            await asyncio.to_thread(rep.proc.wait)

"""CPU seconds of named processes, and of the whole machine, between two snapshots, as cores.

Every process of a run is on the same machine (2 cores, shared), so the benchmark shows
where it saturates: the hub, the replicas, the simulated members, itself.
"""

from __future__ import annotations

import os
import time

from _common import cpu_seconds


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, from /proc/stat."""
    with open("/proc/stat") as handle:
        fields = [int(x) for x in handle.readline().split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]
    return (sum(fields) - idle) / hz, sum(fields) / hz


class CpuMeter:
    """CPU seconds of named processes (and the machine) between two snapshots, as cores.

    ``pids`` is read at each snapshot, so a process added to it later (a joining replica)
    is counted from then on."""

    def __init__(self, pids: dict[str, list[int]]) -> None:
        self.pids = pids

    def snapshot(self) -> dict[str, float]:
        out = {}
        for label, pids in list(self.pids.items()):
            total = 0.0
            for pid in pids:
                try:
                    total += cpu_seconds(pid)
                except (FileNotFoundError, ProcessLookupError):
                    pass
            out[label] = total
        out["wall"] = time.perf_counter()
        busy, total = machine_busy()
        out["machine busy"] = busy
        out["machine total"] = total
        return out

    @staticmethod
    def cores(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
        wall = b["wall"] - a["wall"]
        # A process started after ``a`` (a replica) counts from zero.
        out = {
            k: (b[k] - a.get(k, 0.0)) / wall
            for k in b
            if k not in ("wall", "machine busy", "machine total")
        }
        out["machine"] = (
            (os.cpu_count() or 1)
            * (b["machine busy"] - a["machine busy"])
            / max(1e-9, b["machine total"] - a["machine total"])
        )
        return out


def open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0

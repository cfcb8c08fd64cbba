"""A CPU limit per process, as a pod's ``resources.limits.cpu``: to run replicas past capacity.

Three ways, the first this machine allows: a transient systemd scope (``systemd-run --scope
-p CPUQuota=``) when systemd is the init system; else a cgroup v2 directory under
``/sys/fs/cgroup`` with ``cpu.max``; else a cgroup v1 directory under ``/sys/fs/cgroup/cpu``
with ``cpu.cfs_quota_us`` (the kernel's CFS bandwidth control either way, which is what the
kubelet configures for a container's CPU limit). All need root. A process is put in its
directory by a shell that writes its own PID there and then execs the command, so the
command runs limited from its first instruction and keeps the PID the caller knows.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

V2 = Path("/sys/fs/cgroup")
V1 = Path("/sys/fs/cgroup/cpu")
PERIOD_US = 100_000


def limit_kind() -> str:
    """``systemd-run``, ``cgroup2`` or ``cgroup1``; raises SystemExit saying why none works."""
    if Path("/run/systemd/system").is_dir() and shutil.which("systemd-run"):
        return "systemd-run"
    controllers = V2 / "cgroup.controllers"
    if controllers.exists() and "cpu" in controllers.read_text().split() and os.access(V2, os.W_OK):
        return "cgroup2"
    if (V1 / "cpu.cfs_quota_us").exists() and os.access(V1, os.W_OK):
        return "cgroup1"
    raise SystemExit(
        "--cpu-quota: no way to limit CPU here (systemd is not PID 1, no writable cgroup v2 "
        "cpu controller at /sys/fs/cgroup, no writable cgroup v1 cpu hierarchy at "
        "/sys/fs/cgroup/cpu); run a larger --sizes instead to overload the replicas"
    )


class CpuLimit:
    """Each wrapped command in its own limit of ``cores`` CPUs (quota per 100 ms period).

    Args:
        cores: CPUs each process may use (0.5 = 50 ms of CPU per 100 ms); None starts them
            unlimited, to be limited later with :meth:`set` (a squeeze).
        prefix: Name prefix of the cgroup directories (removed by :meth:`remove`).
    """

    def __init__(self, cores: float | None, prefix: str) -> None:
        self.cores = cores
        self.prefix = prefix
        self.kind = limit_kind()
        self.dirs: dict[str, Path] = {}
        self.units: dict[str, str] = {}

    def wrap(self, name: str, argv: list[str]) -> list[str]:
        """``argv`` run inside the limit named ``name`` (one per process)."""
        if self.kind == "systemd-run":
            unit = self.units[name] = f"{self.prefix}-{name}"
            return [
                "systemd-run",
                "--scope",
                "--quiet",
                "--unit",
                unit,
                "-p",
                self._systemd_quota(self.cores),
                "--",
                *argv,
            ]
        if self.kind == "cgroup2":
            (V2 / "cgroup.subtree_control").write_text("+cpu")
            path = V2 / f"{self.prefix}-{name}"
        else:
            path = V1 / f"{self.prefix}-{name}"
            path.mkdir(exist_ok=True)
            (path / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        path.mkdir(exist_ok=True)
        self.dirs[name] = path
        self._write(path, self.cores)
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(path / "cgroup.procs"), *argv]

    def set(self, cores: float | None) -> None:
        """Change every process's limit to ``cores`` CPUs at once (None: no limit).

        The kernel applies a new quota from the next period (100 ms), as when a pod's
        ``limits.cpu`` is resized in place.
        """
        self.cores = cores
        for unit in self.units.values():
            subprocess.run(
                [
                    "systemctl",
                    "set-property",
                    "--runtime",
                    f"{unit}.scope",
                    self._systemd_quota(cores),
                ],
                check=True,
            )
        for path in self.dirs.values():
            self._write(path, cores)

    @staticmethod
    def _systemd_quota(cores: float | None) -> str:
        return "CPUQuota=" + ("" if cores is None else f"{cores * 100:.0f}%")

    def _write(self, path: Path, cores: float | None) -> None:
        quota_us = None if cores is None else max(1000, round(cores * PERIOD_US))
        if self.kind == "cgroup2":
            (path / "cpu.max").write_text(f"{quota_us or 'max'} {PERIOD_US}")
        else:
            (path / "cpu.cfs_quota_us").write_text(str(quota_us or -1))

    def throttled(self) -> dict[str, float]:
        """Seconds each limited process was held back by its quota so far (cgroups only)."""
        out = {}
        for name, path in self.dirs.items():
            stat = dict(line.split() for line in (path / "cpu.stat").read_text().splitlines())
            if "throttled_usec" in stat:
                out[name] = int(stat["throttled_usec"]) / 1e6
            else:
                out[name] = int(stat["throttled_time"]) / 1e9
        return out

    def remove(self) -> list[str]:
        """Remove the directories (their processes have exited); the ones that would not go."""
        left = []
        for path in self.dirs.values():
            try:
                path.rmdir()
            except OSError:
                left.append(str(path))
        self.dirs.clear()
        return left

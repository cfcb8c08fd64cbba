"""Process checks shared by tests: a zombie counts as dead."""

from __future__ import annotations

import time
from pathlib import Path


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def wait_dead(pids: list[int], timeout: float = 15.0) -> list[int]:
    """Wait until none of ``pids`` runs; return those still alive after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


def control_plane_pids() -> set[int]:
    """PIDs of every running etcd, kube-apiserver and kube-controller-manager on the machine."""
    names = {"etcd", "kube-apiserver", "kube-controller"}  # comm is cut at 15 characters
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                comm = (entry / "comm").read_text().strip()
            except OSError:
                continue
            if comm in names and alive(int(entry.name)):
                found.add(int(entry.name))
    return found


#: The environment variable a test sets on a command it runs, so that what the command leaves
#: running is told apart from other runs' processes on a shared machine (the environment is
#: inherited by every process the command starts, and kept after they are re-parented).
RUN_MARK = "CLUSTER_INVENTORY_TEST_RUN"


def started_by(pids: set[int], mark: str) -> set[int]:
    """Those of ``pids`` whose environment has ``RUN_MARK=mark`` (started by that run)."""
    needle = f"{RUN_MARK}={mark}".encode()
    found = set()
    for pid in pids:
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if needle in environ:
            found.add(pid)
    return found


def pids_with_args(*words: str) -> set[int]:
    """PIDs of running processes whose command line contains every one of ``words``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            args = [a.decode(errors="replace") for a in argv]
            if all(w in args for w in words) and alive(int(entry.name)):
                found.add(int(entry.name))
    return found

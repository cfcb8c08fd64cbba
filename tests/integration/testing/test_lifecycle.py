"""No control-plane process or temp dir outlives its owner, however the owner ends."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cluster_inventory.testing import AssetNotFoundError, ControlPlane, Fleet
from tests.support.processes.pids import alive, wait_dead


async def test_stopped_fleet_leaves_no_process_and_no_directory() -> None:
    fleet = Fleet(["solo"], hub_controllers=("namespace",))
    await fleet.start()
    pids = [p.pid for p in fleet.processes if p.pid]
    workdir = fleet.workdir
    assert len(pids) == 4  # etcd, two apiservers, one controller-manager
    assert all(alive(p) for p in pids)
    assert workdir.is_dir()
    await fleet.stop()
    assert wait_dead(pids) == []
    assert not workdir.exists()


def test_sync_facade_starts_and_stops() -> None:
    with ControlPlane("sync") as cp:
        pids = [p.pid for p in cp.processes if p.pid]
        workdir = cp.workdir
        assert (workdir / "kubeconfig").stat().st_mode & 0o777 == 0o600
    assert wait_dead(pids) == []
    assert not workdir.exists()


CHILD = """
import asyncio, os, sys
from cluster_inventory.testing import ControlPlane
async def main():
    cp = ControlPlane("orphan")
    await cp.start()
    print(cp.workdir, " ".join(str(p.pid) for p in cp.processes), flush=True)
    await asyncio.sleep(600)
asyncio.run(main())
"""


def test_processes_die_when_their_owner_is_killed() -> None:
    owner = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    line = owner.stdout.readline()
    workdir, *fields = line.split()
    pids = [int(p) for p in fields]
    assert len(pids) == 2, line
    assert all(alive(p) for p in pids)
    os.kill(owner.pid, signal.SIGKILL)
    owner.wait()
    owner.stdout.close()
    assert wait_dead(pids) == [], "control-plane processes outlived a SIGKILLed owner"
    shutil.rmtree(workdir, ignore_errors=True)  # a SIGKILLed owner cannot clean up files


async def test_start_without_binaries_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for var in list(os.environ):
        if var.startswith("TEST_ASSET_") or var == "KUBEBUILDER_ASSETS":
            monkeypatch.delenv(var)
    monkeypatch.setenv("CLUSTER_INVENTORY_CACHE_DIR", str(tmp_path))
    cp = ControlPlane("nobinaries")
    with pytest.raises(AssetNotFoundError, match="cluster-inventory testing install-assets"):
        await cp.start()
    assert cp.processes == []
    await cp.stop()
    assert not cp.workdir.exists()

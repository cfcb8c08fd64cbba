"""The CLI against real control planes: crds apply and fleet up|down (the demo: test_demo.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cluster_inventory import kube
from cluster_inventory.testing import ControlPlane, find_binary
from tests.support.processes.cli import cli
from tests.support.processes.pids import alive, wait_dead


async def test_crds_apply_installs_every_crd_on_a_bare_cluster() -> None:
    async with ControlPlane("bare") as cp:
        result = cli("crds", "apply", "--kubeconfig", str(cp.kubeconfig_path))
        assert result.returncode == 0, result.stderr
        assert "clusterprofiles.multicluster.x-k8s.io created" in result.stdout
        async with await cp.client() as client:
            listed = await kube.list_objects(client, kube.CLUSTER_PROFILES)
    assert listed["items"] == []


def test_crds_apply_with_a_broken_kubeconfig_fails_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("clusters: [")
    result = cli("crds", "apply", "--kubeconfig", str(bad))
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: {bad}: not valid YAML")
    assert "Traceback" not in result.stderr


def test_fleet_up_keep_stop_and_start_a_member_then_down(tmp_path: Path) -> None:
    env = {"CLUSTER_INVENTORY_CACHE_DIR": str(tmp_path / "cache")}
    # The binaries stay where they are; only the kept fleet's state goes to the temp cache.
    for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kubectl"):
        env["TEST_ASSET_" + name.upper().replace("-", "_")] = str(find_binary(name))
    up = cli("fleet", "up", "--members", "1", "--keep", "--no-controllers", env=env)
    assert up.returncode == 0, up.stderr
    state_file = tmp_path / "cache" / "fleet" / "fleet.json"
    state = json.loads(state_file.read_text())
    pids = state["pids"]
    assert set(state["clusters"]) == {"hub", "member1"}
    assert all(alive(p) for p in pids), "a kept fleet must survive the command that started it"
    hub_kubeconfig = yaml.safe_load(Path(state["clusters"]["hub"]["kubeconfig"]).read_text())
    assert hub_kubeconfig["current-context"] == "hub"
    again = cli("fleet", "up", "--members", "1", "--keep", env=env)
    assert again.returncode == 1
    assert "already runs" in again.stderr
    restarted = _break_and_mend_member1(env, state_file)
    down = cli("fleet", "down", env=env)
    assert down.returncode == 0, down.stderr
    assert wait_dead([*pids, *restarted], timeout=20) == []
    assert not state_file.exists()
    assert cli("fleet", "down", env=env).returncode == 1


def _member1_answers(state_file: Path) -> bool:
    kubeconfig = json.loads(state_file.read_text())["clusters"]["member1"]["kubeconfig"]
    got = subprocess.run(
        [str(find_binary("kubectl")), "--kubeconfig", kubeconfig, "get", "--raw", "/readyz"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return got.returncode == 0 and got.stdout.strip() == "ok"


def _break_and_mend_member1(env: dict[str, str], state_file: Path) -> list[int]:
    """`fleet stop-member` / `start-member` on the kept fleet, graceful and --kill; returns
    the PIDs of the apiservers it started."""
    started: list[int] = []
    for how in ([], ["--kill"]):
        old_pid = json.loads(state_file.read_text())["apiservers"]["member1"]["pid"]
        stop = cli("fleet", "stop-member", "member1", *how, env=env)
        assert stop.returncode == 0, stop.stderr
        assert f"(pid {old_pid})" in stop.stdout
        assert not alive(old_pid)
        assert not _member1_answers(state_file)
        twice = cli("fleet", "stop-member", "member1", env=env)
        assert twice.returncode == 1
        assert twice.stderr.startswith("error: member 'member1': kube-apiserver is not running")
        start = cli("fleet", "start-member", "member1", env=env)
        assert start.returncode == 0, start.stderr
        state = json.loads(state_file.read_text())
        new_pid = state["apiservers"]["member1"]["pid"]
        assert new_pid != old_pid and alive(new_pid)
        assert new_pid in state["pids"] and old_pid not in state["pids"]
        started.append(new_pid)
        assert _member1_answers(state_file), "start-member must wait until /readyz is ok"
    running = cli("fleet", "start-member", "member1", env=env)
    assert running.returncode == 1
    assert "already runs" in running.stderr
    for name in ("nosuch", "hub"):
        unknown = cli("fleet", "stop-member", name, env=env)
        assert unknown.returncode == 1
        assert unknown.stderr == f"error: no member {name!r} in the kept fleet; members: member1\n"
    return started


@pytest.mark.parametrize("args", [("version",), ("crds", "print")])
def test_cli_runs_as_a_module(args: tuple[str, ...]) -> None:
    result = cli(*args)
    assert result.returncode == 0, result.stderr
    assert result.stdout


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_fleet_up_runs_until_signalled_then_cleans_up(stop_signal: int) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cluster_inventory.cli",
            "fleet",
            "up",
            "--members",
            "1",
            "--no-controllers",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    header = proc.stdout.readline()
    assert header.split() == ["CLUSTER", "ROLE", "SERVER", "KUBECONFIG"]
    rows = [proc.stdout.readline().split() for _ in range(2)]
    kubeconfig = Path(rows[0][3])
    assert kubeconfig.exists()
    pids = children_of(proc.pid)
    assert len(pids) == 3  # etcd and two apiservers
    proc.send_signal(stop_signal)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert wait_dead(pids) == []
    assert not kubeconfig.exists()

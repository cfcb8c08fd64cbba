"""The manager as a process: leader election between replicas, endpoints, the CLI."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
import yaml
from prometheus_client import CollectorRegistry

from cluster_inventory import kube
from cluster_inventory.api.constants import LABEL_CLUSTER_SET
from cluster_inventory.kube.leaderelection import LeaderElectionConfig
from cluster_inventory.manager import ManagerConfig, registration_secret, run_manager
from cluster_inventory.manager.runner import lease_name
from cluster_inventory.testing import free_port
from tests.support.waiting import eventually

CLI = Path(sys.executable).parent / "cluster-inventory"


async def _setup(fleet, test_namespace: str) -> str:
    inventory = f"{test_namespace}-inv"[:63]
    async with await fleet.hub.client() as hub:
        await kube.apply(
            hub,
            kube.NAMESPACES,
            {"metadata": {"name": inventory, "labels": {LABEL_CLUSTER_SET: "prod"}}},
            field_manager="test",
        )
        member = next(iter(fleet.members.values()))
        secret = registration_secret(
            "alpha", test_namespace, yaml.safe_dump(member.kubeconfig()), ["prod"]
        )
        await kube.apply(hub, kube.SECRETS, secret, field_manager="test")
    return inventory


async def _lease_holder(
    hub: kube.ApiClient, ns: str, name: str = "cluster-inventory-manager"
) -> str:
    lease = await kube.get(hub, kube.LEASES, name, namespace=ns)
    return lease["spec"].get("holderIdentity") or ""


async def test_two_replicas_elect_one_leader_and_fail_over(fleet, test_namespace) -> None:
    inventory = await _setup(fleet, test_namespace)
    config = ManagerConfig(
        name="le-" + test_namespace[-8:],
        namespace=test_namespace,
        member_namespace=test_namespace,
        probe_interval=0.5,
    )
    lease = dict(
        namespace=test_namespace,
        name="cluster-inventory-manager",
        # Generous: on a busy 2-core CI machine a 3 s renew deadline was missed, the leader
        # stepped down as it must, and its endpoints closed under the test.
        lease_duration=10,
        renew_deadline=8,
        retry_period=0.5,
    )
    ports = {ident: free_port() for ident in ("one", "two")}
    tasks = {
        ident: asyncio.get_running_loop().create_task(
            run_manager(
                fleet.hub.connection(),
                config,
                identity=ident,
                lease=LeaderElectionConfig(identity=ident, **lease),
                health_address=("127.0.0.1", ports[ident]),
                metrics_address=None,
                registry=CollectorRegistry(),
            )
        )
        for ident in ("one", "two")
    }
    try:
        async with await fleet.hub.client() as hub, aiohttp.ClientSession() as http:
            leader = await eventually(lambda: _lease_holder(hub, test_namespace), what="a leader")
            follower = "two" if leader == "one" else "one"
            await eventually(lambda: _profile_exists(hub, inventory), what="profile by the leader")
            for ident in ("one", "two"):  # both replicas are ready: leader synced, standby waiting
                assert not tasks[ident].done(), f"replica {ident} stopped: {tasks[ident]!r}"

                async def ready(port: int = ports[ident]) -> bool:
                    # The standby lists its caches beside the leader; it may finish later.
                    async with http.get(f"http://127.0.0.1:{port}/readyz") as resp:
                        return resp.status == 200

                await eventually(ready, timeout=10, what=f"replica {ident} ready")
            await asyncio.sleep(1.5)
            assert await _lease_holder(hub, test_namespace) == leader
            tasks[leader].cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await tasks[leader]
            await eventually(
                lambda: _holder_is(hub, test_namespace, follower), timeout=30, what="failover"
            )
            await kube.delete(hub, kube.CLUSTER_PROFILES, "alpha", namespace=inventory)
            await eventually(
                lambda: _profile_exists(hub, inventory), what="new leader recreates the profile"
            )
            await kube.delete(hub, kube.NAMESPACES, inventory)
    finally:
        for task in tasks.values():
            task.cancel()
        for task in tasks.values():
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def _holder_is(hub, ns, ident) -> bool:
    return await _lease_holder(hub, ns) == ident


async def _profile_exists(hub, ns) -> bool:
    try:
        await kube.get(hub, kube.CLUSTER_PROFILES, "alpha", namespace=ns)
    except kube.NotFoundError:
        return False
    return True


async def test_cli_register_run_and_deregister(fleet, test_namespace, tmp_path) -> None:
    inventory = f"{test_namespace}-inv"[:63]
    hub_kc = str(fleet.hub.kubeconfig_path)
    member = next(iter(fleet.members.values()))
    member_kc = tmp_path / "member.kubeconfig"
    member_kc.write_text(yaml.safe_dump(member.kubeconfig()))
    async with await fleet.hub.client() as hub:
        await kube.apply(
            hub,
            kube.NAMESPACES,
            {"metadata": {"name": inventory, "labels": {LABEL_CLUSTER_SET: "blue"}}},
            field_manager="test",
        )
    common = ["--hub-kubeconfig", hub_kc, "-n", test_namespace]
    done = await asyncio.to_thread(
        subprocess.run,
        [
            str(CLI),
            "register",
            "alpha",
            "--kubeconfig",
            str(member_kc),
            "--clusterset",
            "blue",
            *common,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    bad = await asyncio.to_thread(
        subprocess.run,
        [
            str(CLI),
            "register",
            "beta",
            "--kubeconfig",
            str(tmp_path / "absent"),
            "--clusterset",
            "blue",
            *common,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 1 and "absent" in bad.stderr and "Traceback" not in bad.stderr
    health, metrics = free_port(), free_port()
    proc = subprocess.Popen(  # noqa: ASYNC220 - a child process that outlives this call
        [
            str(CLI),
            "manager",
            "run",
            "--kubeconfig",
            hub_kc,
            "--namespace",
            test_namespace,
            "--member-namespace",
            test_namespace,
            "--name",
            "cli-" + test_namespace[-8:],
            "--health-probe-bind-address",
            f"127.0.0.1:{health}",
            "--metrics-bind-address",
            f"127.0.0.1:{metrics}",
            "--probe-interval",
            "0.5",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        async with await fleet.hub.client() as hub, aiohttp.ClientSession() as http:
            await eventually(
                lambda: _healthy(hub, inventory),
                timeout=30,
                what="profile healthy via the CLI manager",
            )
            async with http.get(f"http://127.0.0.1:{health}/healthz") as resp:
                assert resp.status == 200
            async with http.get(f"http://127.0.0.1:{metrics}/metrics") as resp:
                text = await resp.text()
            assert "controller_runtime_reconcile_total" in text
            assert "leader_election_master_status" in text
            gone = await asyncio.to_thread(
                subprocess.run,
                [str(CLI), "deregister", "alpha", *common],
                capture_output=True,
                text=True,
                check=False,
            )
            assert gone.returncode == 0, gone.stderr
            await eventually(
                lambda: _not_exists(hub, inventory), what="profile removed after deregister"
            )
            await kube.delete(hub, kube.NAMESPACES, inventory)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)
    assert proc.returncode == 0, stderr[-2000:]
    assert "created profile" in stderr
    async with await fleet.hub.client() as hub:
        # released on SIGTERM; a manager named other than cluster-inventory has its own Lease
        released = await _lease_holder(
            hub, test_namespace, lease_name("cli-" + test_namespace[-8:])
        )
        assert released == ""


async def _healthy(hub, ns) -> bool:
    try:
        profile = await kube.get(hub, kube.CLUSTER_PROFILES, "alpha", namespace=ns)
    except kube.NotFoundError:
        return False
    conds = (profile.get("status") or {}).get("conditions") or []
    return any(c["type"] == "ControlPlaneHealthy" and c["status"] == "True" for c in conds)


async def _not_exists(hub, ns) -> bool:
    return not await _profile_exists(hub, ns)

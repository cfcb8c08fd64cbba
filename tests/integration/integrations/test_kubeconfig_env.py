"""Every long-running command finds its hub as kubectl does, and stops at once on SIGTERM.

Started with nothing but ``$KUBECONFIG`` (a list whose first file does not exist, as a
user's often names a file that is not there yet), ``manager run``, ``argocd sync`` and
``multikueue sync`` read the hub from the list, become ready, and exit 0 soon after SIGTERM
even while a member hangs (the manager probes one that accepts and never answers).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import aiohttp
import yaml

from cluster_inventory import kube
from cluster_inventory.api.constants import LABEL_CLUSTER_SET
from cluster_inventory.manager import registration_secret
from cluster_inventory.testing import free_port
from cluster_inventory_workshop.upstream_crds import kueue_crds
from tests.support.hub.inventory import Inventory
from tests.support.network.tarpit import serve_tarpit
from tests.support.waiting import eventually

#: Well under Kubernetes' 30 s grace period, generous for a loaded 2-core machine: the
#: process is expected to be gone within about 5 s of SIGTERM.
STOP_TIMEOUT = 15.0


async def _ready(port: int) -> bool:
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{port}/readyz") as response,
        ):
            return response.status == 200
    except aiohttp.ClientError:
        return False


def _environment(inventory: Inventory, tmp_path: Path) -> dict[str, str]:
    hub = str(inventory.fleet.hub.kubeconfig_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_SERVICE")}
    env["KUBECONFIG"] = os.pathsep.join([str(tmp_path / "not-there-yet.yaml"), hub])
    env["HOME"] = str(tmp_path)  # no ~/.kube/config to fall back on
    return env


async def _run_until_ready_then_sigterm(
    args: list[str], env: dict[str, str], health: int, busy: Callable[[], object] | None = None
) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cluster_inventory.cli", *args,
        f"--health-probe-bind-address=127.0.0.1:{health}", "--metrics-bind-address=0",
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:

        async def ready() -> bool:
            if process.returncode is not None:
                raise AssertionError(f"exited with {process.returncode}")
            return await _ready(health)

        await eventually(ready, timeout=60, what="/readyz")
        if busy is not None:
            await eventually(busy, timeout=60, what="the process to be at work")
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        try:
            _, err = await asyncio.wait_for(process.communicate(), STOP_TIMEOUT)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise AssertionError(f"still running {STOP_TIMEOUT} s after SIGTERM") from None
    log = err.decode()
    assert process.returncode == 0, log[-3000:]
    assert "Unclosed" not in log and "Traceback" not in log, log[-3000:]


async def test_argocd_sync_with_only_kubeconfig_set(inventory: Inventory, tmp_path: Path) -> None:
    ns = inventory.namespace
    argo = await inventory.namespace_for("argocd")
    await inventory.publish("c1", inventory.member(0))

    async def written() -> bool:
        try:
            return bool(await kube.get(inventory.hub, kube.SECRETS, f"cluster-{ns}-c1", argo))
        except kube.NotFoundError:
            return False

    # Ready (caches listed) comes before the first write: stop it once it wrote.
    await _run_until_ready_then_sigterm(
        ["argocd", "sync", "--provider-file", str(inventory.provider_file), "-n", ns,
         "--argocd-namespace", argo],
        _environment(inventory, tmp_path),
        free_port(),
        busy=written,
    )  # fmt: skip
    assert await kube.get(inventory.hub, kube.SECRETS, f"cluster-{ns}-c1", argo)


async def test_multikueue_sync_with_only_kubeconfig_set(
    inventory: Inventory, tmp_path: Path
) -> None:
    await kube.ensure_crds(inventory.hub, await asyncio.to_thread(kueue_crds))
    ns = inventory.namespace
    await _run_until_ready_then_sigterm(
        ["multikueue", "sync", "--kueue-namespace", ns, "--lease-namespace", ns],
        _environment(inventory, tmp_path),
        free_port(),
    )


async def test_manager_run_with_only_kubeconfig_set_stops_while_a_member_hangs(
    inventory: Inventory, tmp_path: Path
) -> None:
    ns = inventory.namespace
    team = await inventory.namespace_for("inv")
    await kube.apply(
        inventory.hub,
        kube.NAMESPACES,
        {"metadata": {"name": team, "labels": {LABEL_CLUSTER_SET: "prod"}}},
        field_manager="test",
    )
    async with serve_tarpit() as tarpit:
        member = inventory.member(0).kubeconfig()
        member["clusters"][0]["cluster"]["server"] = tarpit.server
        await kube.apply(
            inventory.hub,
            kube.SECRETS,
            registration_secret("hung", ns, yaml.safe_dump(member), ["prod"]),
            field_manager="test",
        )
        await _run_until_ready_then_sigterm(
            ["manager", "run", "--namespace", ns, "--member-namespace", ns,
             "--name", "env-" + ns[-8:], "--probe-interval", "0.5"],
            _environment(inventory, tmp_path),
            free_port(),
            busy=lambda: tarpit.connections,  # the member is being probed when SIGTERM comes
        )  # fmt: skip

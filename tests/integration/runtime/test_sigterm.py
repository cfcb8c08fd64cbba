"""A runtime process stops at once on SIGTERM, whatever its members do, and leaves no mess.

Kubernetes gives a Pod 30 s (``terminationGracePeriodSeconds``) between SIGTERM and SIGKILL;
controller-runtime's manager stops within that whatever its clusters do. Here a member that
accepts connections and never answers (a tarpit: the worst kind of unreachable, where every
TLS handshake and LIST hangs) is being engaged when SIGTERM arrives.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

from cluster_inventory import kube
from tests.support.hub.inventory import Inventory
from tests.support.network.tarpit import serve_tarpit
from tests.support.waiting import eventually

EXAMPLE = Path(__file__).parents[3] / "examples" / "fleet_configmap_sync.py"
#: Well under the 30 s grace period and the runtime's 30 s cache sync timeout, and generous
#: for a loaded 2-core machine: the process is expected to be gone within about 5 s.
STOP_TIMEOUT = 15.0


async def test_runtime_example_exits_at_once_on_sigterm_while_a_member_hangs(
    inventory: Inventory,
) -> None:
    ns = inventory.namespace
    await kube.apply(
        inventory.hub,
        kube.CONFIG_MAPS,
        {"metadata": {"name": "fleet-settings", "namespace": ns}, "data": {"color": "blue"}},
        field_manager="test",
    )
    async with serve_tarpit() as tarpit:
        await inventory.publish("good", inventory.member(0))
        await inventory.publish("hung", inventory.member(1))
        await inventory.patch_status(
            "hung",
            {
                "accessProviders": [
                    {
                        "name": "secretreader",
                        "cluster": {
                            "server": tarpit.server,
                            "extensions": [
                                {
                                    "name": "client.authentication.k8s.io/exec",
                                    "extension": {"clusterName": "hung"},
                                }
                            ],
                        },
                    }
                ]
            },
        )
        process = await asyncio.create_subprocess_exec(
            sys.executable, str(EXAMPLE), "--provider-file", str(inventory.provider_file),
            "--hub-kubeconfig", str(inventory.fleet.hub.kubeconfig_path),
            "--inventory-namespace", ns, "--source", f"{ns}/fleet-settings",
            "--target-namespace", ns,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:

            async def copied() -> bool:
                async with await inventory.member(0).client() as admin:
                    try:
                        await kube.get(admin, kube.CONFIG_MAPS, "fleet-settings", ns)
                    except kube.NotFoundError:
                        return False
                return True

            await eventually(copied, timeout=60, what="the copy on the reachable member")
            await eventually(lambda: tarpit.connections, timeout=30, what="a hung connection")
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
    assert "Unclosed" not in log, log[-3000:]
    assert "Traceback" not in log, log[-3000:]

"""The dashboard beyond loopback (a warning, ``--allowed-host``) and long condition messages.

Issue 32: ``dashboard --address 0.0.0.0:PORT`` said nothing and then answered any ``Host``
(a page elsewhere could read the inventory through DNS rebinding), and a 5,000-character
condition message filled several screens of the member table.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys

import aiohttp
import pytest

from cluster_inventory.dashboard import Dashboard, HubState
from cluster_inventory.dashboard.server import MESSAGE_CUT
from cluster_inventory.testing import Fleet
from tests.support.hub.inventory import Inventory


async def _status(url: str, host: str) -> int:
    async with aiohttp.ClientSession() as http, http.get(url, headers={"Host": host}) as answer:
        return answer.status


async def test_beyond_loopback_only_the_allowed_hosts_are_answered(
    fleet: Fleet, inventory: Inventory, caplog: pytest.LogCaptureFixture
) -> None:
    state = HubState(inventory.hub, [inventory.namespace])
    dashboard = Dashboard(
        state, address=("0.0.0.0", 0), allowed_hosts=("Dash.Example.com:443", "10.1.2.3")
    )
    with caplog.at_level(logging.WARNING, logger="cluster_inventory.dashboard.server"):
        async with dashboard.serve() as url:
            local = url.replace("0.0.0.0", "127.0.0.1")
            assert await _status(local, "dash.example.com") == 200
            assert await _status(local, "dash.example.com:8080") == 200
            assert await _status(local + "content", "10.1.2.3") == 200
            assert await _status(local, "evil.example.net") == 421
            assert await _status(local + "content", "127.0.0.1") == 421
            # Probes answer any name: the kubelet asks by the Pod's IP.
            assert await _status(local + "healthz", "10.9.9.9") == 200
    (warning,) = [r.getMessage() for r in caplog.records if "beyond loopback" in r.getMessage()]
    assert "it answers only for 10.1.2.3, dash.example.com" in warning


async def test_beyond_loopback_without_allowed_hosts_warns_that_any_host_is_answered(
    fleet: Fleet, inventory: Inventory, caplog: pytest.LogCaptureFixture
) -> None:
    state = HubState(inventory.hub, [inventory.namespace])
    with caplog.at_level(logging.WARNING, logger="cluster_inventory.dashboard.server"):
        async with Dashboard(state, address=("0.0.0.0", 0)).serve() as url:
            assert await _status(url.replace("0.0.0.0", "127.0.0.1"), "anything.example") == 200
    (warning,) = [r.getMessage() for r in caplog.records if "beyond loopback" in r.getMessage()]
    assert "answers for any host name: give --allowed-host NAME" in warning


async def test_on_loopback_the_allowed_hosts_join_the_loopback_names(
    fleet: Fleet, inventory: Inventory, caplog: pytest.LogCaptureFixture
) -> None:
    state = HubState(inventory.hub, [inventory.namespace])
    with caplog.at_level(logging.WARNING, logger="cluster_inventory.dashboard.server"):
        async with Dashboard(
            state, address=("127.0.0.1", 0), allowed_hosts=("dash.internal",)
        ).serve() as url:
            assert await _status(url, "localhost") == 200
            assert await _status(url, "dash.internal") == 200
            assert await _status(url, "evil.example.net") == 421
    assert not [r for r in caplog.records if "beyond loopback" in r.getMessage()]


async def test_the_command_warns_when_bound_beyond_loopback(fleet: Fleet) -> None:
    env = {**os.environ, "KUBECONFIG": str(fleet.hub.kubeconfig_path)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cluster_inventory.cli", "dashboard",
        "--address", "0.0.0.0:0", "--allowed-host", "dash.example.com",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 120)).decode()
        assert line.startswith("dashboard: http://0.0.0.0:"), line
        port = line.strip().rsplit(":", 1)[1].rstrip("/")
        assert await _status(f"http://127.0.0.1:{port}/", "dash.example.com") == 200
        assert await _status(f"http://127.0.0.1:{port}/", "127.0.0.1") == 421
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()[-2000:]
    warnings = [x for x in err.decode().splitlines() if "beyond loopback" in x]
    assert len(warnings) == 1, err.decode()[-2000:]
    assert "dash.example.com" in warnings[0]


async def test_a_long_condition_message_is_cut_in_the_member_table(
    inventory: Inventory, serve
) -> None:
    await inventory.publish("long", inventory.member(0), healthy=False)
    message = "".join(f"check-{i:04d} failed; " for i in range(300))  # ~5,400 characters
    await inventory.patch_status(
        "long",
        {
            "conditions": [
                {
                    "type": "ControlPlaneHealthy",
                    "status": "False",
                    "reason": "ReadyzCheckFailed",
                    "message": message,
                    "lastTransitionTime": "2026-11-23T00:00:00Z",
                }
            ]
        },
    )
    async with serve([inventory.namespace]) as url, aiohttp.ClientSession() as http:
        async with http.get(url + "content") as answer:
            html = await answer.text()
    cell = html[html.index('<div class="cond False">') :]
    cell = cell[: cell.index("</div>")]
    shown, _, rest = cell.partition("<summary>")[2].partition("</summary>")
    assert shown == message[:MESSAGE_CUT]
    # The whole message is there, behind a click (<details>): nothing is lost.
    assert rest.removesuffix("</details>") == message[MESSAGE_CUT:]
    assert '<details class="message">' in cell

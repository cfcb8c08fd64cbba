"""``cluster-inventory agent run`` as a user runs it: reports until SIGTERM, then exits 0."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from cluster_inventory.testing import free_port
from tests.support.hub.agents import Accepted
from tests.support.waiting import eventually

CLI = Path(sys.executable).parent / "cluster-inventory"


def _kubeconfigs(accepted: Accepted, fleet: Any, tmp_path: Path) -> tuple[Path, Path]:
    hub = tmp_path / "hub.yaml"
    hub.write_text(yaml.safe_dump(fleet.hub.kubeconfig(accepted.user, accepted.groups)))
    member = tmp_path / "member.yaml"
    member.write_text(yaml.safe_dump(accepted.member.kubeconfig()))
    return hub, member


async def test_agent_run_reports_until_sigterm(accepted: Accepted, fleet, tmp_path: Path) -> None:
    hub, member = _kubeconfigs(accepted, fleet, tmp_path)
    ca = tmp_path / "ca.pem"
    ca.write_bytes(accepted.member.ca_pem)
    health, metrics = free_port(), free_port()
    proc = subprocess.Popen(  # noqa: ASYNC220 - a child process that outlives this call
        [
            str(CLI), "agent", "run",
            "--name", accepted.name,
            "--hub-kubeconfig", str(hub),
            "--kubeconfig", str(member),
            "--namespace", accepted.namespace,
            "--server", accepted.member.server,
            "--ca-file", str(ca),
            "--lease-duration", "1",
            "--probe-interval", "0.5",
            "--health-probe-bind-address", f"127.0.0.1:{health}",
            "--metrics-bind-address", f"127.0.0.1:{metrics}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        first = (await accepted.lease())["spec"].get("renewTime")

        async def reported() -> bool:
            status = (await accepted.report()).get("status") or {}
            health = (status.get("apiServerHealth") or {}).get("status")
            return bool(status.get("memberID")) and health == "True"

        async def renewed() -> bool:
            return (await accepted.lease())["spec"].get("renewTime") != first

        await eventually(reported, timeout=30, what="the CLI agent's report")
        await eventually(renewed, timeout=30, what="the CLI agent's heartbeat")
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{health}/readyz") as resp:
                assert resp.status == 200
            async with http.get(f"http://127.0.0.1:{metrics}/metrics") as resp:
                text = await resp.text()
        assert 'cluster_inventory_lease_renewal_lateness_seconds_count{lease="agent"}' in text
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)
    assert proc.returncode == 0, stderr[-2000:]
    assert "Traceback" not in stderr
    status = (await accepted.report())["status"]
    assert status["server"] == accepted.member.server

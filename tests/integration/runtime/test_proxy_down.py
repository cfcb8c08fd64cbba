"""A member behind a ``proxy-url`` that is down is an unreachable member, SOCKS5 or HTTP.

Issue 32: with a SOCKS5 proxy down, ``apply`` printed a traceback (aiohttp-socks raises its
own ``ProxyConnectionError``, neither ``OSError`` nor aiohttp's) and the runtime waited 30 s
for caches that could never fill; with an HTTP proxy down both said ``unreachable`` at once.
Each test runs both schemes and asks for the same outcome.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from cluster_inventory.runtime import EngagedCluster, Request
from cluster_inventory.testing import free_port
from tests.support.data.provider_files import PLUGIN
from tests.support.hub.inventory import Inventory
from tests.support.network.proxies import (
    hostport,
    hub_kubeconfig_behind,
    publish_behind,
    serve_proxy,
)
from tests.support.processes.cli import cli
from tests.support.waiting import eventually

SCHEMES = ["socks5", "http"]


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_apply_says_unreachable_for_a_member_behind_a_proxy_that_is_down(
    inventory: Inventory, tmp_path: Path, scheme: str
) -> None:
    ns, member = inventory.namespace, inventory.member(0)
    down = f"{scheme}://127.0.0.1:{free_port()}"
    await publish_behind(inventory, "c1", member, down)
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    )
    applied = await asyncio.to_thread(
        cli, "apply", "-f", str(manifest), "--profile", "c1", "-n", ns,
        "--member-namespace", ns, "--provider-file", str(inventory.provider_file),
        "--kubeconfig", str(inventory.fleet.hub.kubeconfig_path),
    )  # fmt: skip
    assert "Traceback" not in applied.stderr, applied.stderr[-3000:]
    assert applied.returncode == 1, applied.stderr
    (row,) = [line for line in applied.stdout.splitlines() if "configmap/x" in line]
    assert f"{ns}/c1" in row and f"{member.server} unreachable" in row, row


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_the_runtime_says_unreachable_and_engages_once_the_proxy_is_back(
    inventory: Inventory, fleet_manager, scheme: str, caplog: pytest.LogCaptureFixture
) -> None:
    ns, member = inventory.namespace, inventory.member(0)
    port = free_port()
    seen: list[Request] = []
    fm = fleet_manager()

    @fm.reconciler("v1/ServiceAccount", namespace=ns)
    async def reconcile(request: Request, cluster: EngagedCluster) -> None:
        seen.append(request)

    caplog.set_level(logging.INFO, logger="cluster_inventory")
    await fm.start()
    await publish_behind(inventory, "c1", member, f"{scheme}://127.0.0.1:{port}")

    def said_unreachable() -> list[str]:
        return [
            r.getMessage()
            for r in caplog.records
            if r.levelno >= logging.WARNING and f"{member.server} unreachable" in r.getMessage()
        ]

    said = await eventually(said_unreachable, timeout=60, what="a warning naming the member")
    assert not any("did not sync" in m or "Traceback" in m for m in said), said
    assert f"{ns}/c1" not in fm.clusters
    async with serve_proxy(scheme, port=port) as proxy:
        await eventually(lambda: f"{ns}/c1" in fm.clusters, timeout=60, what="engagement")
        await eventually(lambda: seen, timeout=30, what="a reconcile on the member")
        assert hostport(member.server) in proxy.targets
        await fm.stop()


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_get_says_unreachable_for_a_hub_behind_a_proxy_that_is_down(
    inventory: Inventory, tmp_path: Path, scheme: str
) -> None:
    down = f"{scheme}://127.0.0.1:{free_port()}"
    config = hub_kubeconfig_behind(inventory, down, tmp_path / "hub.yaml")
    got = await asyncio.to_thread(
        cli, "get", "-n", inventory.namespace, "--kubeconfig", str(config)
    )
    assert got.returncode == 1, got.stderr
    lines = got.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), got.stderr[-3000:]
    assert f"{inventory.fleet.hub.server} unreachable" in lines[0]
    assert "127.0.0.1" in lines[0]


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_the_plugin_says_the_hub_is_unreachable_through_a_proxy_that_is_down(
    inventory: Inventory, tmp_path: Path, scheme: str
) -> None:
    """The exec plugin reads the token through the hub's proxy-url: one line on failure."""
    config = hub_kubeconfig_behind(
        inventory, f"{scheme}://127.0.0.1:{free_port()}", tmp_path / "hub.yaml"
    )
    info = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "spec": {"cluster": {"server": "https://m", "config": {"clusterName": "c1"}}},
    }
    ran = await asyncio.to_thread(
        subprocess.run,
        [str(PLUGIN), "--namespace", inventory.namespace],
        capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL,
        env={**os.environ, "KUBECONFIG": str(config), "KUBERNETES_EXEC_INFO": json.dumps(info)},
    )  # fmt: skip
    assert ran.returncode != 0
    assert ran.stdout == ""
    (line,) = ran.stderr.splitlines()
    assert "Traceback" not in ran.stderr
    assert inventory.fleet.hub.server.removeprefix("https://") in line or "proxy" in line, line

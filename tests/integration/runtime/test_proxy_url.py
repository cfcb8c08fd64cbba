"""``proxy-url`` (socks5 and http) through every consumer: apply, the runtime, ``kubeconfig``.

A profile's access provider may name a proxy (KEP-4322 v1alpha2 allows http, https and
socks5), and so may the hub's own kubeconfig. Each test runs a proxy on loopback that records
the tunnels it opened: a consumer that went around the proxy leaves it empty.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from cluster_inventory import credentials, kube
from cluster_inventory.runtime import EngagedCluster, Request
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
async def test_apply_reaches_the_member_through_the_proxy_url(
    inventory: Inventory, tmp_path: Path, scheme: str
) -> None:
    ns, member = inventory.namespace, inventory.member(0)
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "via"}})
    )
    async with serve_proxy(scheme) as proxy:
        await publish_behind(inventory, "c1", member, proxy.url)
        applied = await asyncio.to_thread(
            cli, "apply", "-f", str(manifest), "--profile", "c1", "-n", ns,
            "--member-namespace", ns, "--provider-file", str(inventory.provider_file),
            "--kubeconfig", str(inventory.fleet.hub.kubeconfig_path),
        )  # fmt: skip
    assert applied.returncode == 0, applied.stderr
    assert "created" in applied.stdout
    assert hostport(member.server) in proxy.targets
    async with await member.client() as admin:
        assert await kube.get(admin, kube.CONFIG_MAPS, "via", ns)


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_the_runtime_engages_and_reconciles_through_the_proxy_url(
    inventory: Inventory, fleet_manager, scheme: str
) -> None:
    ns, member = inventory.namespace, inventory.member(0)
    seen: list[Request] = []
    fm = fleet_manager()

    @fm.reconciler("v1/ServiceAccount", namespace=ns)
    async def reconcile(request: Request, cluster: EngagedCluster) -> None:
        await kube.get(cluster.client, kube.SERVICE_ACCOUNTS, request.name, ns)  # a live read
        seen.append(request)

    async with serve_proxy(scheme) as proxy:
        await fm.start()
        await publish_behind(inventory, "c1", member, proxy.url)
        await eventually(lambda: f"{ns}/c1" in fm.clusters, timeout=30, what="engagement")
        await eventually(lambda: seen, timeout=30, what="a reconcile on the member")
        assert hostport(member.server) in proxy.targets
        await fm.stop()


async def test_kubeconfig_command_reaches_hub_and_member_through_their_proxies(
    inventory: Inventory, tmp_path: Path
) -> None:
    ns, member = inventory.namespace, inventory.member(0)
    hub_server = inventory.fleet.hub.server
    async with serve_proxy("socks5") as hub_proxy, serve_proxy("http") as member_proxy:
        hub_config = hub_kubeconfig_behind(inventory, hub_proxy.url, tmp_path / "hub.yaml")
        await publish_behind(inventory, "c1", member, member_proxy.url)
        out = tmp_path / "member.yaml"
        made = await asyncio.to_thread(
            cli, "kubeconfig", "c1", "-n", ns, "--kubeconfig", str(hub_config), "-o", str(out)
        )
        assert made.returncode == 0, made.stderr
        assert hostport(hub_server) in hub_proxy.targets  # the command read the profile so
        written = yaml.safe_load(out.read_text())
        assert written["clusters"][0]["cluster"]["proxy-url"] == member_proxy.url
        hub_proxy.targets.clear()

        # The kubeconfig works as written: its exec user (our plugin) reads the token on the
        # hub through the hub's proxy, and the member is reached through the member's.
        connection = kube.load_connection(out)
        async with await credentials.hub_client(connection) as client:
            listed = await kube.list_objects(client, kube.SERVICE_ACCOUNTS, ns)
        assert listed["items"]
        assert hostport(hub_server) in hub_proxy.targets
        assert hostport(member.server) in member_proxy.targets


async def test_argocd_render_reads_the_hub_through_its_proxy_and_keeps_the_proxy_url(
    inventory: Inventory, tmp_path: Path
) -> None:
    ns, member = inventory.namespace, inventory.member(0)
    async with serve_proxy("socks5") as hub_proxy:
        hub_config = hub_kubeconfig_behind(inventory, hub_proxy.url, tmp_path / "hub.yaml")
        await publish_behind(inventory, "c1", member, "socks5://proxy.example:1080")
        rendered = await asyncio.to_thread(
            cli, "argocd", "render", "c1", "-n", ns, "--provider-file",
            str(inventory.provider_file), "--kubeconfig", str(hub_config), "--decoded",
        )  # fmt: skip
    assert rendered.returncode == 0, rendered.stderr
    assert hostport(inventory.fleet.hub.server) in hub_proxy.targets
    config = json.loads(yaml.safe_load(rendered.stdout)["stringData"]["config"])
    assert config["proxyUrl"] == "socks5://proxy.example:1080"


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_the_httpx_client_goes_through_the_proxy_url(
    inventory: Inventory, scheme: str
) -> None:
    ns, member = inventory.namespace, inventory.member(0)
    async with serve_proxy(scheme) as proxy:
        await publish_behind(inventory, "c1", member, proxy.url)
        profile = await kube.get(inventory.hub, kube.CLUSTER_PROFILES, "c1", ns)
        async with credentials.httpx_client(profile, inventory.provider_file) as client:
            response = await client.get(f"/api/v1/namespaces/{ns}/serviceaccounts")
        assert response.status_code == 200, response.text
        assert hostport(member.server) in proxy.targets

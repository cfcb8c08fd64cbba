"""Virtual members: one proxy, many member identities, a real kube-apiserver behind each request."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from cluster_inventory import kube
from cluster_inventory.kube.informer import Informer
from cluster_inventory.testing import Fleet, find_binary
from cluster_inventory_workshop import LABEL_VIRTUAL_MEMBER, VirtualMembers, member_id
from tests.support.data.provider_files import PLUGIN
from tests.support.processes.cli import cli
from tests.support.waiting import eventually


async def test_each_virtual_member_reports_its_own_member_id(
    virtual_members: VirtualMembers, fleet: Fleet
) -> None:
    vm = virtual_members
    real = len(fleet.members)
    seen = {}
    for n in (0, real, 1):  # 0 and `real` share one real member
        async with await vm.client(n) as client:
            seen[n] = (await kube.get(client, kube.NAMESPACES, "kube-system"))["metadata"]["uid"]
            # Everything else is the real apiserver's answer, unchanged.
            default = await kube.get(client, kube.NAMESPACES, "default")
        async with await vm.real(n).client() as admin:
            assert default == await kube.get(admin, kube.NAMESPACES, "default")
            real_uid = (await kube.get(admin, kube.NAMESPACES, "kube-system"))["metadata"]["uid"]
        assert seen[n] == member_id(n) == vm.member_id(n) != real_uid
    assert len(set(seen.values())) == 3
    assert vm.real(0) is vm.real(real)


async def test_requests_are_authenticated_and_answered_by_the_real_apiserver(
    virtual_members: VirtualMembers, test_namespace: str
) -> None:
    vm = virtual_members
    async with await vm.client(3) as client:
        await kube.create(
            client,
            kube.CONFIG_MAPS,
            {"metadata": {"name": "through-the-proxy", "namespace": test_namespace}},
        )
    async with await vm.real(3).client() as admin:
        stored = await kube.get(admin, kube.CONFIG_MAPS, "through-the-proxy", test_namespace)
    assert stored["metadata"]["name"] == "through-the-proxy"
    # The real apiserver authenticates the forwarded bearer token.
    bad = kube.ClusterConnection(server=vm.server(3), ca_data=vm.ca_pem, token="not-a-token")
    async with await kube.new_client(bad) as client:
        with pytest.raises(kube.UnauthorizedError):
            await kube.get(client, kube.NAMESPACES, "default")
    beyond = kube.ClusterConnection(
        server=f"{vm.base_url}/members/{vm.count}", ca_data=vm.ca_pem, token=vm.token(0)
    )
    async with await kube.new_client(beyond) as client:
        with pytest.raises(kube.NotFoundError):
            await kube.get(client, kube.NAMESPACES, "default")


@pytest.fixture
async def properties(
    virtual_members: VirtualMembers, test_namespace: str
) -> AsyncIterator[list[str]]:
    """Names of ClusterProperty objects the test writes on real members; deleted afterwards."""
    written: list[str] = []
    yield written
    for cp in virtual_members.clusters:
        async with await cp.client() as admin:
            for name in written:
                await kube.delete(admin, kube.CLUSTER_PROPERTIES, name)


async def test_a_virtual_member_lists_and_watches_only_its_properties(
    virtual_members: VirtualMembers, fleet: Fleet, test_namespace: str, properties: list[str]
) -> None:
    vm = virtual_members
    real = len(fleet.members)
    shared = f"shared.{test_namespace}.example.com"
    await vm.set_shared_property(shared, "everyone")
    properties.append(shared)
    properties.append(await vm.set_property(real, f"region.{test_namespace}", "other"))
    async with await vm.client(0) as client:
        informer = Informer(client, kube.CLUSTER_PROPERTIES)
        async with informer:
            await informer.wait_synced()
            assert informer.keys() == [shared]  # not member `real`'s, on the same real member
            own = await vm.set_property(0, f"region.{test_namespace}", "eu-west-1")
            properties.append(own)
            await eventually(lambda: own in informer.keys(), what="the watch event")
            assert informer.get(own)["spec"]["value"] == "eu-west-1"
            assert sorted(informer.keys()) == sorted([shared, own])
        # A client's own selector is kept and narrowed to the member's view.
        listed = await kube.list_objects(
            client, kube.CLUSTER_PROPERTIES, label_selector=f"{LABEL_VIRTUAL_MEMBER}=all"
        )
        assert [i["metadata"]["name"] for i in listed["items"]] == [shared]
        listed = await kube.list_objects(
            client, kube.CLUSTER_PROPERTIES, label_selector=f"{LABEL_VIRTUAL_MEMBER}={real}"
        )
        assert listed["items"] == []


@pytest.fixture(scope="module")
async def prefixed_hub(fleet: Fleet) -> AsyncIterator[VirtualMembers]:
    """The hub itself behind a path prefix (``/members/0``), as Rancher serves a cluster."""
    async with VirtualMembers(fleet, 1, clusters=[fleet.hub]) as vm:
        yield vm


@pytest.mark.parametrize("client", ["standard-library", "full"])
async def test_cli_get_keeps_the_hubs_path_prefix(
    prefixed_hub: VirtualMembers, test_namespace: str, tmp_path: Path, client: str
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(prefixed_hub.kubeconfig(0)))
    async with await prefixed_hub.client(0) as hub:
        await kube.apply(
            hub,
            kube.CLUSTER_PROFILES,
            {
                "metadata": {"name": "behind-a-prefix", "namespace": test_namespace},
                "spec": {"clusterManager": {"name": "test"}},
            },
            field_manager="test",
        )
    # A proxy in the environment sends `get` to the full client (which honours NO_PROXY).
    env = {"HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1"} if client == "full" else {}
    result = await asyncio.to_thread(
        cli, "get", "-n", test_namespace, "--kubeconfig", str(path), env=env
    )
    assert result.returncode == 0, result.stderr
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["NAME", "behind-a-prefix"]


async def test_secretreader_plugin_reads_its_secret_from_a_prefixed_hub(
    prefixed_hub: VirtualMembers, test_namespace: str, tmp_path: Path
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(prefixed_hub.kubeconfig(0)))
    async with await prefixed_hub.client(0) as hub:
        await kube.apply(
            hub,
            kube.SECRETS,
            {
                "metadata": {"name": "behind-a-prefix", "namespace": test_namespace},
                "stringData": {"token": "member-token"},
            },
            field_manager="test",
        )
    info = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "spec": {
            "interactive": False,
            "cluster": {
                "server": "https://member.invalid",
                "config": {"clusterName": "behind-a-prefix"},
            },
        },
    }
    proc = await asyncio.to_thread(
        subprocess.run,
        [str(PLUGIN), "--kubeconfig", str(path), "-n", test_namespace],
        capture_output=True,
        text=True,
        env={**os.environ, "KUBERNETES_EXEC_INFO": json.dumps(info)},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"]["token"] == "member-token"


async def test_members_spread_over_proxy_processes_are_each_reachable(fleet: Fleet) -> None:
    async with VirtualMembers(fleet, 4, processes=2) as vm:
        assert len(vm.processes) == 2 and vm.base_url_of(0) != vm.base_url_of(1)
        for n in range(4):
            assert vm.server(n).startswith(vm.base_url_of(n % 2))
            async with await vm.client(n) as client:
                ns = await kube.get(client, kube.NAMESPACES, "kube-system")
            assert ns["metadata"]["uid"] == member_id(n)
    assert vm.processes == []


async def test_kubectl_sees_the_virtual_identity(
    virtual_members: VirtualMembers, tmp_path: Path
) -> None:
    # client-go speaks HTTP/2 and asks for protobuf where it can: the identity survives both.
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(virtual_members.kubeconfig(2)))
    kubectl = [str(find_binary("kubectl")), "--kubeconfig", str(path)]
    done = await asyncio.to_thread(
        subprocess.run,
        [*kubectl, "get", "namespace", "kube-system", "-o", "jsonpath={.metadata.uid}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == member_id(2)

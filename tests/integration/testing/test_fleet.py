"""The session fleet is made of real, separate control planes."""

from __future__ import annotations

import subprocess

from cluster_inventory import kube
from cluster_inventory.testing import Fleet, find_binary
from cluster_inventory.testing.versions import KUBERNETES_VERSION


async def test_every_cluster_reports_the_pinned_version(fleet: Fleet) -> None:
    servers = set()
    for cp in fleet.clusters:
        async with await cp.client() as client:
            version = await kube.request(client, "GET", "/version")
        assert version["gitVersion"] == KUBERNETES_VERSION
        servers.add(cp.server)
    assert len(servers) == 1 + len(fleet.members)


async def test_hub_serves_inventory_crds_and_members_serve_cluster_property(fleet: Fleet) -> None:
    async with await fleet.hub.client() as hub:
        names = {
            c["metadata"]["name"]
            for c in (await kube.list_objects(hub, kube.CUSTOM_RESOURCE_DEFINITIONS))["items"]
        }
    assert {
        "clusterprofiles.multicluster.x-k8s.io",
        "placementdecisions.multicluster.x-k8s.io",
        "clusterproperties.about.k8s.io",
    } <= names
    for member in fleet.members.values():
        async with await member.client() as client:
            names = {
                c["metadata"]["name"]
                for c in (await kube.list_objects(client, kube.CUSTOM_RESOURCE_DEFINITIONS))[
                    "items"
                ]
            }
        assert names == {"clusterproperties.about.k8s.io"}


async def test_members_do_not_share_objects(fleet: Fleet, test_namespace: str) -> None:
    first, second = list(fleet.members.values())[:2]
    body = {"metadata": {"name": "only-here", "namespace": test_namespace}, "data": {"k": "v"}}
    configmaps = kube.Resource(group="", version="v1", plural="configmaps", kind="ConfigMap")
    async with await first.client() as client:
        await kube.create(client, configmaps, body)
    async with await second.client() as client:
        try:
            await kube.get(client, configmaps, "only-here", test_namespace)
        except kube.NotFoundError as exc:
            assert "only-here" in str(exc)
        else:
            raise AssertionError("a ConfigMap created on one member is visible on another")


def test_kubectl_works_with_the_written_kubeconfig(fleet: Fleet) -> None:
    kubectl = find_binary("kubectl")
    for cp in fleet.clusters:
        out = subprocess.run(
            [
                str(kubectl),
                "--kubeconfig",
                str(cp.kubeconfig_path),
                "get",
                "namespace",
                "default",
                "-o",
                "name",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "namespace/default"


async def test_controller_manager_aggregates_view_role_on_members(fleet: Fleet) -> None:
    for member in fleet.members.values():
        async with await member.client() as client:
            view = await kube.request(
                client, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/view"
            )
        assert any("configmaps" in rule.get("resources", []) for rule in view["rules"])


async def test_member_apiserver_stops_and_restarts_with_its_data(
    fleet: Fleet, test_namespace: str
) -> None:
    name = next(iter(fleet.members))
    member = fleet.member(name)
    # A crash (SIGKILL): the data must survive that too, and no 20 s drain is waited out.
    await fleet.stop_member(name, kill=True)
    async with await member.client() as client:
        try:
            await kube.request(client, "GET", "/version", timeout=5)
        except kube.ServerUnavailableError as exc:
            assert "unreachable" in str(exc)
        else:
            raise AssertionError("a stopped member still answered")
    await fleet.start_member(name)
    async with await member.client() as client:
        ns = await kube.get(client, kube.NAMESPACES, test_namespace)
    assert ns["metadata"]["name"] == test_namespace

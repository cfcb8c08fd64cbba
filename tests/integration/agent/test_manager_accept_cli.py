"""``manager accept`` and ``manager reject`` as a user runs them (docs/cli.md)."""

from __future__ import annotations

import asyncio

import pytest

from cluster_inventory import kube
from cluster_inventory.api.constants import ANNOTATION_REGISTRATION_MODE
from cluster_inventory.testing import ControlPlane
from tests.cli_run import cli


async def _names(hub: ControlPlane, ns: str) -> dict[str, set[str]]:
    found = {}
    async with await hub.client() as client:
        for resource in (
            kube.SECRETS,
            kube.ROLES,
            kube.ROLE_BINDINGS,
            kube.LEASES,
            kube.MEMBER_REPORTS,
        ):
            listed = await kube.list_objects(client, resource, ns)
            found[resource.kind] = {o["metadata"]["name"] for o in listed["items"]}
    return found


def test_accept_writes_the_agents_objects_and_reject_removes_them(
    hub: ControlPlane, test_namespace: str
) -> None:
    where = ["--hub-kubeconfig", str(hub.kubeconfig_path), "-n", test_namespace]
    for _ in range(2):  # accepting twice changes nothing
        run = cli("manager", "accept", "edge-1", "--clusterset", "prod", *where)
        assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"member edge-1 accepted in {test_namespace} (cluster sets: prod)"
    names = asyncio.run(_names(hub, test_namespace))
    assert {"edge-1", "cluster-inventory-agent-edge-1-credential"} <= names["Secret"]
    assert "cluster-inventory-agent-edge-1" in names["Role"] & names["RoleBinding"]
    assert "edge-1" in names["Lease"] & names["MemberReport"]

    async def secret() -> dict:
        async with await hub.client() as client:
            return await kube.get(client, kube.SECRETS, "edge-1", test_namespace)

    stored = asyncio.run(secret())
    assert stored["metadata"]["annotations"][ANNOTATION_REGISTRATION_MODE] == "agent"
    assert not stored.get("data")

    run = cli("manager", "reject", "edge-1", *where)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == "member edge-1 rejected"
    names = asyncio.run(_names(hub, test_namespace))
    assert "edge-1" not in names["Secret"] | names["Lease"] | names["MemberReport"]
    assert "cluster-inventory-agent-edge-1-credential" not in names["Secret"]
    assert "cluster-inventory-agent-edge-1" not in names["Role"] | names["RoleBinding"]
    run = cli("manager", "reject", "edge-1", *where)
    assert run.returncode == 1 and "no agent member edge-1" in run.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["BAD_NAME", "--clusterset", "prod"], "metadata.name"),
        (["ok", "--clusterset", "Not A Set"], "not a DNS-1123 label"),
    ],
)
def test_accept_refuses_bad_input_before_writing(
    hub: ControlPlane, test_namespace: str, args: list[str], message: str
) -> None:
    run = cli(
        "manager",
        "accept",
        *args,
        "--hub-kubeconfig",
        str(hub.kubeconfig_path),
        "-n",
        test_namespace,
    )
    assert run.returncode == 1
    assert message in run.stderr

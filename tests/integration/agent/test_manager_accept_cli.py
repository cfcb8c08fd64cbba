"""``manager accept``, ``reject`` and ``bootstrap-kubeconfig`` as a user runs them (docs/cli.md).

Every input is checked before anything is written: a namespace that does not exist, a bad
name or cluster set, a member not accepted, a file that cannot be written.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cluster_inventory import kube
from cluster_inventory.api.constants import ANNOTATION_REGISTRATION_MODE
from cluster_inventory.testing import ControlPlane
from tests.support.processes.cli import cli


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


async def _cluster_names(hub: ControlPlane) -> set[str]:
    """Names held both as a ClusterRole and a ClusterRoleBinding."""
    async with await hub.client() as client:
        roles = await kube.list_objects(client, kube.CLUSTER_ROLES)
        bindings = await kube.list_objects(client, kube.CLUSTER_ROLE_BINDINGS)
    return {o["metadata"]["name"] for o in roles["items"]} & {
        o["metadata"]["name"] for o in bindings["items"]
    }


def test_accept_writes_the_agents_objects_and_reject_removes_them(
    hub: ControlPlane, test_namespace: str
) -> None:
    where = ["--hub-kubeconfig", str(hub.kubeconfig_path), "-n", test_namespace]
    for _ in range(2):  # accepting twice changes nothing
        run = cli("manager", "accept", "edge-1", "--clusterset", "prod", *where)
        assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"member edge-1 accepted in {test_namespace} (cluster sets: prod)"
    names = asyncio.run(_names(hub, test_namespace))
    csr_rbac = f"cluster-inventory-agent:{test_namespace}:edge-1"
    assert csr_rbac in asyncio.run(_cluster_names(hub))
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
    assert csr_rbac not in asyncio.run(_cluster_names(hub))
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


def test_accept_into_a_namespace_that_does_not_exist_writes_nothing(hub: ControlPlane) -> None:
    typo = "cluster-inventory-sytsem"
    run = cli(
        "manager", "accept", "edge-1", "--clusterset", "prod",
        "--hub-kubeconfig", str(hub.kubeconfig_path), "-n", typo,
    )  # fmt: skip
    assert run.returncode == 1
    assert f"error: Namespace {typo}: metadata.name: does not exist" in run.stderr

    async def gone() -> None:
        async with await hub.client() as client:
            with pytest.raises(kube.NotFoundError):
                await kube.get(client, kube.NAMESPACES, typo)
            roles = await kube.list_objects(client, kube.CLUSTER_ROLES)
        assert not [o for o in roles["items"] if typo in o["metadata"]["name"]]

    asyncio.run(gone())


def test_bootstrap_kubeconfig_checks_its_input_before_it_issues_anything(
    hub: ControlPlane, test_namespace: str, tmp_path: Path
) -> None:
    where = ["--hub-kubeconfig", str(hub.kubeconfig_path), "-n", test_namespace]
    out = tmp_path / "boot.kubeconfig"

    def run(*args: str) -> str:
        done = cli("manager", "bootstrap-kubeconfig", *args, *where)
        assert done.returncode == 1 and done.stdout == ""
        return done.stderr

    assert "is not accepted in" in run("--member", "edge-9", "-o", str(out))
    assert "--output" in run("--member", "edge-9", "-o", str(tmp_path / "no" / "such" / "f"))
    assert "--output" in run("--member", "edge-9", "-o", str(tmp_path))
    assert "member" in run("--member", "Edge_9", "-o", str(out))
    assert not out.exists()

    async def csrs() -> list[str]:
        async with await hub.client() as client:
            listed = await kube.list_objects(client, kube.CERTIFICATE_SIGNING_REQUESTS)
        return [o["metadata"]["name"] for o in listed["items"] if "edge-9" in o["metadata"]["name"]]

    assert asyncio.run(csrs()) == []

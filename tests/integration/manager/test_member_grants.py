"""Nothing left behind on a member: a member that leaves the manager loses its grants.

The consumer ServiceAccount and ClusterRoleBinding the manager made on a member are removed
when the member leaves the manager (its registration is deleted, or no inventory selects it
any more), and ``cluster-inventory manager grants`` shows what a manager holds on a member.
A member whose registration only turned invalid keeps them (its profiles are held too).
"""

from __future__ import annotations

import base64

import yaml

from cluster_inventory import kube
from cluster_inventory.manager import registration_secret
from cluster_inventory.manager.accounts import list_grants
from tests.cli_run import cli
from tests.manager_harness import Harness, running_manager
from tests.waiting import eventually


async def _grants(h: Harness) -> list[tuple[str, str]]:
    async with await h.member(0).client() as member:
        found = await list_grants(member, h.manager.config.name, h.namespace)
    return [(g.kind, g.inventory) for g in found]


async def _granted(h: Harness, ns: str) -> bool:
    return await _grants(h) == [("ServiceAccount", ns), ("ClusterRoleBinding", ns)]


async def _nothing(h: Harness) -> bool:
    return await _grants(h) == []


async def test_a_deregistered_member_loses_its_accounts_and_bindings(harness: Harness) -> None:
    h = harness
    ns = await h.inventory("prod", "prod")
    await h.register("alpha", h.member(0), ["prod"])
    await eventually(lambda: _granted(h, ns), what="the consumer account and binding")
    await h.deregister("alpha")
    await eventually(lambda: _nothing(h), what="no grant left on the member")


async def test_a_member_no_inventory_selects_loses_its_grants(harness: Harness) -> None:
    h = harness
    ns = await h.inventory("prod", "prod")
    await h.register("alpha", h.member(0), ["prod"])
    await eventually(lambda: _granted(h, ns), what="the consumer account and binding")
    await h.register("alpha", h.member(0), ["staging"])  # no inventory serves staging
    await eventually(lambda: _nothing(h), what="no grant left on the member")


async def test_an_invalid_registration_keeps_the_grants(harness: Harness) -> None:
    h = harness
    ns = await h.inventory("prod", "prod")
    await h.register("alpha", h.member(0), ["prod"])
    await eventually(lambda: _granted(h, ns), what="the consumer account and binding")
    secret = registration_secret(
        "alpha", h.namespace, yaml.safe_dump(h.member(0).kubeconfig()), ["prod"]
    )
    secret["data"]["kubeconfig"] = base64.b64encode(b"not: [a kubeconfig").decode()
    await kube.apply(h.hub_client, kube.SECRETS, secret, field_manager="test")
    await eventually(
        lambda: _condition_reported(h), what="the invalid registration reported", timeout=20
    )
    assert await _granted(h, ns)
    assert (await h.profile(ns, "alpha"))["metadata"]["name"] == "alpha"


async def _condition_reported(h: Harness) -> bool:
    value = h.manager.registry.get_sample_value("cluster_inventory_invalid_registrations")
    return value is not None and value >= 1


async def test_the_grants_command_lists_what_a_manager_holds(harness: Harness, tmp_path) -> None:
    h = harness
    ns = await h.inventory("prod", "prod")
    await h.register("alpha", h.member(0), ["prod"])
    await eventually(lambda: _granted(h, ns), what="the consumer account and binding")
    kubeconfig = tmp_path / "member.yaml"
    kubeconfig.write_text(yaml.safe_dump(h.member(0).kubeconfig()))
    args = [
        "manager",
        "grants",
        "--member-kubeconfig",
        str(kubeconfig),
        "--name",
        h.manager.config.name,
        "--member-namespace",
        h.namespace,
    ]
    listed = cli(*args)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert len(lines) == 3, listed.stdout
    assert lines[0].split() == ["KIND", "NAMESPACE", "NAME", "INVENTORY", "ROLE"]
    assert [line.split()[0] for line in lines[1:]] == ["ServiceAccount", "ClusterRoleBinding"]
    assert lines[2].split()[-2:] == [ns, "view"]
    await h.deregister("alpha")
    await eventually(lambda: _nothing(h), what="no grant left on the member")
    after = cli(*args)
    assert after.returncode == 0 and "holds nothing on this member" in after.stdout
    # A kubeconfig that is not one is one error line naming it.
    kubeconfig.write_bytes(b"\x89PNG\r\n")
    bad = cli(*args)
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and str(kubeconfig) in bad.stderr


async def test_grants_of_a_member_that_left_while_down_go_once_it_is_back(
    harness: Harness,
) -> None:
    h = harness
    ns = await h.inventory("prod", "prod")
    name = next(iter(h.fleet.members))
    await h.register("alpha", h.member(0), ["prod"])
    await eventually(lambda: _granted(h, ns), what="the consumer account and binding")
    # A graceful stop ends in the same SIGKILL 20 s later (the manager's watches hold the
    # drain open); the member is down either way before it leaves.
    await h.fleet.stop_member(name, kill=True)
    try:
        await h.deregister("alpha")
        await eventually(lambda: not h.manager.members, what="the member connection dropped")
    finally:
        await h.fleet.start_member(name)
    await eventually(lambda: _nothing(h), what="no grant left once the member is back", timeout=60)


async def test_a_member_removed_from_the_file_source_loses_its_grants(
    fleet, test_namespace, tmp_path
) -> None:
    """The file is read again when it changes: an entry removed is a member that left."""
    kubeconfig = tmp_path / "alpha.yaml"
    kubeconfig.write_text(yaml.safe_dump(next(iter(fleet.members.values())).kubeconfig()))
    clusters = tmp_path / "clusters.yaml"
    clusters.write_text(
        yaml.safe_dump(
            {"clusters": [{"name": "alpha", "kubeconfig": "alpha.yaml", "clustersets": ["prod"]}]}
        )
    )
    async with running_manager(fleet, test_namespace, sources=(f"file:{clusters}",)) as h:
        ns = await h.inventory("prod", "prod")
        await eventually(lambda: _granted(h, ns), what="the consumer account and binding")
        clusters.write_text(yaml.safe_dump({"clusters": []}))
        await eventually(lambda: _nothing(h), what="no grant left on the member")
        # A file that turns unreadable is no empty fleet: nothing else changes.
        clusters.write_bytes(b"\xff\xfe not yaml")
        await eventually(lambda: bool(h.manager.source.failures()), what="the failure reported")

"""Nothing left behind on a member: grants follow what the inventories need.

The consumer ServiceAccount and ClusterRoleBinding the manager made on a member are removed
when the member leaves the manager (its registration is deleted, or no inventory selects it
any more), and when its inventory goes: a deleted inventory namespace, also while the manager
was down or the member was, leaves nothing once the member is reached again, and the tokens
minted for it stop working. ``cluster-inventory manager grants`` shows what a manager holds
on a member against what its inventories need. A member whose registration only turned
invalid keeps them (its profiles are held too).
"""

from __future__ import annotations

import asyncio
import base64
import signal

import yaml

from cluster_inventory import kube
from cluster_inventory.api.constants import ANNOTATION_MEMBER_ROLE, LABEL_CLUSTER_SET
from cluster_inventory.manager import registration_secret
from cluster_inventory.manager.members.accounts import list_grants
from cluster_inventory.testing import ControlPlane, Fleet
from tests.support.hub.manager import Harness, running_manager
from tests.support.processes.cli import cli, cli_process
from tests.support.waiting import eventually


async def _grants(h: Harness) -> list[tuple[str, str]]:
    async with await h.member(0).client() as member:
        found = await list_grants(member, h.manager.config.name, h.namespace)
    return [(g.kind, g.inventory) for g in found]


async def _granted(h: Harness, ns: str) -> bool:
    return await _grants(h) == [("ServiceAccount", ns), ("ClusterRoleBinding", ns)]


async def _nothing(h: Harness) -> bool:
    return await _grants(h) == []


async def _secret_token(hub: kube.ApiClient, ns: str, name: str) -> str | None:
    """The consumer token of profile ``ns/name``, once its Secret holds one."""
    try:
        secret = await kube.get(hub, kube.SECRETS, name, namespace=ns)
    except kube.NotFoundError:
        return None
    data = (secret.get("data") or {}).get("token")
    return base64.b64decode(data).decode() if data else None


async def _token(h: Harness, ns: str, name: str) -> str | None:
    return await _secret_token(h.hub_client, ns, name)


async def _lists_namespaces(member: ControlPlane, token: str) -> bool:
    """True if ``token`` may list the member's namespaces; False once it is refused (401)."""
    conn = kube.ClusterConnection(server=member.server, ca_data=member.ca_pem, token=token)
    async with await kube.new_client(conn) as client:
        try:
            await kube.list_objects(client, kube.NAMESPACES)
        except kube.UnauthorizedError:
            return False
    return True


async def _gone(hub: kube.ApiClient, ns: str) -> bool:
    try:
        await kube.get(hub, kube.NAMESPACES, ns)
    except kube.NotFoundError:
        return True
    return False


async def _delete_namespace(hub: kube.ApiClient, ns: str) -> None:
    """Delete an inventory namespace and wait until the hub has finished deleting it."""
    await kube.delete(hub, kube.NAMESPACES, ns)
    await eventually(lambda: _gone(hub, ns), timeout=60, what=f"namespace {ns} deleted")


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
        "--hub-kubeconfig",
        str(h.hub.kubeconfig_path),
        "--name",
        h.manager.config.name,
        "--member-namespace",
        h.namespace,
    ]
    listed = cli(*args)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert len(lines) == 3, listed.stdout
    assert lines[0].split() == ["KIND", "NAMESPACE", "NAME", "INVENTORY", "ROLE", "STATE"]
    assert [line.split()[0] for line in lines[1:]] == ["ServiceAccount", "ClusterRoleBinding"]
    assert lines[2].split()[-3:] == [ns, "view", "held"]
    await h.deregister("alpha")
    await eventually(lambda: _nothing(h), what="no grant left on the member")
    after = cli(*args)
    assert after.returncode == 0 and "holds nothing on this member" in after.stdout
    # A kubeconfig that is not one is one error line naming it.
    kubeconfig.write_bytes(b"\x89PNG\r\n")
    bad = cli(*args)
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and str(kubeconfig) in bad.stderr


async def test_the_grants_command_shows_held_needed_and_orphans(
    fleet: Fleet, test_namespace: str, tmp_path
) -> None:
    """With the manager stopped, a role changed and an inventory deleted show as they are."""
    roles = {"prod": ("view", "edit")}
    async with await fleet.hub.client() as hub:
        prod = await _labelled(hub, f"{test_namespace}-prod", "prod")
        other = await _labelled(hub, f"{test_namespace}-other", "prod")
        try:
            async with running_manager(fleet, test_namespace, member_roles=roles) as h:
                await h.register("alpha", h.member(0), ["prod"])
                await eventually(lambda: _token(h, prod, "alpha"), what="a token in prod")
                await eventually(lambda: _token(h, other, "alpha"), what="a token in other")
                name = h.manager.config.name
            # The manager is stopped: prod asks for edit now, and other is deleted.
            await _labelled(hub, prod, "prod", {ANNOTATION_MEMBER_ROLE: "edit"})
            await _delete_namespace(hub, other)
            kubeconfig = tmp_path / "member.yaml"
            kubeconfig.write_text(yaml.safe_dump(h.member(0).kubeconfig()))
            listed = cli(
                "manager",
                "grants",
                "--member-kubeconfig",
                str(kubeconfig),
                "--hub-kubeconfig",
                str(fleet.hub.kubeconfig_path),
                "--name",
                name,
                "--member-namespace",
                test_namespace,
                "--member-roles",
                "prod=view,edit",
            )
            assert listed.returncode == 0, listed.stderr
            rows = [line.split() for line in listed.stdout.splitlines()[1:]]
            states = {(row[0], row[3], row[4]): row[5] for row in rows}
            assert states == {
                ("ServiceAccount", prod, "-"): "held",
                ("ClusterRoleBinding", prod, "view"): "orphan",
                ("ClusterRoleBinding", prod, "edit"): "needed",
                ("ServiceAccount", other, "-"): "orphan",
                ("ClusterRoleBinding", other, "view"): "orphan",
            }, listed.stdout
            # Started again, the manager makes what is needed and removes the orphans.
            async with running_manager(fleet, test_namespace, member_roles=roles) as again:
                await eventually(
                    lambda: _held_roles(
                        again, {("ServiceAccount", prod, ""), ("ClusterRoleBinding", prod, "edit")}
                    ),
                    timeout=60,
                    what="prod bound to edit only, other gone",
                )
        finally:
            for ns in (prod, other):
                await kube.delete(hub, kube.NAMESPACES, ns)


async def _labelled(
    hub: kube.ApiClient, ns: str, clusterset: str, annotations: dict[str, str] | None = None
) -> str:
    """An inventory namespace that outlives the managers of one test (deleted by the test)."""
    body = {
        "metadata": {
            "name": ns,
            "labels": {LABEL_CLUSTER_SET: clusterset},
            "annotations": annotations or {},
        }
    }
    await kube.apply(hub, kube.NAMESPACES, body, field_manager="test")
    return ns


async def _held_roles(h: Harness, expected: set[tuple[str, str, str]]) -> bool:
    async with await h.member(0).client() as member:
        found = await list_grants(member, h.manager.config.name, h.namespace)
    return {(g.kind, g.inventory, g.role) for g in found} == expected and len(found) == len(
        expected
    )


async def test_a_deleted_inventory_namespace_leaves_nothing_on_the_member(
    harness: Harness,
) -> None:
    """The member stays in the manager (another inventory selects it): the deleted one's go."""
    h = harness
    gone, kept, token = await _two_inventories(h)
    await _delete_namespace(h.hub_client, gone)
    await eventually(lambda: _granted(h, kept), what="only the other inventory's grants")
    # The ServiceAccount was the token's holder: the token is refused on the member now.
    await eventually(lambda: _refused(h.member(0), token), what="the inventory's token refused")


async def _two_inventories(h: Harness) -> tuple[str, str, str]:
    """Member alpha in two inventories: (the one to delete, the one kept, its token there)."""
    gone = await h.inventory("prod", "prod")
    kept = await h.inventory("kept", "prod")
    await h.register("alpha", h.member(0), ["prod"])
    token = await eventually(lambda: _token(h, gone, "alpha"), what="the consumer token")
    await eventually(lambda: _token(h, kept, "alpha"), what="the other inventory's token")
    assert await _lists_namespaces(h.member(0), token)
    return gone, kept, token


async def _refused(member: ControlPlane, token: str) -> bool:
    return not await _lists_namespaces(member, token)


async def test_an_inventory_deleted_while_the_manager_is_killed_leaves_nothing(
    fleet: Fleet, test_namespace: str
) -> None:
    """A manager SIGKILLed, its inventory deleted meanwhile: the next one removes the grants."""
    name = f"m-{test_namespace[-8:]}"  # the harness's manager name: the same manager after
    async with await fleet.hub.client() as hub:
        ns = await _labelled(hub, f"{test_namespace}-prod", "prod")
        member = next(iter(fleet.members.values()))
        secret = registration_secret(
            "alpha", test_namespace, yaml.safe_dump(member.kubeconfig()), ["prod"]
        )
        await kube.apply(hub, kube.SECRETS, secret, field_manager="test")
        proc = cli_process(  # a child process that outlives this call
            "manager",
            "run",
            "--kubeconfig",
            str(fleet.hub.kubeconfig_path),
            "--name",
            name,
            "--namespace",
            test_namespace,
            "--member-namespace",
            test_namespace,
            "--no-leader-elect",
            "--probe-interval",
            "0.5",
            "--health-probe-bind-address",
            "0",
            "--metrics-bind-address",
            "0",
        )
        try:
            token = await eventually(
                lambda: _secret_token(hub, ns, "alpha"), timeout=60, what="a consumer token"
            )
            proc.send_signal(signal.SIGKILL)
            await asyncio.to_thread(proc.wait, 30)
        finally:
            if proc.poll() is None:
                proc.kill()
            await asyncio.to_thread(proc.communicate, timeout=30)
        assert proc.returncode == -signal.SIGKILL
        await _delete_namespace(hub, ns)
        async with await member.client() as client:
            held = await list_grants(client, name, test_namespace)
        assert [g.inventory for g in held] == [ns, ns]  # no manager ran: they are still there
        async with running_manager(fleet, test_namespace) as again:
            assert again.manager.config.name == name
            await eventually(lambda: _nothing(again), what="no grant left on the member")
        await eventually(
            lambda: _refused(member, token), what="the deleted inventory's token refused"
        )


async def test_an_inventory_deleted_while_the_member_is_down_leaves_nothing_once_it_is_back(
    harness: Harness,
) -> None:
    """The member stays served (another inventory): its reconnect lists and removes the rest."""
    h = harness
    gone, kept, token = await _two_inventories(h)
    name = next(iter(h.fleet.members))
    await h.fleet.stop_member(name, kill=True)
    try:
        await eventually(
            lambda: all(m.observation.healthy.status != "True" for m in h.manager.members.values()),
            what="the member seen down",
        )
        await _delete_namespace(h.hub_client, gone)
    finally:
        await h.fleet.start_member(name)
    await eventually(
        lambda: _granted(h, kept), timeout=60, what="only the other inventory's grants once back"
    )
    await eventually(
        lambda: _refused(h.member(0), token), what="the deleted inventory's token refused"
    )


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

"""Nothing stored is lost on a typo: a source that cannot be read is not an empty fleet.

A mistyped ``--source file:`` path or registration namespace used to read as "no members"
and delete every profile of the manager's name (issue: a typo deleted the demo's four
profiles 42 times in 20 s beside a running manager). Now the process stops with one
``error:`` line before it takes the Lease or writes anything, and an invalid registration
keeps the profiles its member already has, across restarts too.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster_inventory import kube
from cluster_inventory.manager.rules.registration import RegistrationError
from cluster_inventory.manager.runner import lease_name
from cluster_inventory.manager.sources.file import FileRegistrationSource
from tests.support.hub.manager import Harness, running_manager
from tests.support.processes.cli import cli
from tests.support.waiting import eventually


@contextlib.asynccontextmanager
async def deletions(hub: kube.ApiClient, namespace: str) -> AsyncIterator[list[str]]:
    """Record every ClusterProfile and Secret deleted in ``namespace`` while the block runs."""
    from cluster_inventory.kube.informer import DELETED, Informer, object_key

    seen: list[str] = []
    informers = [
        Informer(hub, kube.CLUSTER_PROFILES, namespace=namespace, name="test profiles"),
        Informer(hub, kube.SECRETS, namespace=namespace, name="test Secrets"),
    ]
    for informer in informers:
        informer.add_handler(
            lambda event, obj, _old, kind=informer.resource.kind: (
                seen.append(f"{kind} {object_key(obj)}") if event == DELETED else None
            )
        )
        informer.start()
    try:
        for informer in informers:
            await informer.wait_synced()
        yield seen
    finally:
        for informer in informers:
            await informer.stop()


async def _joined_with_token(h: Harness, ns: str, name: str) -> bool:
    cond = await h.condition(ns, name, "Joined")
    if not cond or cond["status"] != "True":
        return False
    try:
        await kube.get(h.hub_client, kube.SECRETS, name, namespace=ns)
    except kube.NotFoundError:
        return False
    return True


async def test_a_mistyped_file_source_stops_the_process_before_any_write(
    fleet, test_namespace, tmp_path: Path
) -> None:
    async with running_manager(fleet, test_namespace) as h:
        inv = await h.inventory("prod", "prod")
        await h.register("alpha", h.member(0), ["prod"])
        await eventually(lambda: _joined_with_token(h, inv, "alpha"), timeout=60, what="alpha")
        async with deletions(h.hub_client, inv) as deleted:
            # The same manager name and namespace as the one running, as a user would retype
            # them; the file path is the typo. Leader election is on (the default): the
            # running manager holds no Lease, so the typo would be free to lead.
            done = await asyncio.to_thread(
                cli,
                "manager",
                "run",
                "--kubeconfig",
                str(fleet.hub.kubeconfig_path),
                "--name",
                h.manager.config.name,
                "--namespace",
                test_namespace,
                "--member-namespace",
                test_namespace,
                "--source",
                f"file:{tmp_path / 'clusters-typo.yaml'}",
                "--health-probe-bind-address",
                "0",
                "--metrics-bind-address",
                "0",
                timeout=60,
            )
            assert done.returncode == 1, done.stderr[-2000:]
            errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
            assert len(errors) == 1, done.stderr[-2000:]
            assert "clusters-typo.yaml" in errors[0] and "No such file" in errors[0]
            assert "Traceback" not in done.stderr
            # Stopped before any write: not even the Lease was taken.
            with pytest.raises(kube.NotFoundError):
                await kube.get(
                    h.hub_client,
                    kube.LEASES,
                    lease_name(h.manager.config.name),
                    namespace=test_namespace,
                )
            # A registration namespace that does not exist is no empty fleet either.
            typo_ns = await asyncio.to_thread(
                cli,
                "manager",
                "run",
                "--kubeconfig",
                str(fleet.hub.kubeconfig_path),
                "--name",
                h.manager.config.name,
                "--namespace",
                f"{test_namespace}-typo",
                "--no-leader-elect",
                "--health-probe-bind-address",
                "0",
                "--metrics-bind-address",
                "0",
                timeout=60,
            )
            assert typo_ns.returncode == 1, typo_ns.stderr[-2000:]
            assert f"{test_namespace}-typo" in typo_ns.stderr
            assert "does not exist" in typo_ns.stderr
            assert await _joined_with_token(h, inv, "alpha")
        assert deleted == []


async def test_a_file_source_that_is_not_a_cluster_list_is_unreadable(tmp_path: Path) -> None:
    broken = tmp_path / "clusters.yaml"
    broken.write_text("clusters:\n  - name: a\n   kubeconfig: x\n")
    source = FileRegistrationSource(broken)
    source.start(lambda: None)
    with pytest.raises(kube.SourceUnavailableError) as caught:
        await source.wait_synced()
    assert str(broken) in str(caught.value) and "line 3" in str(caught.value)
    broken.write_text("clusters: {a: 1}\n")
    source = FileRegistrationSource(broken)
    source.start(lambda: None)
    with pytest.raises(kube.SourceUnavailableError, match="clusters: must be a list"):
        await source.wait_synced()


async def test_an_invalid_registration_keeps_its_profiles_across_a_restart(
    fleet, test_namespace
) -> None:
    name = f"m-{test_namespace[-8:]}"
    async with running_manager(fleet, test_namespace, name=name) as h:
        inv = await h.inventory("prod", "prod")
        h.created_namespaces.remove(inv)  # kept for the second manager; deleted below
        await h.register("alpha", h.member(0), ["prod"])
        await h.register("beta", h.member(1), ["prod"])
        for member in ("alpha", "beta"):
            await eventually(
                lambda m=member: _joined_with_token(h, inv, m), timeout=60, what=member
            )
    hub = await fleet.hub.client()
    try:
        # While no manager runs, alpha's Secret is broken by hand.
        secret = await kube.get(hub, kube.SECRETS, "alpha", namespace=test_namespace)
        broken = base64.b64encode(b"clusters: [oops").decode()
        await kube.apply(
            hub,
            kube.SECRETS,
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": secret["type"],
                "metadata": {
                    "name": "alpha",
                    "namespace": test_namespace,
                    "labels": secret["metadata"]["labels"],
                    "annotations": secret["metadata"]["annotations"],
                },
                "data": {**secret["data"], "kubeconfig": broken},
            },
            field_manager="test",
            force=True,
        )
        async with deletions(hub, inv) as deleted:
            async with running_manager(fleet, test_namespace, name=name) as h2:
                # The restarted manager never saw alpha valid: it must still keep its profile.
                await eventually(
                    lambda: h2.manager.metrics.held_profiles._value.get() == 1,
                    what="alpha's profile held",
                )
                events = await _events_about(hub, test_namespace, "alpha")
                assert any(e.get("reason") == "InvalidRegistration" for e in events), events
                assert any("data.kubeconfig" in (e.get("note") or "") for e in events), events
                assert await h2.profile_names(inv) == {"alpha", "beta"}
                # Fixed: alpha is served again by the same profile.
                await h2.register("alpha", h2.member(0), ["prod"])
                await eventually(lambda: _joined_with_token(h2, inv, "alpha"), what="alpha")
                await eventually(
                    lambda: h2.manager.metrics.held_profiles._value.get() == 0,
                    what="nothing held once alpha is valid",
                )
                # Removed for real: now, and only now, its profile goes.
                await h2.deregister("alpha")
                await eventually(lambda: _gone(hub, inv, "alpha"), what="alpha deleted")
        assert deleted.count(f"ClusterProfile {inv}/alpha") == 1, deleted
        assert not any("beta" in d for d in deleted), deleted
    finally:
        await kube.delete(hub, kube.NAMESPACES, inv)
        await hub.close()


async def _gone(hub: kube.ApiClient, ns: str, name: str) -> bool:
    try:
        await kube.get(hub, kube.CLUSTER_PROFILES, name, namespace=ns)
    except kube.NotFoundError:
        return True
    return False


async def _events_about(hub: kube.ApiClient, ns: str, name: str) -> list[dict[str, Any]]:
    listed = await kube.list_objects(
        hub, kube.EVENTS, namespace=ns, field_selector=f"regarding.name={name}"
    )
    return list(listed.get("items") or ())


def test_a_file_entry_with_a_bad_name_holds_every_deletion(tmp_path: Path) -> None:
    from cluster_inventory.manager.rules.inventory import held_members
    from cluster_inventory.manager.sources.file import parse_file_registrations

    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c"}}],
                "current-context": "c",
                "users": [],
            }
        )
    )
    good, bad = parse_file_registrations(
        {
            "clusters": [
                {"name": "ok", "kubeconfig": "kc", "clustersets": ["prod"]},
                {"name": "bad-sets", "kubeconfig": "kc", "clustersets": ["No_Such"]},
                {"name": "Not A Name", "kubeconfig": "kc", "clustersets": ["prod"]},
            ]
        },
        tmp_path / "clusters.yaml",
    )
    assert set(good) == {"ok"}
    assert [e.member for e in bad] == ["bad-sets", None]
    assert all(isinstance(e, RegistrationError) for e in bad)
    assert "clusters[1].clustersets" in str(bad[0]) and "clusters[2].name" in str(bad[1])
    assert held_members(good, bad[:1]) == frozenset({"bad-sets"})
    assert held_members(good, bad) is None  # a nameless entry could be any profile's


async def _binding_names(member, inventory: str) -> set[str]:
    async with await member.client() as client:
        listed = await kube.list_objects(
            client,
            kube.CLUSTER_ROLE_BINDINGS,
            label_selector=f"cluster-inventory.dev/inventory={inventory}",
        )
    return {b["metadata"]["name"] for b in listed["items"]}


async def test_two_managers_on_one_inventory_leave_each_others_objects_alone(
    fleet, test_namespace
) -> None:
    other_ns = f"{test_namespace}-b"[:63]
    async with await fleet.hub.client() as hub:
        await kube.apply(
            hub, kube.NAMESPACES, {"metadata": {"name": other_ns}}, field_manager="test"
        )
    try:
        async with (
            running_manager(fleet, test_namespace, name=f"a-{test_namespace[-8:]}") as a,
            running_manager(
                fleet,
                other_ns,
                name=f"b-{test_namespace[-8:]}",
                member_namespace=test_namespace,
            ) as b,
        ):
            inv = await a.inventory("prod", "prod")
            # One member, registered with each manager under its own name.
            await a.register("alpha", a.member(0), ["prod"])
            await b.register("bravo", b.member(0), ["prod"])
            await eventually(lambda: _joined_with_token(a, inv, "alpha"), timeout=60, what="a")
            await eventually(lambda: _joined_with_token(b, inv, "bravo"), timeout=60, what="b")
            bindings = await _binding_names(a.member(0), inv)
            assert len(bindings) == 2, bindings
            bravo_token = await kube.get(a.hub_client, kube.SECRETS, "bravo", namespace=inv)
            async with deletions(a.hub_client, inv) as deleted:
                await a.deregister("alpha")
                await eventually(lambda: _gone(a.hub_client, inv, "alpha"), what="alpha gone")
                await eventually(
                    lambda: _is_len(_binding_names(a.member(0), inv), 1),
                    what="manager a's member binding removed",
                )
            # Manager b's profile, token Secret and member-side binding are untouched.
            assert sorted(deleted) == [f"ClusterProfile {inv}/alpha", f"Secret {inv}/alpha"]
            (left,) = await _binding_names(a.member(0), inv)
            assert left.startswith(f"b-{test_namespace[-8:]}-")
            again = await kube.get(a.hub_client, kube.SECRETS, "bravo", namespace=inv)
            assert (
                again["metadata"]["resourceVersion"] == bravo_token["metadata"]["resourceVersion"]
            )
            profile = await b.profile(inv, "bravo")
            assert profile["spec"]["clusterManager"]["name"] == f"b-{test_namespace[-8:]}"
    finally:
        async with await fleet.hub.client() as hub:
            await kube.delete(hub, kube.NAMESPACES, other_ns)


async def _is_len(value: Any, n: int) -> bool:
    return len(await value) == n

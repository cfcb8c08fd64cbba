"""cluster-inventory apply on real members: results, dry run, selection, failures, prune."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from cluster_inventory import kube
from cluster_inventory.api.constants import EXTENSION_EXEC, LABEL_DECISION_INDEX, LABEL_DECISION_KEY
from cluster_inventory.integrations.delivery import (
    APPLYSET_GROUP_KINDS,
    APPLYSET_ID_LABEL,
    APPLYSET_PART_OF,
    ApplySet,
    FleetDelivery,
    Manifest,
    apply_to_member,
    deliver,
    load_manifests,
    select_profiles,
)
from cluster_inventory.testing import find_binary
from tests.support.hub.inventory import ACCOUNT, Inventory
from tests.support.processes.cli import cli
from tests.support.waiting import eventually


def manifests(ns: str, **data: dict[str, str]) -> list[Manifest]:
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": n, "namespace": ns},
            "data": d,
        }
        for n, d in data.items()
    ]
    objs.append(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "web", "namespace": ns}}
    )
    return [Manifest(obj=o, source=f"test#{i}") for i, o in enumerate(objs, start=1)]


def table(rows: list[Any]) -> dict[tuple[str, str], str]:
    return {(r.cluster.rpartition("/")[2], r.object): r.action for r in rows}


async def member_configmap(inventory: Inventory, index: int, name: str) -> dict[str, Any] | None:
    async with await inventory.member(index).client() as admin:
        try:
            return await kube.get(admin, kube.CONFIG_MAPS, name, inventory.namespace)
        except kube.NotFoundError:
            return None


async def test_apply_to_one_profile_reports_created_unchanged_and_configured_and_dry_run_stores_nothing(
    inventory: Inventory,
) -> None:
    ns = inventory.namespace
    await inventory.publish("one", inventory.member(0))
    await inventory.publish("two", inventory.member(1))  # not selected
    hub = inventory.hub
    targets = await select_profiles(hub, ns, profile="one")
    assert [t["metadata"]["name"] for t in targets] == ["one"]

    first = await deliver(
        targets, manifests(ns, a={"k": "1"}, b={"k": "1"}), inventory.provider_file
    )
    assert table(first) == {
        ("one", "configmap/a"): "created",
        ("one", "configmap/b"): "created",
        ("one", "serviceaccount/web"): "created",
    }
    assert all(r.namespace == ns and r.server == inventory.member(0).server for r in first)
    assert (await member_configmap(inventory, 0, "a"))["data"] == {"k": "1"}
    assert await member_configmap(inventory, 1, "a") is None

    again = await deliver(
        targets, manifests(ns, a={"k": "1"}, b={"k": "1"}), inventory.provider_file
    )
    assert set(table(again).values()) == {"unchanged"}

    changed = manifests(ns, a={"k": "2"}, b={"k": "1"})
    dry = await deliver(targets, changed, inventory.provider_file, dry_run=True)
    assert table(dry)[("one", "configmap/a")] == "configured"
    assert table(dry)[("one", "configmap/b")] == "unchanged"
    assert all(r.message == "server dry run" for r in dry)
    stored = await member_configmap(inventory, 0, "a")
    assert stored["data"] == {"k": "1"}
    real = await deliver(targets, changed, inventory.provider_file)
    assert table(real)[("one", "configmap/a")] == "configured"
    after = await member_configmap(inventory, 0, "a")
    assert after["data"] == {"k": "2"}
    assert after["metadata"]["resourceVersion"] != stored["metadata"]["resourceVersion"]


async def applies_of_configmaps(inventory: Inventory, index: int) -> int:
    """PATCH requests (server-side applies count as PATCH) on ConfigMaps the member's API
    server has answered so far."""
    async with await inventory.member(index).client() as admin:
        _, text = await kube.get_text(admin, "/metrics")
    total = 0
    for line in text.splitlines():
        if line.startswith("apiserver_request_total{") and 'resource="configmaps"' in line:
            if 'verb="PATCH"' in line:
                total += int(float(line.rsplit(" ", 1)[1]))
    return total


async def test_an_apply_that_changes_nothing_is_not_sent_and_drift_still_is(
    inventory: Inventory,
) -> None:
    ns = inventory.namespace
    await inventory.publish("one", inventory.member(0))
    targets = await select_profiles(inventory.hub, ns, profile="one")
    set_ = manifests(ns, a={"k": "1"}, b={"k": "1"})
    first = await deliver(targets, set_, inventory.provider_file)
    assert set(table(first).values()) == {"created"}
    sent = await applies_of_configmaps(inventory, 0)
    stored = await member_configmap(inventory, 0, "a")

    again = await deliver(targets, set_, inventory.provider_file)
    assert set(table(again).values()) == {"unchanged"}
    assert await applies_of_configmaps(inventory, 0) == sent  # nothing was sent
    assert (await member_configmap(inventory, 0, "a"))["metadata"]["resourceVersion"] == stored[
        "metadata"
    ]["resourceVersion"]

    # drift: someone removes a key we own; only that object is applied, and repaired
    async with await inventory.member(0).client() as admin:
        await kube.request(
            admin,
            "PATCH",
            kube.CONFIG_MAPS.path(ns, "a"),
            body={"data": {"k": None}},
            content_type="application/merge-patch+json",
        )
    sent = await applies_of_configmaps(inventory, 0)
    repaired = await deliver(targets, set_, inventory.provider_file)
    assert table(repaired)[("one", "configmap/a")] == "configured"
    assert table(repaired)[("one", "configmap/b")] == "unchanged"
    assert (await member_configmap(inventory, 0, "a"))["data"] == {"k": "1"}
    assert await applies_of_configmaps(inventory, 0) == sent + 1

    # a key dropped from the manifest is removed from the member
    smaller = manifests(ns, a={}, b={"k": "1"})
    dropped = await deliver(targets, smaller, inventory.provider_file)
    assert table(dropped)[("one", "configmap/a")] == "configured"
    assert (await member_configmap(inventory, 0, "a")).get("data") in (None, {})

    # --no-skip-unchanged sends every apply, as kubectl does, and still reports unchanged
    before = await applies_of_configmaps(inventory, 0)
    always = await deliver(targets, smaller, inventory.provider_file, skip_unchanged=False)
    assert set(table(always).values()) == {"unchanged"}
    assert await applies_of_configmaps(inventory, 0) == before + 2


async def test_a_credential_that_may_not_list_reads_objects_one_by_one(
    inventory: Inventory,
) -> None:
    ns = inventory.namespace
    member = inventory.member(0)
    await inventory.publish("one", member)
    async with await member.client() as admin:  # get, create and patch, but no list
        await kube.apply(
            admin,
            kube.ROLES,
            {
                "metadata": {"name": ACCOUNT, "namespace": ns},
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["configmaps", "serviceaccounts"],
                        "verbs": ["get", "create", "patch"],
                    }
                ],
            },
            field_manager="test",
        )
    conn = kube.ClusterConnection(
        server=member.server, ca_data=member.ca_pem, token=await inventory.token(member)
    )
    async with await kube.new_client(conn) as consumer:

        async def list_refused() -> bool:
            try:
                await kube.list_objects(consumer, kube.CONFIG_MAPS, ns)
            except kube.ForbiddenError:
                return True
            return False

        await eventually(list_refused, what="the Role without list in effect")
    targets = await select_profiles(inventory.hub, ns, profile="one")
    set_ = manifests(ns, a={"k": "1"}, b={"k": "1"})
    first = await deliver(targets, set_, inventory.provider_file)
    assert set(table(first).values()) == {"created"}, first
    sent = await applies_of_configmaps(inventory, 0)
    again = await deliver(targets, set_, inventory.provider_file)
    assert set(table(again).values()) == {"unchanged"}, again
    assert await applies_of_configmaps(inventory, 0) == sent
    changed = await deliver(
        targets, manifests(ns, a={"k": "2"}, b={"k": "1"}), inventory.provider_file
    )
    assert table(changed)[("one", "configmap/a")] == "configured"
    assert table(changed)[("one", "configmap/b")] == "unchanged"


async def test_apply_command_to_a_selector_and_to_a_placement(
    inventory: Inventory, tmp_path: Path
) -> None:
    ns = inventory.namespace
    hub = inventory.hub
    await inventory.publish("prod-a", inventory.member(0))
    await inventory.publish("prod-b", inventory.member(1))
    await inventory.publish("dev-a", inventory.member(0))
    for name, env in (("prod-a", "prod"), ("prod-b", "prod"), ("dev-a", "dev")):
        await kube.request(
            hub,
            "PATCH",
            kube.CLUSTER_PROFILES.path(ns, name),
            body={"metadata": {"labels": {"env": env}}},
            content_type="application/merge-patch+json",
        )
    file = tmp_path / "set.yaml"
    file.write_text(yaml.safe_dump_all([m.obj for m in manifests(ns, web={"color": "blue"})]))
    common = [
        "-f",
        str(file),
        "-n",
        ns,
        "--provider-file",
        str(inventory.provider_file),
        "--kubeconfig",
        str(inventory.fleet.hub.kubeconfig_path),
    ]

    by_label = await asyncio.to_thread(cli, "apply", *common, "-l", "env=prod")
    assert by_label.returncode == 0, by_label.stderr
    lines = by_label.stdout.splitlines()
    assert lines[0].split() == ["CLUSTER", "NAMESPACE", "OBJECT", "RESULT"]
    rows = sorted(tuple(line.split()) for line in lines[1:])
    assert rows == [
        (f"{ns}/prod-a", ns, "configmap/web", "created"),
        (f"{ns}/prod-a", ns, "serviceaccount/web", "created"),
        (f"{ns}/prod-b", ns, "configmap/web", "created"),
        (f"{ns}/prod-b", ns, "serviceaccount/web", "created"),
    ]
    assert "2 cluster(s), 0 failed" in by_label.stderr

    # a placement's decision (two slices, as a scheduler writes them) names prod-b and dev-a
    for index, name in enumerate(("prod-b", "dev-a")):
        await kube.apply(
            hub,
            kube.PLACEMENT_DECISIONS,
            {
                "metadata": {
                    "name": f"web-{index}",
                    "namespace": ns,
                    "labels": {LABEL_DECISION_KEY: "web", LABEL_DECISION_INDEX: str(index)},
                },
                "schedulerName": "test",
                "decisions": [{"clusterProfileRef": {"name": name}}],
            },
            field_manager="test",
        )
    by_placement = await asyncio.to_thread(
        cli, "apply", *common, "--placement", "web", "-o", "json"
    )
    assert by_placement.returncode == 0, by_placement.stderr
    got = {(r["cluster"], r["object"]): r["result"] for r in json.loads(by_placement.stdout)}
    assert got == {
        (f"{ns}/prod-b", "configmap/web"): "unchanged",
        (f"{ns}/prod-b", "serviceaccount/web"): "unchanged",
        (f"{ns}/dev-a", "configmap/web"): "unchanged",  # dev-a's member is prod-a's
        (f"{ns}/dev-a", "serviceaccount/web"): "unchanged",
    }
    none = await asyncio.to_thread(cli, "apply", *common, "--placement", "nothing")
    assert none.returncode == 1
    assert none.stderr == f"error: no PlacementDecision with decision-key nothing in {ns}\n"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_refused_manifest_and_an_unreachable_member_fail_only_their_rows(
    inventory: Inventory, tmp_path: Path
) -> None:
    ns = inventory.namespace
    member = inventory.member(0)
    await inventory.publish("good", member)
    await inventory.publish("gone", member)
    dead = f"https://127.0.0.1:{closed_port()}"
    await inventory.patch_status(
        "gone",
        {
            "accessProviders": [
                {
                    "name": "secretreader",
                    "cluster": {
                        "server": dead,
                        "certificate-authority-data": base64.b64encode(member.ca_pem).decode(),
                        "extensions": [
                            {"name": EXTENSION_EXEC, "extension": {"clusterName": "gone"}}
                        ],
                    },
                }
            ]
        },
    )
    objs = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "fine", "namespace": ns},
            "data": {"k": "v"},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "refused", "namespace": ns},
            "data": {"bad key!": "v"},
        },
    ]
    file = tmp_path / "set.yaml"
    file.write_text(yaml.safe_dump_all(objs))
    result = await asyncio.to_thread(
        cli,
        "apply",
        "-f",
        str(file),
        "-n",
        ns,
        "-l",
        "",
        "--timeout",
        "20",
        "--provider-file",
        str(inventory.provider_file),
        "--kubeconfig",
        str(inventory.fleet.hub.kubeconfig_path),
        "-o",
        "json",
    )
    assert result.returncode == 1, result.stderr
    rows = {(r["cluster"].rpartition("/")[2], r["object"]): r for r in json.loads(result.stdout)}
    assert rows[("good", "configmap/fine")]["result"] == "created"
    refused = rows[("good", "configmap/refused")]
    assert refused["result"] == "failed"
    assert "data[bad key!]" in refused["message"] and "(422 Invalid)" in refused["message"]
    for obj in ("configmap/fine", "configmap/refused"):
        gone = rows[("gone", obj)]
        assert gone["result"] == "failed" and dead.removeprefix("https://") in gone["message"]
        assert "unreachable" in gone["message"]
    assert "2 cluster(s), 2 failed" in result.stderr


async def test_prune_removes_exactly_the_object_dropped_from_the_set(inventory: Inventory) -> None:
    ns = inventory.namespace
    await inventory.publish("one", inventory.member(0))
    targets = await select_profiles(inventory.hub, ns, profile="one")
    applyset = ApplySet(name="web-set", namespace=ns)
    async with await inventory.member(0).client() as admin:
        # objects that must survive: unlabelled, and part of another ApplySet
        for name, labels in (
            ("bystander", {}),
            ("other-set", {APPLYSET_PART_OF: ApplySet(name="x", namespace=ns).id}),
        ):
            await kube.apply(
                admin,
                kube.CONFIG_MAPS,
                {"metadata": {"name": name, "namespace": ns, "labels": labels}},
                field_manager="test",
            )
        first = await deliver(
            targets, manifests(ns, a={}, b={}), inventory.provider_file, applyset=applyset
        )
        assert {r.action for r in first} == {"created"}
        parent = await kube.get(admin, kube.CONFIG_MAPS, "web-set", ns)
        assert parent["metadata"]["labels"][APPLYSET_ID_LABEL] == applyset.id
        assert parent["metadata"]["annotations"][APPLYSET_GROUP_KINDS] == "ConfigMap,ServiceAccount"

        dry = await deliver(
            targets, manifests(ns, a={}), inventory.provider_file, applyset=applyset, dry_run=True
        )
        assert table(dry)[("one", "configmap/b")] == "pruned"
        await kube.get(admin, kube.CONFIG_MAPS, "b", ns)  # still there after the dry run

        second = await deliver(
            targets, manifests(ns, a={}), inventory.provider_file, applyset=applyset
        )
        assert table(second) == {
            ("one", "configmap/a"): "unchanged",
            ("one", "serviceaccount/web"): "unchanged",
            ("one", "configmap/b"): "pruned",
        }
        left = await kube.list_objects(admin, kube.CONFIG_MAPS, ns)
        names = {o["metadata"]["name"] for o in left["items"]}
        assert {"a", "bystander", "other-set", "web-set"} <= names and "b" not in names
        await kube.get(admin, kube.SERVICE_ACCOUNTS, "web", ns)

        # kubectl computes the same ApplySet id for a parent of the same name and namespace
        kset = inventory.member(0)
        file = Path(os.environ.get("TMPDIR", "/tmp")) / f"{ns}-kubectl.yaml"
        file.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "k1", "namespace": ns},
                }
            )
        )
        try:
            run = await asyncio.to_thread(
                subprocess.run,
                [
                    str(find_binary("kubectl")),
                    "--kubeconfig",
                    str(kset.kubeconfig_path),
                    "apply",
                    "--server-side",
                    "--prune",
                    "--applyset=configmaps/kubectl-set",
                    "-n",
                    ns,
                    "-f",
                    str(file),
                ],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
                env={**os.environ, "KUBECTL_APPLYSET": "true"},
                stdin=subprocess.DEVNULL,
            )
        finally:
            file.unlink()
        assert run.returncode == 0, run.stderr
        theirs = await kube.get(admin, kube.CONFIG_MAPS, "kubectl-set", ns)
        assert (
            theirs["metadata"]["labels"][APPLYSET_ID_LABEL]
            == ApplySet(name="kubectl-set", namespace=ns).id
        )


async def test_crds_and_namespaces_are_applied_before_what_needs_them(inventory: Inventory) -> None:
    suffix = inventory.namespace[-8:]
    group = f"t{suffix}.example.com"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "names": {
                "kind": "Widget",
                "plural": "widgets",
                "singular": "widget",
                "listKind": "WidgetList",
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    ns = f"apply-{suffix}"
    objs = [  # in the wrong order on purpose
        {
            "apiVersion": f"{group}/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": ns},
            "spec": {"size": 1},
        },
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": ns}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        crd,
    ]
    set_ = [Manifest(obj=o, source=f"t#{i}") for i, o in enumerate(objs)]
    member = inventory.member(1)
    async with await member.client() as admin:
        try:
            rows = await apply_to_member(admin, set_, cluster="member")
            assert [(r.object, r.action) for r in rows] == [
                (f"customresourcedefinition.apiextensions.k8s.io/widgets.{group}", "created"),
                (f"namespace/{ns}", "created"),
                (f"widget.{group}/w", "created"),
                ("configmap/c", "created"),
            ], rows
        finally:
            await kube.delete(admin, kube.CUSTOM_RESOURCE_DEFINITIONS, f"widgets.{group}")
            await kube.delete(admin, kube.NAMESPACES, ns)


def test_load_manifests_reads_files_directories_and_lists(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n"
    )
    (tmp_path / "a.yml").write_text(
        "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n---\n"
    )
    (tmp_path / "notes.txt").write_text("ignored")
    got = load_manifests([tmp_path])
    assert [(m.ref(), m.source) for m in got] == [
        ("namespace/n", f"{tmp_path / 'a.yml'}#1"),
        ("configmap/x", f"{tmp_path / 'b.yaml'}#1 items[0]"),
    ]


async def test_watch_mode_applies_on_engage_and_repairs_drift(
    inventory: Inventory, fleet_manager: Any
) -> None:
    ns = inventory.namespace
    await inventory.publish("one", inventory.member(0))
    fm = fleet_manager()
    reports: list[tuple[str, str, str]] = []
    delivery = FleetDelivery(
        fm,
        manifests(ns, a={"k": "1"}, b={"k": "1"}),
        resync=3600,
        on_report=lambda cluster, rows: reports.extend((cluster, r.object, r.action) for r in rows),
    )
    await fm.start()

    async def present(name: str, data: dict[str, str]) -> bool:
        found = await member_configmap(inventory, 0, name)
        return found is not None and found.get("data") == data

    await eventually(lambda: present("a", {"k": "1"}), what="the set applied on engagement")
    await eventually(lambda: delivery.summary() == {f"{ns}/one": {"created": 3}}, what="state")
    async with await inventory.member(0).client() as admin:
        await kube.delete(admin, kube.CONFIG_MAPS, "a", ns)
        await eventually(lambda: present("a", {"k": "1"}), what="a deleted object put back")
        await kube.request(
            admin,
            "PATCH",
            kube.CONFIG_MAPS.path(ns, "b"),
            body={"data": {"k": "edited"}},
            content_type="application/merge-patch+json",
        )
        await eventually(lambda: present("b", {"k": "1"}), what="an edited object repaired")
    assert (f"{ns}/one", "configmap/a", "created") in reports[3:]
    assert (f"{ns}/one", "configmap/b", "configured") in reports[3:]
    # leaving the fleet: forgotten, nothing deleted on the member
    await inventory.set_healthy("one", False)
    await inventory.delete("one")
    await eventually(lambda: delivery.summary() == {}, what="the cluster forgotten")
    assert await present("a", {"k": "1"})


async def test_fleet_manager_engages_only_the_clusters_of_a_placement(
    inventory: Inventory, fleet_manager: Any
) -> None:
    ns = inventory.namespace
    await inventory.publish("one", inventory.member(0))
    await inventory.publish("two", inventory.member(1))

    async def decide(*names: str) -> None:
        await kube.apply(
            inventory.hub,
            kube.PLACEMENT_DECISIONS,
            {
                "metadata": {
                    "name": "web-0",
                    "namespace": ns,
                    "labels": {LABEL_DECISION_KEY: "web", LABEL_DECISION_INDEX: "0"},
                },
                "schedulerName": "test",
                "decisions": [{"clusterProfileRef": {"name": n}} for n in names],
            },
            field_manager="test",
            force=True,
        )

    await decide("one")
    fm = fleet_manager(placement=(ns, "web"))
    await fm.start()
    await eventually(lambda: set(fm.clusters) == {f"{ns}/one"}, what="only one engaged")
    await decide("two")
    await eventually(lambda: set(fm.clusters) == {f"{ns}/two"}, what="two replaces one")
    await kube.delete(inventory.hub, kube.PLACEMENT_DECISIONS, "web-0", ns)
    await eventually(lambda: not fm.clusters, what="nothing engaged without a decision")


async def test_apply_watch_command_applies_and_stops_on_sigterm(
    inventory: Inventory, tmp_path: Path
) -> None:
    ns = inventory.namespace
    await inventory.publish("one", inventory.member(0))
    file = tmp_path / "set.yaml"
    file.write_text(yaml.safe_dump_all([m.obj for m in manifests(ns, w={"k": "1"})]))
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cluster_inventory.cli", "apply", "--watch", "-f", str(file),
        "-n", ns, "--profile", "one", "--provider-file", str(inventory.provider_file),
        "--kubeconfig", str(inventory.fleet.hub.kubeconfig_path),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        await eventually(
            lambda: member_configmap(inventory, 0, "w"), timeout=60, what="applied by --watch"
        )
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode == 0, err.decode()
    assert f"{ns}/one  {ns}  configmap/w  created" in out.decode()

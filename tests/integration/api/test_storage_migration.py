"""`crds migrate` on real hubs: storage to v1alpha2 and back with objects in place.

Each test changes its hub's CRDs, so each has a control plane of its own. What is checked on
the hub after each move: every object keeps its uid and its content (read through v1alpha1,
which names every field), every object was rewritten (its resourceVersion moved), and the
CRD stores the target version alone (``status.storedVersions``). The attacker: a namespace
writer whose profile holds v1alpha1-only fields, which would be dropped by the move.

The ``None`` conversion (no webhook) is checked too: a read through v1alpha2 shows exactly
what the pruning walk (``kube._pruning``) says it keeps, and any write through v1alpha2,
even of ``spec`` alone, drops ``status.credentialProviders`` whatever the storage version.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from pathlib import Path
from typing import Any

from cluster_inventory import api, kube
from cluster_inventory.api.constants import LABEL_CLUSTER_MANAGER
from cluster_inventory.testing import ControlPlane, Etcd
from tests.support.hub.crd_versions import DECISIONS_CRD, PROFILES_CRD, storage_of
from tests.support.processes.cli import cli
from tests.support.waiting import eventually

PROFILES_V2 = dataclasses.replace(kube.CLUSTER_PROFILES, version="v1alpha2")
KIND = "customresourcedefinition.apiextensions.k8s.io"
_CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="


def _status(name: str) -> dict[str, Any]:
    exec_extension = {
        "name": "client.authentication.k8s.io/exec",
        "extension": {"clusterName": name, "audience": ["a", "b"]},
    }
    return {
        "version": {"kubernetes": "v1.36.3"},
        "conditions": [
            {
                "type": "ControlPlaneHealthy",
                "status": "True",
                "reason": "Healthy",
                "message": "/readyz is ok",
                "lastTransitionTime": "2026-11-01T08:00:00Z",
                "observedGeneration": 1,
            }
        ],
        "properties": [{"name": "cluster.clusterset.k8s.io", "value": name}],
        "accessProviders": [
            {
                "name": "secretreader",
                "cluster": {
                    "server": f"https://{name}.example.com:6443",
                    "certificate-authority-data": _CA,
                    "tls-server-name": f"{name}.internal",
                    "proxy-url": "socks5://127.0.0.1:1080",
                    "extensions": [exec_extension],
                },
            }
        ],
    }


async def _profile(
    client: kube.ApiClient, namespace: str, name: str, status: dict[str, Any]
) -> None:
    body = {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {LABEL_CLUSTER_MANAGER: "m", "env": "prod"},
            "annotations": {"note": name},
        },
        "spec": {"displayName": name.title(), "clusterManager": {"name": "m"}},
    }
    await kube.apply(client, kube.CLUSTER_PROFILES, body, field_manager="m")
    await kube.apply(
        client,
        kube.CLUSTER_PROFILES,
        {**body, "status": status},
        field_manager="m",
        subresource="status",
    )


async def _inventory(client: kube.ApiClient) -> None:
    """Profiles in two inventories and a PlacementDecision, as a manager and scheduler leave them."""
    await kube.ensure_crds(client, api.load_crds())
    for namespace, names in (("inv-a", ("east", "west")), ("inv-b", ("north",))):
        await kube.apply(
            client, kube.NAMESPACES, {"metadata": {"name": namespace}}, field_manager="t"
        )
        for name in names:
            await _profile(client, namespace, name, _status(name))
    decision = {
        "metadata": {"name": "web-0", "namespace": "inv-a", "labels": {"a": "b"}},
        "decisions": [
            {"clusterProfileRef": {"name": "east", "namespace": "inv-a"}, "reason": "chosen"}
        ],
    }
    await kube.apply(client, kube.PLACEMENT_DECISIONS, decision, field_manager="scheduler")


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    """What an object holds: everything but its apiVersion and what the server moves."""
    kept = copy.deepcopy(obj)
    kept.pop("apiVersion", None)
    for key in ("resourceVersion", "managedFields"):
        kept["metadata"].pop(key)
    return kept


async def _snapshot(client: kube.ApiClient, resource: kube.Resource) -> dict[str, Any]:
    listed = await kube.list_objects(client, resource)
    return {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": (
            o["metadata"]["resourceVersion"],
            _content(o),
        )
        for o in listed["items"]
    }


def _same_objects_all_rewritten(before: dict[str, Any], after: dict[str, Any]) -> None:
    assert after.keys() == before.keys()
    for key, (rv, content) in before.items():
        assert after[key][1] == content, key  # uid, labels, spec, status: all kept
        assert after[key][0] != rv, key  # rewritten into the new storage version


async def test_migrate_to_v1alpha2_and_back_with_objects_in_place() -> None:
    async with ControlPlane("migrate-both-ways") as hub, await hub.client() as client:
        kubeconfig = str(hub.kubeconfig_path)
        await _inventory(client)
        profiles = await _snapshot(client, kube.CLUSTER_PROFILES)
        decisions = await _snapshot(client, kube.PLACEMENT_DECISIONS)

        moved = await asyncio.to_thread(cli, "crds", "migrate", "--kubeconfig", kubeconfig)

        assert moved.returncode == 0, moved.stderr
        assert moved.stdout.splitlines()[:2] == [
            f"{KIND}/{PROFILES_CRD} migrated: storage v1alpha1 -> v1alpha2, "
            "storedVersions ['v1alpha1'] -> ['v1alpha2']",
            "  objects: 3 (3 rewritten, 0 already stored as v1alpha2, "
            "0 written by others meanwhile)",
        ]
        for crd in (PROFILES_CRD, DECISIONS_CRD):
            assert await storage_of(client, crd) == ("v1alpha2", ["v1alpha2"])
        stored = await kube.get(client, kube.CUSTOM_RESOURCE_DEFINITIONS, PROFILES_CRD)
        (migrating,) = [
            c for c in stored["status"]["conditions"] if c["type"] == "StorageMigrating"
        ]
        assert (migrating["status"], migrating["reason"]) == ("False", "MigrationSucceeded")
        assert migrating["observedGeneration"] == stored["metadata"]["generation"]
        moved_profiles = await _snapshot(client, kube.CLUSTER_PROFILES)
        _same_objects_all_rewritten(profiles, moved_profiles)
        _same_objects_all_rewritten(decisions, await _snapshot(client, kube.PLACEMENT_DECISIONS))
        # Nothing of these profiles is v1alpha1-only: v1alpha2 reads them whole.
        assert {k: c for k, (_, c) in (await _snapshot(client, PROFILES_V2)).items()} == {
            k: c for k, (_, c) in moved_profiles.items()
        }

        again = await asyncio.to_thread(cli, "crds", "migrate", "--kubeconfig", kubeconfig)

        assert again.returncode == 0, again.stderr
        assert f"{KIND}/{PROFILES_CRD} unchanged: stored as v1alpha2 alone" in again.stdout
        assert await _snapshot(client, kube.CLUSTER_PROFILES) == moved_profiles  # no writes

        back = await asyncio.to_thread(
            cli, "crds", "migrate", "--to", "v1alpha1", "--kubeconfig", kubeconfig
        )

        assert back.returncode == 0, back.stderr
        assert "storage v1alpha2 -> v1alpha1, storedVersions ['v1alpha2'] -> ['v1alpha1']" in (
            back.stdout
        )
        for crd in (PROFILES_CRD, DECISIONS_CRD):
            assert await storage_of(client, crd) == ("v1alpha1", ["v1alpha1"])
        _same_objects_all_rewritten(moved_profiles, await _snapshot(client, kube.CLUSTER_PROFILES))


async def test_a_namespace_writers_v1alpha1_only_fields_stop_the_move_until_dropped_on_purpose() -> (
    None
):
    async with ControlPlane("migrate-tenant") as hub, await hub.client() as admin:
        kubeconfig = str(hub.kubeconfig_path)
        await _inventory(admin)
        await kube.apply(
            admin, kube.NAMESPACES, {"metadata": {"name": "tenant"}}, field_manager="t"
        )
        role = {
            "metadata": {"name": "profiles", "namespace": "tenant"},
            "rules": [
                {
                    "apiGroups": [api.GROUP],
                    "resources": ["clusterprofiles", "clusterprofiles/status"],
                    "verbs": ["get", "create", "patch"],
                }
            ],
        }
        binding = {
            "metadata": {"name": "profiles", "namespace": "tenant"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "profiles",
            },
            "subjects": [
                {"kind": "User", "name": "tenant", "apiGroup": "rbac.authorization.k8s.io"}
            ],
        }
        await kube.apply(admin, kube.ROLES, role, field_manager="t")
        await kube.apply(admin, kube.ROLE_BINDINGS, binding, field_manager="t")
        planted = _status("east")
        planted["accessProviders"][0]["cluster"]["certificate-authority"] = "/etc/ca.pem"
        planted["credentialProviders"] = [
            {"name": "legacy", "cluster": {"server": "https://legacy.example.com"}}
        ]
        async with await hub.client(user="tenant") as tenant:

            async def plant() -> bool:
                await _profile(tenant, "tenant", "east", copy.deepcopy(planted))
                return True

            await eventually(plant, what="the tenant's profile, once its Role is in force")
        before = await _snapshot(admin, kube.CLUSTER_PROFILES)
        crd_before = await kube.get(admin, kube.CUSTOM_RESOURCE_DEFINITIONS, PROFILES_CRD)

        refused = await asyncio.to_thread(cli, "crds", "migrate", "--kubeconfig", kubeconfig)

        assert refused.returncode == 1
        assert (
            f"error: CustomResourceDefinition {PROFILES_CRD}: objects hold fields v1alpha2 "
            "cannot store, which a rewrite would drop; nothing was changed (--drop-fields drops "
            "them)\n  tenant/east: status.accessProviders[0].cluster.certificate-authority, "
            "status.credentialProviders\n"
        ) in refused.stderr
        assert "Traceback" not in refused.stderr
        # Nothing changed: the CRD (its storage, its generation) and every profile.
        crd_after = await kube.get(admin, kube.CUSTOM_RESOURCE_DEFINITIONS, PROFILES_CRD)
        assert crd_after["metadata"]["generation"] == crd_before["metadata"]["generation"]
        assert await storage_of(admin, PROFILES_CRD) == ("v1alpha1", ["v1alpha1"])
        assert await _snapshot(admin, kube.CLUSTER_PROFILES) == before
        # One CRD refused does not stop the other.
        assert await storage_of(admin, DECISIONS_CRD) == ("v1alpha2", ["v1alpha2"])

        dropped = await asyncio.to_thread(
            cli, "crds", "migrate", "clusterprofiles", "--drop-fields", "--kubeconfig", kubeconfig
        )

        assert dropped.returncode == 0, dropped.stderr
        assert dropped.stdout.splitlines()[2:] == [
            "  dropped tenant/east: status.accessProviders[0].cluster.certificate-authority",
            "  dropped tenant/east: status.credentialProviders",
        ]
        assert await storage_of(admin, PROFILES_CRD) == ("v1alpha2", ["v1alpha2"])
        east = await kube.get(admin, kube.CLUSTER_PROFILES, "east", namespace="tenant")
        assert "credentialProviders" not in east["status"]
        assert east["status"]["accessProviders"] == _status("east")["accessProviders"]


async def test_the_none_conversion_drops_what_one_version_lacks() -> None:
    async with ControlPlane("none-conversion") as hub, await hub.client() as client:
        await _inventory(client)
        status = _status("legacy")
        status["accessProviders"][0]["cluster"]["certificate-authority"] = "/etc/ca.pem"
        status["credentialProviders"] = copy.deepcopy(status["accessProviders"])
        await _profile(client, "inv-a", "legacy", status)
        full = await kube.get(client, kube.CLUSTER_PROFILES, "legacy", namespace="inv-a")
        assert full["status"]["credentialProviders"]

        # A read through v1alpha2 is the stored object less what the walk says v1alpha2 drops.
        crd = await kube.get(client, kube.CUSTOM_RESOURCE_DEFINITIONS, PROFILES_CRD)
        (v2,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2"]
        lost = kube.dropped_fields(full, v2["schema"]["openAPIV3Schema"])
        assert lost == [
            "status.accessProviders[0].cluster.certificate-authority",
            "status.credentialProviders",
        ]
        expected = _content(full)
        del expected["status"]["credentialProviders"]
        del expected["status"]["accessProviders"][0]["cluster"]["certificate-authority"]
        through_v2 = await kube.get(client, PROFILES_V2, "legacy", namespace="inv-a")
        assert _content(through_v2) == expected

        # Any write through v1alpha2, even one of spec only, stores what v1alpha2 read.
        await kube.apply(
            client,
            PROFILES_V2,
            {"metadata": {"name": "legacy", "namespace": "inv-a"}, "spec": {"displayName": "L"}},
            field_manager="a-v1alpha2-client",
        )
        after = await kube.get(client, kube.CLUSTER_PROFILES, "legacy", namespace="inv-a")
        assert "credentialProviders" not in after["status"]
        assert "certificate-authority" not in after["status"]["accessProviders"][0]["cluster"]


#: kube-apiserver serving KEP-4192's API (beta in 1.35, off by default).
_SVM_API = (
    "--runtime-config=storagemigration.k8s.io/v1beta1=true",
    "--feature-gates=StorageVersionMigrator=true",
)
#: kube-controller-manager's migrator: its gate, and the garbage collector whose graph it reads.
_SVM_CONTROLLERS = ("garbagecollector", "storage-version-migrator-controller")


async def test_migrate_hands_the_rewrite_to_the_hubs_storage_version_migration(
    tmp_path: Path,
) -> None:
    etcd = Etcd(tmp_path / "etcd", name="svm-etcd")
    await etcd.start()
    try:
        # The CRDs and objects exist before kube-controller-manager starts, as on a hub that
        # has run a while (its garbage collector, which the migrator reads, knows them).
        async with ControlPlane("svm-hub", etcd=etcd) as first, await first.client() as client:
            await _inventory(client)
            before = await _snapshot(client, kube.CLUSTER_PROFILES)
        async with (
            ControlPlane(
                "svm-hub",
                etcd=etcd,
                controllers=_SVM_CONTROLLERS,
                extra_apiserver_args=_SVM_API,
                extra_controller_manager_args=[_SVM_API[1]],
            ) as hub,
            await hub.client() as client,
        ):
            moved = await asyncio.to_thread(
                cli, "crds", "migrate", "clusterprofiles", "--kubeconfig", str(hub.kubeconfig_path)
            )

            assert moved.returncode == 0, moved.stderr
            lines = moved.stdout.splitlines()
            assert lines[0] == (
                f"{KIND}/{PROFILES_CRD} migrated: storage v1alpha1 -> v1alpha2, "
                "storedVersions ['v1alpha1'] -> ['v1alpha2']"
            )
            assert lines[1].startswith(
                "  note: rewritten by StorageVersionMigration clusterprofiles-"
            )
            (svm,) = (await kube.list_objects(client, kube.STORAGE_VERSION_MIGRATIONS))["items"]
            succeeded = {c["type"]: c["status"] for c in svm["status"]["conditions"]}
            assert succeeded == {"Running": "False", "Succeeded": "True"}
            assert await storage_of(client, PROFILES_CRD) == ("v1alpha2", ["v1alpha2"])
            _same_objects_all_rewritten(before, await _snapshot(client, kube.CLUSTER_PROFILES))
    finally:
        await etcd.stop()


async def test_without_a_controller_migrate_rewrites_itself_and_keeps_what_v1alpha2_lacks() -> None:
    async with (
        ControlPlane("svm-no-controller", extra_apiserver_args=_SVM_API) as hub,
        await hub.client() as client,
    ):
        await _inventory(client)
        legacy = _status("legacy")
        legacy["credentialProviders"] = [{"name": "old", "cluster": {"server": "https://old"}}]
        await _profile(client, "inv-b", "legacy", legacy)
        # Storage moved to v1alpha2 by hand, objects left as they were stored: the legacy
        # profile is still stored as v1alpha1, whole.
        crd = await kube.get(client, kube.CUSTOM_RESOURCE_DEFINITIONS, PROFILES_CRD)
        for version in crd["spec"]["versions"]:
            version["storage"] = version["name"] == "v1alpha2"
        body = {"metadata": {"name": PROFILES_CRD}, "spec": {"versions": crd["spec"]["versions"]}}
        await kube.apply(client, kube.CUSTOM_RESOURCE_DEFINITIONS, body, field_manager="someone")
        assert await storage_of(client, PROFILES_CRD) == ("v1alpha2", ["v1alpha1", "v1alpha2"])

        back = await kube.migrate_storage(client, PROFILES_CRD, "v1alpha1", api_grace=1)

        # kube-controller-manager's migrator would rewrite through v1alpha2, the preferred
        # version, and lose the legacy providers: the rewrite went through v1alpha1 here.
        assert back.engine == "rewrite"
        assert back.notes == (
            "the hub's StorageVersionMigration rewrites through v1alpha2, which would drop "
            "more than v1alpha1 does: rewritten here, through v1alpha1",
        )
        kept = await kube.get(client, kube.CLUSTER_PROFILES, "legacy", namespace="inv-b")
        assert kept["status"]["credentialProviders"] == legacy["credentialProviders"]
        assert await storage_of(client, PROFILES_CRD) == ("v1alpha1", ["v1alpha1"])
        assert (await kube.list_objects(client, kube.STORAGE_VERSION_MIGRATIONS))["items"] == []

        await kube.delete(client, kube.CLUSTER_PROFILES, "legacy", namespace="inv-b")
        forward = await kube.migrate_storage(client, PROFILES_CRD, "v1alpha2", api_grace=1)

        # The API is served, but no kube-controller-manager runs its migrator.
        assert forward.engine == "rewrite"
        assert forward.notes == (
            "the hub serves storagemigration.k8s.io/v1beta1 but no controller gave a "
            "StorageVersionMigration a status within 1 s: rewritten here",
        )
        assert (forward.objects, forward.rewritten) == (3, 3)
        assert await storage_of(client, PROFILES_CRD) == ("v1alpha2", ["v1alpha2"])
        assert (await kube.list_objects(client, kube.STORAGE_VERSION_MIGRATIONS))["items"] == []

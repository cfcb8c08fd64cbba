"""`crds apply` on hubs whose CRDs others changed: storage never moves back, nothing is taken.

Each test breaks its hub's CRDs, so each has a control plane of its own. The attackers (or
merely the other tools): `crds migrate` having moved ClusterProfile to v1alpha2; upstream's
README `kubectl apply -f` of a v1alpha1-only CRD (field manager `kubectl-client-side-apply`);
a newer release storing a version this one does not know.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from cluster_inventory import api, kube
from cluster_inventory.testing import ControlPlane
from tests.support.hub.crd_versions import (
    DECISIONS_CRD,
    PROFILES_CRD,
    kubectl_apply,
    served,
    storage_of,
    v1alpha1_only,
)
from tests.support.processes.cli import cli

KIND = "customresourcedefinition.apiextensions.k8s.io"


def _ours(name: str) -> dict[str, Any]:
    return next(c for c in api.load_crds() if c["metadata"]["name"] == name)


def _spec(crd: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """What a write would change: the generation and the spec (status moves by itself)."""
    return crd["metadata"]["generation"], crd["spec"]


async def _store_as(client: kube.ApiClient, crd: dict[str, Any], version: str) -> None:
    """Mark ``version`` the storage version and leave it alone in storedVersions."""
    moved = copy.deepcopy(crd)
    for v in moved["spec"]["versions"]:
        v["storage"] = v["name"] == version
    await kube.apply(client, kube.CUSTOM_RESOURCE_DEFINITIONS, moved, field_manager="someone")
    live = await kube.get(client, kube.CUSTOM_RESOURCE_DEFINITIONS, crd["metadata"]["name"])
    await kube.apply(
        client,
        kube.CUSTOM_RESOURCE_DEFINITIONS,
        {
            "metadata": {"name": crd["metadata"]["name"]},
            "status": {"storedVersions": [version], "conditions": live["status"]["conditions"]},
        },
        field_manager="someone",
        subresource="status",
    )


async def test_a_hub_storing_v1alpha2_keeps_it_through_crds_apply() -> None:
    async with ControlPlane("crds-keep-v1alpha2") as hub, await hub.client() as client:
        await kube.ensure_crds(client, api.load_crds())
        await _store_as(client, _ours(PROFILES_CRD), "v1alpha2")
        assert await storage_of(client, PROFILES_CRD) == ("v1alpha2", ["v1alpha2"])

        applied = cli("crds", "apply", "--kubeconfig", str(hub.kubeconfig_path))

        assert applied.returncode == 0, applied.stderr
        # Nothing is stored as v1alpha1 again: storedVersions does not grow back.
        assert await storage_of(client, PROFILES_CRD) == ("v1alpha2", ["v1alpha2"])
        assert await storage_of(client, DECISIONS_CRD) == ("v1alpha1", ["v1alpha1"])
        assert f"{KIND}/{PROFILES_CRD} unchanged" in applied.stdout
        assert "note: storage stays v1alpha2, the hub's; this release stores v1alpha1" in (
            applied.stdout
        )


async def test_crds_apply_takes_no_field_kubectl_owns_without_force_conflicts(
    tmp_path: Path,
) -> None:
    async with ControlPlane("crds-kubectl-owned") as hub, await hub.client() as client:
        kubeconfig = str(hub.kubeconfig_path)
        # Upstream's README way: kubectl apply -f, v1alpha1 only for the multicluster ones.
        kubectl_apply(hub, v1alpha1_only(), tmp_path)
        before = await kube.get(client, kube.CUSTOM_RESOURCE_DEFINITIONS, PROFILES_CRD)

        refused = cli("crds", "apply", "--kubeconfig", kubeconfig)

        assert refused.returncode == 1
        for name in (PROFILES_CRD, DECISIONS_CRD):
            assert (
                f"error: CustomResourceDefinition {name}: not applied: it would change fields "
                "another field manager owns: .spec.versions (managed by "
                "kubectl-client-side-apply); --force-conflicts takes them over"
            ) in refused.stderr
        assert "Traceback" not in refused.stderr
        # Same content elsewhere: shared ownership, no conflict, nothing changed.
        assert f"{KIND}/clusterproperties.about.k8s.io unchanged" in refused.stdout
        assert _spec(await kube.get(client, kube.CUSTOM_RESOURCE_DEFINITIONS, PROFILES_CRD)) == (
            _spec(before)
        )

        dry = cli(
            "crds", "apply", "--force-conflicts", "--dry-run=server", "--kubeconfig", kubeconfig
        )

        assert dry.returncode == 0, dry.stderr
        block = dry.stdout[dry.stdout.index(f"{KIND}/{PROFILES_CRD}") :].splitlines()
        assert block[:3] == [
            f"{KIND}/{PROFILES_CRD} configured (server dry run)",
            "  spec.versions[v1alpha2]: added",
            "  took over .spec.versions from kubectl-client-side-apply",
        ]
        assert _spec(await kube.get(client, kube.CUSTOM_RESOURCE_DEFINITIONS, PROFILES_CRD)) == (
            _spec(before)
        )

        taken = cli("crds", "apply", "--force-conflicts", "--kubeconfig", kubeconfig)

        assert taken.returncode == 0, taken.stderr
        assert f"{KIND}/{PROFILES_CRD} configured" in taken.stdout
        assert "took over .spec.versions from kubectl-client-side-apply" in taken.stdout
        crd = await kube.get(client, kube.CUSTOM_RESOURCE_DEFINITIONS, PROFILES_CRD)
        assert served(crd) == ["v1alpha1", "v1alpha2"]
        owners = {
            m["manager"]: m["fieldsV1"].get("f:spec", {})
            for m in crd["metadata"]["managedFields"]
            if m["operation"] in ("Apply", "Update") and "f:spec" in m.get("fieldsV1", {})
        }
        assert "f:versions" in owners["cluster-inventory"]
        assert "f:versions" not in owners["kubectl-client-side-apply"]

        again = cli("crds", "apply", "--kubeconfig", kubeconfig)

        assert again.returncode == 0, again.stderr
        assert again.stdout.count(" unchanged\n") == len(api.load_crds()), again.stdout


async def test_a_hub_storing_a_version_this_release_does_not_know_is_left_alone() -> None:
    async with ControlPlane("crds-newer-release") as hub, await hub.client() as client:
        newer = copy.deepcopy(_ours(PROFILES_CRD))
        v1beta1 = {**copy.deepcopy(newer["spec"]["versions"][1]), "name": "v1beta1"}
        newer["spec"]["versions"].append(v1beta1)
        for v in newer["spec"]["versions"]:
            v["storage"] = v["name"] == "v1beta1"
        await kube.ensure_crds(client, [newer], field_manager="a-newer-release")
        before = await kube.get(client, kube.CUSTOM_RESOURCE_DEFINITIONS, PROFILES_CRD)

        applied = cli("crds", "apply", "--kubeconfig", str(hub.kubeconfig_path))

        assert applied.returncode == 1
        assert (
            f"error: CustomResourceDefinition {PROFILES_CRD}: the hub stores v1beta1, which this "
            "release does not serve (it serves v1alpha1, v1alpha2)"
        ) in applied.stderr
        assert _spec(await kube.get(client, kube.CUSTOM_RESOURCE_DEFINITIONS, PROFILES_CRD)) == (
            _spec(before)
        )
        # The others were applied all the same.
        assert f"{KIND}/{DECISIONS_CRD} created" in applied.stdout

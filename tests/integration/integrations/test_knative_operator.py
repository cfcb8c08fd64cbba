"""The Knative Operator installs Knative Serving on the member a ClusterProfile of ours names.

The operator (``knative.dev/operator`` v0.50.0, Knative v1.22; built from its module, run
as in :mod:`tests.support.consumers.knative`) watches KnativeServings on the hub. One with
``spec.clusterProfileRef`` makes it read that ClusterProfile (written by our cluster
manager), build the member's config with ``pkg/access`` and our provider file, run our
``cluster-inventory-secretreader`` and apply Serving's release manifests there. The member
is a control plane of its own (Serving's CRDs, cluster roles and webhook configurations
would otherwise stay on a member other tests share); it has no kubelet, so Serving's
Deployments are created but never become available: the operator says so in its status
(``DeploymentsAvailable=False``, "Waiting on deployments: webhook") and never installs what
needs Serving's webhook running (its Certificates), so ``InstallSucceeded`` stays Unknown.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from cluster_inventory import api, kube
from cluster_inventory.api.constants import ANNOTATION_MEMBER_ROLE
from cluster_inventory.testing import DEFAULT_CONTROLLERS, ControlPlane, Fleet
from cluster_inventory_workshop.upstream_crds import KNATIVE_OPERATOR_CRDS, upstream_crd
from tests.support.consumers.knative import (
    DEPLOYMENTS,
    KNATIVE_SERVINGS,
    SERVING_CRD,
    delete_serving,
    running_operator,
)
from tests.support.consumers.kueue import condition
from tests.support.data.provider_files import PLUGIN, provider_file
from tests.support.hub.manager import running_manager
from tests.support.waiting import eventually


async def _deployments(client: kube.ApiClient, ns: str) -> set[str]:
    listed = await kube.list_objects(client, DEPLOYMENTS, ns)
    return {i["metadata"]["name"] for i in listed["items"]}


async def _has_crd(client: kube.ApiClient, name: str) -> bool:
    try:
        await kube.get(client, kube.CUSTOM_RESOURCE_DEFINITIONS, name)
    except kube.NotFoundError:
        return False
    return True


async def test_knative_operator_installs_serving_on_the_member_our_profile_names(
    fleet: Fleet, test_namespace: str, tmp_path: Path
) -> None:
    ns = test_namespace
    short = ns[-8:]
    crds = [await asyncio.to_thread(upstream_crd, name) for name in KNATIVE_OPERATOR_CRDS]
    async with (
        # kube-controller-manager as on a real cluster: Serving ships aggregated ClusterRoles,
        # and the operator cannot re-apply one whose rules the aggregation never filled.
        ControlPlane(f"knative-{short}", controllers=DEFAULT_CONTROLLERS) as member,
        await member.client() as remote,
        running_manager(fleet, ns, member_roles={f"knative-{short}": ("cluster-admin",)}) as h,
    ):
        hub = h.hub_client
        await kube.ensure_crds(hub, crds)
        # The manager mirrors ClusterProperties; the session fleet's members have the CRD.
        await kube.ensure_crds(
            remote, [c for c in api.load_crds() if c["spec"]["group"] == api.ABOUT_GROUP]
        )
        # The operator installs CRDs, cluster roles and webhook configurations on the member:
        # this inventory's consumers get cluster-admin there.
        inventory = await h.inventory(
            "knative", f"knative-{short}", annotations={ANNOTATION_MEMBER_ROLE: "cluster-admin"}
        )
        await h.register("target", member, [f"knative-{short}"])

        async def published() -> bool:
            healthy = await h.condition(inventory, "target", "ControlPlaneHealthy")
            try:
                secret = await kube.get(hub, kube.SECRETS, "target", namespace=inventory)
            except kube.NotFoundError:
                return False
            return bool(healthy and healthy["status"] == "True" and secret.get("data"))

        await eventually(published, timeout=60, what="profile healthy with its token")
        providers = provider_file(
            tmp_path / "providers.json",
            str(PLUGIN),
            ["--namespace", inventory],
            {"KUBECONFIG": str(fleet.hub.kubeconfig_path)},
        )
        serving: dict[str, Any] = {
            "apiVersion": KNATIVE_SERVINGS.api_version,
            "kind": KNATIVE_SERVINGS.kind,
            "metadata": {"name": "knative-serving", "namespace": ns},
            "spec": {
                "version": "1.22",
                "clusterProfileRef": {"name": "target", "namespace": inventory},
                # Kourier: the default ingress (Istio) needs Istio's CRDs on the member.
                "ingress": {"kourier": {"enabled": True}},
                "config": {"network": {"ingress-class": "kourier.ingress.networking.knative.dev"}},
            },
        }
        async with running_operator(
            fleet.hub, tmp_path / "operator", namespace=ns, provider_file=providers
        ) as operator:
            await kube.create(hub, KNATIVE_SERVINGS, serving)
            try:

                async def resolved() -> dict[str, Any] | None:
                    if (
                        not operator.running
                    ):  # e.g. port 8080 taken (tests/support/consumers/knative.py)
                        raise RuntimeError(f"the operator exited:\n{operator.log_tail(20)}")
                    ks = await kube.get(hub, KNATIVE_SERVINGS, "knative-serving", namespace=ns)
                    cond = condition(ks, "TargetClusterResolved")
                    return ks if cond and cond["status"] == "True" else None

                await eventually(resolved, timeout=120, what="TargetClusterResolved=True")

                async def installed() -> set[str] | None:
                    names = await _deployments(remote, ns)
                    has_crd = await _has_crd(remote, SERVING_CRD)
                    return names if has_crd and {"controller", "webhook"} <= names else None

                on_member = await eventually(
                    installed, timeout=180, what=f"Serving on the member ({operator.log_path})"
                )
                # Applied on the member, not on the hub the operator runs against.
                assert not await _has_crd(hub, SERVING_CRD)
                assert not (await _deployments(hub, ns)) & on_member
                anchor = await kube.list_objects(
                    remote, kube.CONFIG_MAPS, ns, label_selector="operator.knative.dev/cr-name"
                )
                assert anchor["items"], "no anchor ConfigMap on the member"

                async def reported() -> dict[str, Any] | None:
                    ks = await kube.get(hub, KNATIVE_SERVINGS, "knative-serving", namespace=ns)
                    cond = condition(ks, "DeploymentsAvailable")
                    return ks if cond and cond["status"] == "False" else None

                ks = await eventually(reported, timeout=120, what="DeploymentsAvailable=False")
                conditions = {c["type"]: c for c in ks["status"]["conditions"]}
                print(json.dumps({"deployments": sorted(on_member), **conditions}, indent=1))
                assert conditions["TargetClusterResolved"]["status"] == "True"
                # No kubelet on the member: Serving's webhook never runs, so the operator
                # waits for it (and holds back what needs it, its Certificates) and the
                # install is neither succeeded nor failed.
                waiting = conditions["DeploymentsAvailable"]
                assert (waiting["reason"], waiting["message"]) == (
                    "NotReady",
                    "Waiting on deployments: webhook",
                )
                # Unknown; or False for a moment when one of its CRD updates met a conflict
                # (the apiserver's own status write), which it retries.
                installed = conditions["InstallSucceeded"]
                assert installed["status"] == "Unknown" or (
                    installed["status"] == "False"
                    and "the object has been modified" in installed.get("message", "")
                ), installed
                assert conditions["Ready"]["status"] == "False"
                assert [Path(p).name for p in ks["status"]["manifests"]] == ["1.22.1", "kourier"]
            finally:
                await delete_serving(hub, ns)

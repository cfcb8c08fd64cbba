"""The Knative Operator installs Serving on a member it reaches only through the cluster proxy.

The member runs in a network namespace of its own (with kube-controller-manager: Serving
ships aggregated ClusterRoles), joined by its agent, which keeps a tunnel to the hub's
cluster proxy; our cluster manager publishes its profile with the proxy's access provider.
The operator (``knative.dev/operator``, run on the hub as in
:mod:`tests.support.consumers.knative`) is given that profile and our provider file only: it
builds its client with the upstream ``pkg/access``, which has no ``tls-server-name``, and
applies Serving's CRDs, roles and Deployments through the proxy, TLS end to end to the
member's API server. The member's admin, also only through the proxy, finds them there.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api.constants import ANNOTATION_MEMBER_ROLE
from cluster_inventory.testing import DEFAULT_CONTROLLERS, Fleet
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
from tests.support.hub.cluster_proxy import proxied_member
from tests.support.waiting import eventually

NAME = "edge-knative"


async def test_the_knative_operator_installs_serving_through_the_proxy(
    fleet: Fleet, test_namespace: str, tmp_path: Path
) -> None:
    ns = test_namespace
    account = f"consumer-{uuid.uuid4().hex[:6]}"
    crds = [await asyncio.to_thread(upstream_crd, name) for name in KNATIVE_OPERATOR_CRDS]
    async with proxied_member(
        fleet,
        ns,
        tmp_path,
        name=NAME,
        account=account,
        controllers=DEFAULT_CONTROLLERS,
        annotations={ANNOTATION_MEMBER_ROLE: "cluster-admin"},
    ) as pm:
        hub = pm.harness.hub_client
        await kube.ensure_crds(hub, crds)
        # The member's admin: the consumers' account may install Serving (cluster-admin).
        await pm.grant(ns, account, "cluster-admin")
        await pm.token_published()
        providers = provider_file(
            tmp_path / "providers.json",
            str(PLUGIN),
            ["--namespace", pm.inventory],
            {"KUBECONFIG": str(fleet.hub.kubeconfig_path)},
        )
        serving: dict[str, Any] = {
            "apiVersion": KNATIVE_SERVINGS.api_version,
            "kind": KNATIVE_SERVINGS.kind,
            "metadata": {"name": "knative-serving", "namespace": ns},
            "spec": {
                "version": "1.22",
                "clusterProfileRef": {"name": NAME, "namespace": pm.inventory},
                "ingress": {"kourier": {"enabled": True}},
                "config": {"network": {"ingress-class": "kourier.ingress.networking.knative.dev"}},
            },
        }
        async with (
            running_operator(
                fleet.hub, tmp_path / "operator", namespace=ns, provider_file=providers
            ) as operator,
            await kube.new_client(pm.admin()) as remote,
        ):
            await kube.create(hub, KNATIVE_SERVINGS, serving)
            try:
                await _installed_through_the_proxy(hub, remote, ns, operator)
                assert pm.proxy.sample("cluster_inventory_proxy_connects_total", code="200") > 0
            finally:
                await delete_serving(hub, ns)  # its finalizer deletes on the member, through us


async def _installed_through_the_proxy(
    hub: kube.ApiClient, remote: kube.ApiClient, ns: str, operator: Any
) -> None:
    """The operator resolved the profile and Serving stands on the member, not on the hub."""

    async def resolved() -> bool:
        if not operator.running:
            raise RuntimeError(f"the operator exited:\n{operator.log_tail(20)}")
        ks = await kube.get(hub, KNATIVE_SERVINGS, "knative-serving", namespace=ns)
        cond = condition(ks, "TargetClusterResolved")
        return bool(cond and cond["status"] == "True")

    await eventually(resolved, timeout=120, what="TargetClusterResolved=True")

    async def installed() -> set[str] | None:
        listed = await kube.list_objects(remote, DEPLOYMENTS, ns)
        names = {i["metadata"]["name"] for i in listed["items"]}
        try:
            await kube.get(remote, kube.CUSTOM_RESOURCE_DEFINITIONS, SERVING_CRD)
        except kube.NotFoundError:
            return None
        return names if {"controller", "webhook"} <= names else None

    await eventually(installed, timeout=180, what=f"Serving on the member ({operator.log_path})")
    try:
        await kube.get(hub, kube.CUSTOM_RESOURCE_DEFINITIONS, SERVING_CRD)
    except kube.NotFoundError:
        return
    raise AssertionError("Serving's CRD landed on the hub, not only on the member")

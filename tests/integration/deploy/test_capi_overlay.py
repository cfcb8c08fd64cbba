"""deploy/capi/: the manager beside a Cluster API management cluster.

Rendered with the pinned kubectl's kustomize and dry-run on the real hub (which carries
Cluster API's real Cluster CRD from its Go module), like the base tree.
"""

from __future__ import annotations

import asyncio

from cluster_inventory import kube
from cluster_inventory.testing import ControlPlane
from cluster_inventory_workshop import upstream_crd
from tests.support.hub.manifests import (
    APP_LABEL,
    DEPLOY,
    MANAGER,
    NAMESPACE,
    dry_run_applied,
    ensure_namespace,
    expand,
    render,
    server_dry_run,
    the,
)

OVERLAY = DEPLOY / "capi"
CAPI_ROLE = "cluster-inventory-manager-cluster-api"


def test_overlay_adds_only_reading_clusters_and_the_sources() -> None:
    objects = render(OVERLAY)
    base = render()
    added = {(o["kind"], o["metadata"]["name"]) for o in objects} - {
        (o["kind"], o["metadata"]["name"]) for o in base
    }
    assert added == {("ClusterRole", CAPI_ROLE), ("ClusterRoleBinding", CAPI_ROLE)}
    grants = expand(the(objects, "ClusterRole", CAPI_ROLE)["rules"])
    assert {(g, r, v) for g, r, v, _ in grants} == {
        ("cluster.x-k8s.io", "clusters", verb) for verb in ("get", "list", "watch")
    }
    binding = the(objects, "ClusterRoleBinding", CAPI_ROLE)
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": MANAGER, "namespace": NAMESPACE}
    ]
    assert binding["metadata"]["labels"][APP_LABEL[0]] == APP_LABEL[1]
    args = the(objects, "Deployment", MANAGER)["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[-2:] == ["--source=secrets", "--source=capi"]


async def _install_cluster_crd(hub: ControlPlane) -> None:
    async with await hub.client() as client:
        await kube.ensure_crds(client, [upstream_crd("clusters.cluster.x-k8s.io")])


def test_overlay_server_side_dry_run(hub: ControlPlane) -> None:
    objects = render(OVERLAY)
    asyncio.run(_install_cluster_crd(hub))
    asyncio.run(ensure_namespace(hub, the(objects, "Namespace", NAMESPACE)))
    result = server_dry_run(hub, OVERLAY)
    assert dry_run_applied("ClusterRole", CAPI_ROLE) in result.stdout.splitlines()

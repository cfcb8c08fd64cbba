"""deploy/integrations/{argocd,multikueue}: rendering, least-privilege RBAC, a server dry run.

Both trees are generated from the Helm chart (``make manifests``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cluster_inventory.testing import ControlPlane
from tests.support.hub.manifests import (
    DEPLOY,
    IMAGE,
    READ_VERBS,
    dry_run_applied,
    ensure_namespace,
    expand,
    render,
    server_dry_run,
    the,
)

#: name -> (namespace, Deployment command, ClusterRole grants, namespaced Role grants)
TREES: dict[str, tuple[str, list[str], set[tuple[str, str, str, str | None]], set[Any]]] = {
    "argocd": (
        "argocd",
        ["cluster-inventory", "argocd", "sync"],
        {
            *(("multicluster.x-k8s.io", "clusterprofiles", v, None) for v in READ_VERBS),
            ("events.k8s.io", "events", "create", None),
        },
        {
            *(("", "secrets", v, None) for v in (*READ_VERBS, "create", "patch", "delete")),
            ("coordination.k8s.io", "leases", "create", None),
            ("coordination.k8s.io", "leases", "get", "cluster-inventory-argocd"),
            ("coordination.k8s.io", "leases", "update", "cluster-inventory-argocd"),
        },
    ),
    "multikueue": (
        "kueue-system",
        ["cluster-inventory", "multikueue", "sync"],
        {
            *(
                ("kueue.x-k8s.io", "multikueueclusters", v, None)
                for v in (*READ_VERBS, "create", "patch", "delete")
            ),
            *(
                ("kueue.x-k8s.io", "multikueueconfigs", v, None)
                for v in ("get", "create", "patch", "delete")
            ),
        },
        {
            *(("multicluster.x-k8s.io", "clusterprofiles", v, None) for v in READ_VERBS),
            ("events.k8s.io", "events", "create", None),
            ("coordination.k8s.io", "leases", "create", None),
            ("coordination.k8s.io", "leases", "get", "cluster-inventory-multikueue"),
            ("coordination.k8s.io", "leases", "update", "cluster-inventory-multikueue"),
        },
    ),
}


@pytest.mark.parametrize("tree", sorted(TREES))
def test_rbac_grants_exactly_what_the_sync_needs_and_nothing_on_profiles_but_reads(
    tree: str,
) -> None:
    namespace, _, cluster_grants, role_grants = TREES[tree]
    name = f"cluster-inventory-{tree}"
    objects = render(DEPLOY / "integrations" / tree)
    found = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects}
    expected = {
        ("ServiceAccount", namespace, name),
        ("ClusterRole", None, name),
        ("ClusterRoleBinding", None, name),
        ("Role", namespace, name),
        ("RoleBinding", namespace, name),
        ("Deployment", namespace, name),
        ("PodDisruptionBudget", namespace, name),
    }
    if tree == "argocd":
        expected.add(("ConfigMap", namespace, "cluster-inventory-argocd-providers"))
    assert found == expected
    cluster_role = the(objects, "ClusterRole", name)
    role = the(objects, "Role", name)
    for rule in [*cluster_role["rules"], *role["rules"]]:
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[field], f"wildcard in {field}: {rule}"
    assert expand(cluster_role["rules"]) == cluster_grants
    assert expand(role["rules"]) == role_grants
    subject = [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]
    assert the(objects, "ClusterRoleBinding", name)["subjects"] == subject
    assert the(objects, "RoleBinding", name)["subjects"] == subject
    # never a write on the producer's objects
    every = expand(cluster_role["rules"]) | expand(role["rules"])
    assert not {v for g, r, v, _ in every if r.startswith("clusterprofiles")} - READ_VERBS

    pod = the(objects, "Deployment", name)["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == name
    (container,) = pod["containers"]
    assert container["image"] == IMAGE
    assert container["command"] == TREES[tree][1]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True


@pytest.mark.parametrize("tree", sorted(TREES))
def test_server_side_dry_run_succeeds_on_the_hub(hub: ControlPlane, tree: str) -> None:
    namespace = TREES[tree][0]
    asyncio.run(ensure_namespace(hub, {"metadata": {"name": namespace}}))
    result = server_dry_run(hub, DEPLOY / "integrations" / tree)
    name = f"cluster-inventory-{tree}"
    for kind in ("ServiceAccount", "ClusterRole", "Role", "Deployment"):
        assert dry_run_applied(kind, name) in result.stdout, result.stdout

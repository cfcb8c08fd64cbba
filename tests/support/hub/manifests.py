"""The kustomize trees in deploy/ as the pinned kubectl renders and applies them to a hub.

deploy/ is generated from the Helm chart (``make manifests``). Rendering and applying use the
``kubectl`` of the test assets (its built-in kustomize), so the manifests are checked with
the same client version as the control planes. The deploy tests (``tests/integration/deploy/``)
share what is here: the tree's names, the RBAC flattening their least-privilege checks
compare, and a server-side dry run on the real hub.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from cluster_inventory import kube
from cluster_inventory.testing import ControlPlane
from tests.support import REPO
from tests.support.processes.binaries import kubectl

DEPLOY = REPO / "deploy"
NAMESPACE = "cluster-inventory-system"
MANAGER = "cluster-inventory-manager"
APP_LABEL = ("app.kubernetes.io/name", "cluster-inventory")
IMAGE = "ghcr.io/cluster-inventory/cluster-inventory:0.1.0"

WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection"}
READ_VERBS = {"get", "list", "watch"}
#: The kinds that make an identity and its grants (what a test applies for real).
IDENTITY_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")

#: kind -> how ``kubectl apply`` names its resource in its output.
APPLY_PREFIX = {
    "CustomResourceDefinition": "customresourcedefinition.apiextensions.k8s.io",
    "Namespace": "namespace",
    "ServiceAccount": "serviceaccount",
    "ClusterRole": "clusterrole.rbac.authorization.k8s.io",
    "ClusterRoleBinding": "clusterrolebinding.rbac.authorization.k8s.io",
    "Role": "role.rbac.authorization.k8s.io",
    "RoleBinding": "rolebinding.rbac.authorization.k8s.io",
    "Deployment": "deployment.apps",
    "PodDisruptionBudget": "poddisruptionbudget.policy",
    "ConfigMap": "configmap",
    "FlowSchema": "flowschema.flowcontrol.apiserver.k8s.io",
    "PriorityLevelConfiguration": "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io",
    "ValidatingAdmissionPolicy": "validatingadmissionpolicy.admissionregistration.k8s.io",
    "ValidatingAdmissionPolicyBinding": (
        "validatingadmissionpolicybinding.admissionregistration.k8s.io"
    ),
}


def render(tree: Path = DEPLOY) -> list[dict[str, Any]]:
    """The objects ``kubectl kustomize tree`` renders."""
    result = kubectl("kustomize", str(tree))
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def the(objects: Iterable[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    """The one object of ``kind`` named ``name`` (fails unless there is exactly one)."""
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


def of_kind(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The objects of ``kind``, in their order."""
    return [o for o in objs if o["kind"] == kind]


def expand(rules: list[dict[str, Any]]) -> set[tuple[str, str, str, str | None]]:
    """Flatten RBAC rules into (apiGroup, resource, verb, resourceName or None) tuples."""
    grants = set()
    for rule in rules:
        assert not rule.get("nonResourceURLs"), rule
        names = rule.get("resourceNames") or [None]
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    for name in names:
                        grants.add((group, resource, verb, name))
    return grants


async def ensure_namespace(hub: ControlPlane, namespace: dict[str, Any]) -> None:
    """Create ``namespace`` (a Namespace object) for real if absent; it is left in place."""
    async with await hub.client() as client:
        try:
            await kube.get(client, kube.NAMESPACES, namespace["metadata"]["name"])
        except kube.NotFoundError:
            try:
                await kube.create(client, kube.NAMESPACES, namespace)
            except kube.AlreadyExistsError:
                pass


def server_dry_run(hub: ControlPlane, tree: Path) -> subprocess.CompletedProcess[str]:
    """``kubectl apply --server-side --dry-run=server`` of kustomize ``tree`` on ``hub``.

    Strict: ``--validate=strict --warnings-as-errors``. Fails the test, showing both
    streams, when kubectl fails; else what it printed (a line per object,
    :func:`dry_run_applied`).
    A server dry run of namespaced objects needs their namespace to exist
    (:func:`ensure_namespace`).
    """
    result = kubectl(
        "apply",
        "--server-side",
        "--dry-run=server",
        "--validate=strict",
        "--warnings-as-errors",
        "-k",
        str(tree),
        "--kubeconfig",
        str(hub.kubeconfig_path),
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result


def dry_run_applied(kind: str, name: str) -> str:
    """The line :func:`server_dry_run` prints for object ``name`` of ``kind``."""
    return f"{APPLY_PREFIX[kind]}/{name} serverside-applied (server dry run)"

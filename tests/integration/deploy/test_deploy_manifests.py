"""The kustomize tree in deploy/: CRD copies, rendering, least-privilege RBAC, a server dry run.

deploy/ is generated from the Helm chart (``make manifests``; test_chart.py checks it is
current), so these checks hold for the chart's objects as well. Rendering and applying use
the pinned ``kubectl`` of the test assets (its built-in kustomize), so the manifests are
checked with the same client version as the control planes.
"""

from __future__ import annotations

import asyncio
from importlib.resources import files
from typing import Any

import pytest
import yaml

from cluster_inventory import api, kube
from cluster_inventory.testing import ControlPlane
from tests.support.hub.manifests import (
    APP_LABEL,
    DEPLOY,
    IMAGE,
    MANAGER,
    NAMESPACE,
    READ_VERBS,
    WRITE_VERBS,
    dry_run_applied,
    ensure_namespace,
    expand,
    render,
    server_dry_run,
    the,
)

LEADER_ELECTION = "cluster-inventory-manager-leader-election"

#: Every (apiGroup, resource, verb) the manager may use cluster-wide, and nothing else.
CLUSTER_GRANTS = {
    *(
        (api.GROUP, "clusterprofiles", verb)
        for verb in (*READ_VERBS, "create", "update", "patch", "delete")
    ),
    *((api.GROUP, "clusterprofiles/status", verb) for verb in ("get", "update", "patch")),
    *(("", "namespaces", verb) for verb in READ_VERBS),
    *(("", "secrets", verb) for verb in (*READ_VERBS, "create", "update", "patch", "delete")),
    *((group, "events", verb) for group in ("", "events.k8s.io") for verb in ("create", "patch")),
}

#: (apiGroup, resource, verb, resourceName or None) granted in cluster-inventory-system only.
LEASE_GRANTS = {
    ("coordination.k8s.io", "leases", "create", None),
    ("coordination.k8s.io", "leases", "get", MANAGER),
    ("coordination.k8s.io", "leases", "update", MANAGER),
}

#: The CSR approver's grants (docs/agent.md): read and delete CSRs, approve for one signer only.
AGENT_APPROVER = f"{MANAGER}-agents"
AGENT_APPROVER_GRANTS = {
    *(("certificates.k8s.io", "certificatesigningrequests", verb, None) for verb in READ_VERBS),
    ("certificates.k8s.io", "certificatesigningrequests", "delete", None),
    ("certificates.k8s.io", "certificatesigningrequests/approval", "update", None),
    ("certificates.k8s.io", "signers", "approve", "kubernetes.io/kube-apiserver-client"),
}
#: What accepted agents report, read in the manager's namespace only (docs/agent.md).
AGENT_REPORTS = f"{MANAGER}-agent-reports"
AGENT_REPORTS_GRANTS = {
    *(("cluster-inventory.dev", "memberreports", verb, None) for verb in READ_VERBS),
    *(("coordination.k8s.io", "leases", verb, None) for verb in READ_VERBS),
}
#: Groups every agent, or every bootstrap credential, is in: nothing may be bound to them
#: (a right there outlives a rejection; `manager accept` grants each acceptance its own).
AGENT_WIDE_GROUPS = {"cluster-inventory:agents", "cluster-inventory:agent-bootstrappers"}

#: Who may bind a namespace to a cluster set (docs/manager.md): the policy and a binder role.
BIND_POLICY = "cluster-inventory-clusterset-bind"
BINDER_ROLE = "cluster-inventory-clusterset-binder"


def package_crd_files() -> dict[str, bytes]:
    folder = files("cluster_inventory.api").joinpath("crds")
    return {f.name: f.read_bytes() for f in folder.iterdir() if f.name.endswith(".yaml")}


def expected_objects() -> set[tuple[str, str | None, str]]:
    crds = {("CustomResourceDefinition", None, c["metadata"]["name"]) for c in api.load_crds()}
    return crds | {
        ("Namespace", None, NAMESPACE),
        ("ServiceAccount", NAMESPACE, MANAGER),
        ("ClusterRole", None, MANAGER),
        ("ClusterRoleBinding", None, MANAGER),
        ("Role", NAMESPACE, LEADER_ELECTION),
        ("RoleBinding", NAMESPACE, LEADER_ELECTION),
        ("Deployment", NAMESPACE, MANAGER),
        ("PodDisruptionBudget", NAMESPACE, MANAGER),
        ("ClusterRole", None, AGENT_APPROVER),
        ("ClusterRoleBinding", None, AGENT_APPROVER),
        ("Role", NAMESPACE, AGENT_REPORTS),
        ("RoleBinding", NAMESPACE, AGENT_REPORTS),
        # API Priority and Fairness for the agents' group (docs/scale.md, "Agent members").
        ("PriorityLevelConfiguration", None, "cluster-inventory-agents"),
        ("FlowSchema", None, "cluster-inventory-agents"),
        ("ValidatingAdmissionPolicy", None, BIND_POLICY),
        ("ValidatingAdmissionPolicyBinding", None, BIND_POLICY),
        ("ClusterRole", None, BINDER_ROLE),
    }


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return render()


# -- (a) the CRD copies -----------------------------------------------------------------------


def test_crd_copies_are_byte_identical_to_the_package_crds() -> None:
    package = package_crd_files()
    assert len(package) == 5, sorted(package)
    copies = {
        p.name: p.read_bytes()
        for p in (DEPLOY / "crds").glob("*.yaml")
        if p.name != "kustomization.yaml"
    }
    assert sorted(copies) == sorted(package)
    stale = [name for name in package if copies[name] != package[name]]
    assert not stale, (
        f"deploy/crds/ differs from src/cluster_inventory/api/crds/ for {stale}; "
        "run: make manifests"
    )


def test_crds_kustomization_lists_every_crd_file() -> None:
    kustomization = yaml.safe_load((DEPLOY / "crds" / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(package_crd_files())


# -- (b) rendering ----------------------------------------------------------------------------


def test_kustomize_renders_exactly_the_expected_objects(rendered: list[dict[str, Any]]) -> None:
    found = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in rendered]
    assert len(found) == len(set(found)), f"duplicates in {found}"
    assert set(found) == expected_objects()


def test_every_object_carries_the_app_label(rendered: list[dict[str, Any]]) -> None:
    key, value = APP_LABEL
    unlabelled = [
        o["metadata"]["name"]
        for o in rendered
        if (o["metadata"].get("labels") or {}).get(key) != value
    ]
    assert not unlabelled


def test_rendered_crds_are_the_package_crds_plus_the_label(
    rendered: list[dict[str, Any]],
) -> None:
    for crd in api.load_crds():
        out = the(rendered, "CustomResourceDefinition", crd["metadata"]["name"])
        labels = dict(out["metadata"].pop("labels"))
        assert labels.pop(APP_LABEL[0]) == APP_LABEL[1]
        assert labels == (crd["metadata"].get("labels") or {})
        assert out == crd


def test_deployment_runs_the_hardened_manager(rendered: list[dict[str, Any]]) -> None:
    deployment = the(rendered, "Deployment", MANAGER)
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    # includeSelectors: false leaves the selector as written; it must still match the pods.
    selector = spec["selector"]["matchLabels"]
    pod_labels = spec["template"]["metadata"]["labels"]
    assert selector.items() <= pod_labels.items()
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == MANAGER
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    assert container["image"] == IMAGE
    assert container["command"] == ["cluster-inventory", "manager", "run"]
    assert container["args"] == [
        f"--namespace={NAMESPACE}",
        "--metrics-bind-address=:8080",
        "--health-probe-bind-address=:8081",
    ]
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}
    assert env == {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"}
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 8080, "health": 8081}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    security = container["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    for kind in ("requests", "limits"):
        assert set(container["resources"][kind]) == {"cpu", "memory"}, kind


# -- (c) a server-side dry run against the hub ------------------------------------------------


async def _namespace_phase(hub: ControlPlane) -> str:
    async with await hub.client() as client:
        found = await kube.get(client, kube.NAMESPACES, NAMESPACE)
    return str(found["status"]["phase"])


def test_server_side_dry_run_succeeds_on_the_hub(
    hub: ControlPlane, rendered: list[dict[str, Any]]
) -> None:
    # A server dry run of namespaced objects needs their namespace to exist.
    asyncio.run(ensure_namespace(hub, the(rendered, "Namespace", NAMESPACE)))
    assert asyncio.run(_namespace_phase(hub)) == "Active"
    result = server_dry_run(hub, DEPLOY)
    lines = set(result.stdout.splitlines())
    expected = {dry_run_applied(kind, name) for kind, _, name in expected_objects()}
    assert expected <= lines, f"missing {sorted(expected - lines)} in:\n{result.stdout}"


# -- (d) least privilege ----------------------------------------------------------------------


def test_cluster_role_grants_exactly_what_the_manager_needs(
    rendered: list[dict[str, Any]],
) -> None:
    rules = the(rendered, "ClusterRole", MANAGER)["rules"]
    for rule in rules:
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[field], f"wildcard in {field}: {rule}"
        assert not rule.get("resourceNames"), rule
    grants = expand(rules)
    assert {(g, r, v) for g, r, v, _ in grants} == CLUSTER_GRANTS


def test_secrets_are_the_only_core_resource_written_besides_events(
    rendered: list[dict[str, Any]],
) -> None:
    grants = expand(the(rendered, "ClusterRole", MANAGER)["rules"])
    written = {r for g, r, v, _ in grants if g == "" and v in WRITE_VERBS}
    assert written == {"secrets", "events"}
    assert not {v for g, r, v, _ in grants if g == "" and r == "namespaces"} - READ_VERBS


def test_leases_are_granted_only_in_the_manager_namespace(
    rendered: list[dict[str, Any]],
) -> None:
    role = the(rendered, "Role", LEADER_ELECTION)
    assert role["metadata"]["namespace"] == NAMESPACE
    assert expand(role["rules"]) == LEASE_GRANTS
    cluster_grants = expand(the(rendered, "ClusterRole", MANAGER)["rules"])
    assert not {g for g, _, _, _ in cluster_grants} & {"coordination.k8s.io"}


def test_bindings_give_the_roles_to_the_manager_service_account_only(
    rendered: list[dict[str, Any]],
) -> None:
    subject = {"kind": "ServiceAccount", "name": MANAGER, "namespace": NAMESPACE}
    cluster_binding = the(rendered, "ClusterRoleBinding", MANAGER)
    assert cluster_binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": MANAGER,
    }
    assert cluster_binding["subjects"] == [subject]
    binding = the(rendered, "RoleBinding", LEADER_ELECTION)
    assert binding["metadata"]["namespace"] == NAMESPACE
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": LEADER_ELECTION,
    }
    assert binding["subjects"] == [subject]


def test_the_approver_reads_and_deletes_csrs_and_approves_for_one_signer_and_no_agent_is_bound(
    rendered: list[dict[str, Any]],
) -> None:
    approver = the(rendered, "ClusterRole", AGENT_APPROVER)
    assert expand(approver["rules"]) == AGENT_APPROVER_GRANTS
    reports = the(rendered, "Role", AGENT_REPORTS)
    assert reports["metadata"]["namespace"] == NAMESPACE
    assert expand(reports["rules"]) == AGENT_REPORTS_GRANTS
    binding = the(rendered, "ClusterRoleBinding", AGENT_APPROVER)
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": MANAGER, "namespace": NAMESPACE}
    ]
    bound = {
        s["name"]
        for o in rendered
        if o["kind"] in ("ClusterRoleBinding", "RoleBinding")
        for s in o.get("subjects") or ()
    }
    assert not bound & AGENT_WIDE_GROUPS


def test_binding_a_cluster_set_needs_the_virtual_bind_and_the_binder_role_grants_it(
    rendered: list[dict[str, Any]],
) -> None:
    from cluster_inventory.api import constants as c

    policy = the(rendered, "ValidatingAdmissionPolicy", BIND_POLICY)
    spec = policy["spec"]
    assert spec["failurePolicy"] == "Fail"
    (rule,) = spec["matchConstraints"]["resourceRules"]
    assert rule["operations"] == ["CREATE", "UPDATE"]
    assert set(rule["resources"]) == {"namespaces", "namespaces/status", "namespaces/finalize"}
    variables = " ".join(v["expression"] for v in spec["variables"])
    assert c.LABEL_CLUSTER_SET in variables and c.ANNOTATION_MEMBER_ROLE in variables
    (validation,) = spec["validations"]
    check = validation["expression"]
    for call in (
        f"authorizer.group('{c.PROJECT_DOMAIN}')",
        f".resource('{c.CLUSTERSET_RESOURCE}')",
        f".subresource('{c.CLUSTERSET_BIND_SUBRESOURCE}')",
        ".name(variables.set)",
        f".check('{c.CLUSTERSET_BIND_VERB}').allowed()",
    ):
        assert call in check, check
    assert validation["reason"] == "Forbidden"
    binding = the(rendered, "ValidatingAdmissionPolicyBinding", BIND_POLICY)
    assert binding["spec"] == {"policyName": BIND_POLICY, "validationActions": ["Deny"]}
    binder = the(rendered, "ClusterRole", BINDER_ROLE)
    assert expand(binder["rules"]) == {
        (
            c.PROJECT_DOMAIN,
            f"{c.CLUSTERSET_RESOURCE}/{c.CLUSTERSET_BIND_SUBRESOURCE}",
            "create",
            None,
        )
    }
    assert binder["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] == "true"
    # Nothing binds it: who may bind is the hub admin's choice.
    assert not [
        b
        for b in rendered
        if b["kind"].endswith("Binding") and b.get("roleRef", {}).get("name") == BINDER_ROLE
    ]

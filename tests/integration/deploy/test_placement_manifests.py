"""deploy/placement/: the scheduler's kustomize tree, its least-privilege RBAC, a dry run, a run.

Rendering, the hardened Deployment, the exact grants and a server-side dry run are checked
as for the manager's tree (test_deploy_manifests.py). Then the ServiceAccount and RBAC are
applied for real and ``cluster-inventory placement run`` -- the Deployment's own command
line -- runs with that ServiceAccount's token: it must win its Lease, serve its probes and
metrics, and publish a decision, so the grants are shown to be enough, not only small.
"""

from __future__ import annotations

import asyncio
import base64
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import typer
import yaml

from cluster_inventory import api, kube
from cluster_inventory.cli.placement import placement_app
from cluster_inventory.integrations.placement import SCHEDULER_NAME
from cluster_inventory.testing import ControlPlane, Fleet, free_port
from tests.support.hub.manifests import (
    APP_LABEL,
    DEPLOY,
    IMAGE,
    NAMESPACE,
    READ_VERBS,
    dry_run_applied,
    ensure_namespace,
    expand,
    render,
    server_dry_run,
    the,
)
from tests.support.hub.placements import placement, profile
from tests.support.processes.binaries import kubectl
from tests.support.waiting import eventually

TREE = DEPLOY / "placement"
SCHEDULER = "cluster-inventory-placement"
LEADER_ELECTION = "cluster-inventory-placement-leader-election"

#: Every (apiGroup, resource, verb) the scheduler may use cluster-wide, and nothing else.
CLUSTER_GRANTS = {
    ("cluster-inventory.dev", "placements", "list"),
    ("cluster-inventory.dev", "placements", "watch"),
    ("cluster-inventory.dev", "placements/status", "patch"),
    (api.GROUP, "clusterprofiles", "list"),
    (api.GROUP, "clusterprofiles", "watch"),
    *((api.GROUP, "placementdecisions", v) for v in ("list", "watch", "create", "patch", "delete")),
}

#: (apiGroup, resource, verb, resourceName or None) granted in cluster-inventory-system only.
LEASE_GRANTS = {
    ("coordination.k8s.io", "leases", "create", None),
    ("coordination.k8s.io", "leases", "get", SCHEDULER),
    ("coordination.k8s.io", "leases", "update", SCHEDULER),
}


def expected_objects() -> set[tuple[str, str | None, str]]:
    crds = {("CustomResourceDefinition", None, c["metadata"]["name"]) for c in api.load_crds()}
    return crds | {
        ("Namespace", None, NAMESPACE),
        ("ServiceAccount", NAMESPACE, SCHEDULER),
        ("ClusterRole", None, SCHEDULER),
        ("ClusterRoleBinding", None, SCHEDULER),
        ("Role", NAMESPACE, LEADER_ELECTION),
        ("RoleBinding", NAMESPACE, LEADER_ELECTION),
        ("Deployment", NAMESPACE, SCHEDULER),
        ("PodDisruptionBudget", NAMESPACE, SCHEDULER),
    }


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return render(TREE)


def test_the_namespace_is_the_managers_own() -> None:
    assert (TREE / "namespace.yaml").read_bytes() == (
        DEPLOY / "manager" / "namespace.yaml"
    ).read_bytes()


def test_kustomize_renders_exactly_the_expected_objects(rendered: list[dict[str, Any]]) -> None:
    found = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in rendered]
    assert len(found) == len(set(found)), f"duplicates in {found}"
    assert set(found) == expected_objects()
    key, value = APP_LABEL
    assert all((o["metadata"].get("labels") or {}).get(key) == value for o in rendered)


def test_the_deployment_runs_the_scheduler_hardened_with_args_the_cli_accepts(
    rendered: list[dict[str, Any]],
) -> None:
    spec = the(rendered, "Deployment", SCHEDULER)["spec"]
    assert spec["replicas"] == 2
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == SCHEDULER
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    assert container["image"] == IMAGE
    assert container["command"] == ["cluster-inventory", "placement", "run"]
    # the arguments are the CLI's: typer parses them into the command's parameters
    group = typer.main.get_command(placement_app)
    command = group.get_command(typer.Context(group), "run")  # type: ignore[attr-defined]
    params = command.make_context("run", list(container["args"])).params
    assert params["lease_namespace"] == NAMESPACE
    assert params["leader_elect"] is True
    assert (params["metrics_bind_address"], params["health_probe_bind_address"]) == (
        ":8080",
        ":8081",
    )
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}
    assert env["POD_NAME"] == "metadata.name"  # the Lease identity
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {
        "metrics": 8080,
        "health": 8081,
    }
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    for kind in ("requests", "limits"):
        assert set(container["resources"][kind]) == {"cpu", "memory"}, kind


def test_the_cluster_role_grants_exactly_what_the_scheduler_uses(
    rendered: list[dict[str, Any]],
) -> None:
    rules = the(rendered, "ClusterRole", SCHEDULER)["rules"]
    for rule in rules:
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[field], f"wildcard in {field}: {rule}"
        assert not rule.get("resourceNames"), rule
    grants = {(g, r, v) for g, r, v, _ in expand(rules)}
    assert grants == CLUSTER_GRANTS
    # nothing of the core group (Secrets above all), and profiles are only read
    assert not {g for g, _, _ in grants} & {"", "coordination.k8s.io"}
    assert {v for _, r, v in grants if r == "clusterprofiles"} <= READ_VERBS


def test_leases_and_bindings_are_the_schedulers_only(rendered: list[dict[str, Any]]) -> None:
    role = the(rendered, "Role", LEADER_ELECTION)
    assert role["metadata"]["namespace"] == NAMESPACE
    assert expand(role["rules"]) == LEASE_GRANTS
    subject = {"kind": "ServiceAccount", "name": SCHEDULER, "namespace": NAMESPACE}
    for kind, name, role_kind in (
        ("ClusterRoleBinding", SCHEDULER, "ClusterRole"),
        ("RoleBinding", LEADER_ELECTION, "Role"),
    ):
        binding = the(rendered, kind, name)
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": role_kind,
            "name": name,
        }
        assert binding["subjects"] == [subject]


def test_server_side_dry_run_succeeds_on_the_hub(
    hub: ControlPlane, rendered: list[dict[str, Any]]
) -> None:
    asyncio.run(ensure_namespace(hub, the(rendered, "Namespace", NAMESPACE)))
    result = server_dry_run(hub, TREE)
    lines = set(result.stdout.splitlines())
    expected = {dry_run_applied(kind, name) for kind, _, name in expected_objects()}
    assert expected <= lines, f"missing {sorted(expected - lines)} in:\n{result.stdout}"


def _token_kubeconfig(path: Path, hub: ControlPlane, token: str) -> Path:
    ca = base64.b64encode(hub.ca_pem).decode()
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "hub", "cluster": {"server": hub.server, "certificate-authority-data": ca}}
        ],
        "users": [{"name": SCHEDULER, "user": {"token": token}}],
        "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": SCHEDULER}}],
        "current-context": "hub",
    }
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)
    return path


async def test_the_scheduler_runs_with_only_these_grants(
    fleet: Fleet, test_namespace: str, rendered: list[dict[str, Any]], tmp_path: Path
) -> None:
    hub = fleet.hub
    await ensure_namespace(hub, the(rendered, "Namespace", NAMESPACE))
    identity = [
        o
        for o in rendered
        if o["kind"]
        in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
    ]
    manifest = tmp_path / "identity.yaml"
    manifest.write_text(yaml.safe_dump_all(identity))
    applied = await asyncio.to_thread(
        kubectl,
        "apply",
        "--server-side",
        "-f",
        str(manifest),
        "--kubeconfig",
        str(hub.kubeconfig_path),
    )
    assert applied.returncode == 0, applied.stderr
    ns = test_namespace
    async with await hub.client() as admin:
        token = await kube.request_service_account_token(admin, NAMESPACE, SCHEDULER)
        for name, region in (("a", "eu-west-1"), ("b", "us-east-1")):
            await profile(admin, ns, name, labels={"team": "a"}, properties={"region": region})
        await placement(
            admin,
            ns,
            "eu",
            propertySelector={
                "matchExpressions": [{"key": "region", "operator": "In", "values": ["eu-west-1"]}]
            },
        )
        kubeconfig = _token_kubeconfig(tmp_path / "scheduler.kubeconfig", hub, token.token)
        health, metrics = free_port(), free_port()
        proc = subprocess.Popen(  # noqa: ASYNC220 - a child process that outlives this call
            [
                sys.executable,
                "-m",
                "cluster_inventory.cli",
                "placement",
                "run",
                "--kubeconfig",
                str(kubeconfig),
                "-n",
                ns,
                "--lease-namespace",
                NAMESPACE,
                "--health-probe-bind-address",
                f"127.0.0.1:{health}",
                "--metrics-bind-address",
                f"127.0.0.1:{metrics}",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:

            async def decided() -> dict[str, Any] | None:
                try:
                    found = await kube.get(admin, kube.PLACEMENT_DECISIONS, "eu-0", ns)
                except kube.NotFoundError:
                    return None
                return found

            decision = await eventually(decided, timeout=60, what="eu-0 written by the SA")
            assert decision["schedulerName"] == SCHEDULER_NAME
            assert [d["clusterProfileRef"]["name"] for d in decision["decisions"]] == ["a"]

            async def status_written() -> bool:
                from cluster_inventory.integrations.placement import PLACEMENTS

                found = await kube.get(admin, PLACEMENTS, "eu", ns)
                return (found.get("status") or {}).get("numberOfSelectedClusters") == 1

            await eventually(status_written, what="the Placement's status written by the SA")
            lease = await kube.get(admin, kube.LEASES, SCHEDULER, NAMESPACE)
            assert lease["spec"]["holderIdentity"]
            async with aiohttp.ClientSession() as http:

                async def ready() -> bool:
                    async with http.get(f"http://127.0.0.1:{health}/readyz") as resp:
                        return resp.status == 200

                await eventually(ready, what="/readyz ok")
                async with http.get(f"http://127.0.0.1:{health}/healthz") as resp:
                    assert resp.status == 200
                async with http.get(f"http://127.0.0.1:{metrics}/metrics") as resp:
                    text = await resp.text()
            assert "controller_runtime_reconcile_total" in text
            assert "leader_election_master_status" in text
        finally:
            proc.send_signal(signal.SIGTERM)
            _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)
        assert proc.returncode == 0, stderr[-2000:]
        assert "forbidden" not in stderr.lower(), stderr[-2000:]
        assert token.token not in stderr

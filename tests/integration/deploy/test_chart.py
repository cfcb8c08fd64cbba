"""charts/cluster-inventory: lint, every example rendered, a server dry run, each Deployment run.

The chart is the one source of the manifests: deploy/ is ``helm template`` of it (checked
here byte for byte), so the RBAC assertions of test_deploy_manifests.py and its siblings hold
for the chart too. Here every example values file is rendered and checked for the hardening a
``restricted`` namespace demands, dry-run on the real hub, and each rendered Deployment's own
command line runs with its ServiceAccount's real token until it leads its Lease and is ready,
so the grants are shown to be enough, not only small. In ``secretAccess: namespaces`` mode the
manager's token is refused a Secret in kube-system.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from cluster_inventory import api, kube
from cluster_inventory.api.constants import AGENT_GROUP
from cluster_inventory.manager import registration_secret
from cluster_inventory.testing import ControlPlane, Fleet, free_port
from cluster_inventory_workshop import upstream_crd
from cluster_inventory_workshop.chart import (
    CHART_DIR,
    HelmError,
    deploy_files,
    helm,
    render_chart,
)
from cluster_inventory_workshop.upstream_crds import kueue_crds
from tests.support.hub.manifests import (
    APP_LABEL,
    DEPLOY,
    IDENTITY_KINDS,
    NAMESPACE,
    WRITE_VERBS,
    expand,
    of_kind,
)
from tests.support.processes.binaries import kubectl
from tests.support.waiting import eventually

EXAMPLES = sorted(p.name for p in (CHART_DIR / "examples").glob("*.yaml"))
#: Namespaces the examples install into or grant in (they must exist for a server dry run).
NAMESPACES = (NAMESPACE, "argocd", "kueue-system", "team-a", "team-b")
#: The rule files the chart's PrometheusRule carries, in order.
RULE_FILES = ("alerts.yaml", "availability.yaml")


def objects(example: str, *set_values: str) -> list[dict[str, Any]]:
    text = render_chart([CHART_DIR / "examples" / example], set_values=set_values)
    return [doc for doc in yaml.safe_load_all(text) if doc]


# -- the chart itself -------------------------------------------------------------------------


def test_helm_lint_passes_with_every_example() -> None:
    out = helm("lint", "--strict", str(CHART_DIR))
    assert "1 chart(s) linted, 0 chart(s) failed" in out
    for example in EXAMPLES:
        helm("lint", "--strict", str(CHART_DIR), "--values", str(CHART_DIR / "examples" / example))


def test_chart_version_is_the_package_version() -> None:
    chart = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())
    assert chart["version"] == chart["appVersion"] == version("cluster-inventory")


def test_chart_crds_are_the_package_crds() -> None:
    package = {c["metadata"]["name"]: c for c in api.load_crds()}
    shipped = {}
    for path in (CHART_DIR / "crds").glob("*.yaml"):
        crd = yaml.safe_load(path.read_text())
        shipped[crd["metadata"]["name"]] = crd
    assert shipped == package


def test_deploy_is_generated_from_the_chart() -> None:
    wanted = deploy_files()
    on_disk = {p.relative_to(DEPLOY).as_posix(): p.read_bytes() for p in DEPLOY.rglob("*.yaml")}
    stale = sorted(k for k in wanted.keys() | on_disk.keys() if wanted.get(k) != on_disk.get(k))
    assert not stale, f"deploy/ differs from the chart for {stale}; run: make manifests"


def test_schema_rejects_unknown_keys_and_bad_values() -> None:
    for bad in (
        "manager.secretAccess=everywhere",
        "manager.replicas=-1",
        "manager.unknownKey=1",
        "logFormat=xml",
    ):
        with pytest.raises(HelmError, match="values don't meet the specifications"):
            render_chart(set_values=[bad])


def test_two_releases_on_one_hub_own_distinct_objects() -> None:
    """Names derive from the release (a fullname helper), so releases do not collide."""

    def keys(release: str) -> set[tuple[str, str, str]]:
        text = render_chart([CHART_DIR / "examples" / "all.yaml"], release=release)
        return {
            (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
            for o in yaml.safe_load_all(text)
            if o and o["kind"] != "Namespace"
        }

    blue, green = keys("blue"), keys("green")
    assert blue and not blue & green, sorted(blue & green)
    assert ("Deployment", "cluster-inventory-system", "blue-cluster-inventory-manager") in blue
    # The default release keeps the names deploy/ is rendered with.
    default = keys("cluster-inventory")
    assert ("Deployment", "cluster-inventory-system", "cluster-inventory-manager") in default
    # Leases stay the code's: a release's Role grants the Lease its component elects on.
    manager = of_kind(objects("all.yaml"), "Role")
    assert any(
        "cluster-inventory-manager" in rule.get("resourceNames", ())
        for role in manager
        for rule in role["rules"]
    )


def test_scoped_secrets_mode_needs_inventories() -> None:
    with pytest.raises(HelmError, match=r"needs manager\.inventoryNamespaces"):
        render_chart(set_values=["manager.secretAccess=namespaces"])


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_renders_hardened_least_privilege_objects(example: str) -> None:
    objs = objects(example)
    key, value = APP_LABEL
    assert all(o["metadata"]["labels"].get(key) == value for o in objs)
    for role in of_kind(objs, "ClusterRole") + of_kind(objs, "Role"):
        for rule in role["rules"]:
            for field in ("apiGroups", "resources", "verbs", "nonResourceURLs"):
                assert "*" not in rule.get(field, ()), (
                    f"wildcard in {role['metadata']['name']}: {rule}"
                )
    deployments = of_kind(objs, "Deployment")
    assert deployments
    budgets = {
        (p["metadata"]["namespace"], p["metadata"]["name"])
        for p in of_kind(objs, "PodDisruptionBudget")
    }
    accounts = {
        (a["metadata"]["namespace"], a["metadata"]["name"]) for a in of_kind(objs, "ServiceAccount")
    }
    for deployment in deployments:
        meta, spec = deployment["metadata"], deployment["spec"]
        where = (meta["namespace"], meta["name"])
        assert where in accounts, where
        # One pod at a time (the member agent) needs no budget; every other component has one.
        single = spec.get("strategy") == {"type": "Recreate"} and spec["replicas"] == 1
        assert single or where in budgets, where
        assert (
            spec["selector"]["matchLabels"].items()
            <= spec["template"]["metadata"]["labels"].items()
        )
        pod = spec["template"]["spec"]
        assert pod["serviceAccountName"] == meta["name"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        (container,) = pod["containers"]
        assert container["command"][0] == "cluster-inventory"
        security = container["securityContext"]
        assert security["runAsNonRoot"] is True
        assert security["readOnlyRootFilesystem"] is True
        assert security["allowPrivilegeEscalation"] is False
        assert security["capabilities"] == {"drop": ["ALL"]}
        assert security["seccompProfile"] == {"type": "RuntimeDefault"}
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
        for kind in ("requests", "limits"):
            assert set(container["resources"][kind]) == {"cpu", "memory"}, kind
        assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]


def test_agents_get_a_priority_level_of_their_own() -> None:
    objs = objects("manager.yaml")
    (schema,) = of_kind(objs, "FlowSchema")
    (level,) = of_kind(objs, "PriorityLevelConfiguration")
    spec = schema["spec"]
    assert spec["priorityLevelConfiguration"]["name"] == level["metadata"]["name"]
    assert spec["rules"][0]["subjects"] == [{"kind": "Group", "group": {"name": AGENT_GROUP}}]
    # Matched before the service-accounts (9000) and global-default (9900) schemas.
    assert spec["matchingPrecedence"] < 9000
    assert spec["distinguisherMethod"] == {"type": "ByUser"}
    assert level["spec"]["limited"]["limitResponse"]["type"] == "Queue"
    off = objects("manager.yaml", "manager.agentFlowControl.enabled=false")
    assert not of_kind(off, "FlowSchema") and not of_kind(off, "PriorityLevelConfiguration")


def _manager_args(*set_values: str, example: str = "manager.yaml") -> list[str]:
    objs = objects(example, *set_values)
    (deployment,) = [d for d in of_kind(objs, "Deployment") if "manager" in d["metadata"]["name"]]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return list(container["args"])


def test_agent_bounds_become_manager_flags_and_the_defaults_none() -> None:
    """``manager.agents`` (docs/agent.md, "The hub side"): a value set is a flag, none is none."""
    assert not [a for a in _manager_args() if "agent" in a]
    args = _manager_args(
        "manager.agents.heartbeatMultiple=3",
        "manager.agents.leaseDurationMin=1",
        "manager.agents.maxMessage=100",
        "manager.agents.maxPropertyValue=512",
        "manager.agents.allowLoopback=false",
        "manager.agents.allowLinkLocal=true",
    )
    assert [a for a in args if "agent" in a] == [
        "--agent-heartbeat-multiple=3",
        "--agent-lease-duration-min=1",
        "--agent-report-max-message=100",
        "--agent-report-max-property-value=512",
        "--no-agent-report-allow-loopback",
        "--agent-report-allow-link-local",
    ]
    sharded = _manager_args(example="sharded.yaml")
    assert {"--agent-lease-duration-max=600", "--agent-report-max-ca-bytes=32768"} <= set(sharded)
    with pytest.raises(HelmError, match="maxPropertyValue"):
        objects("manager.yaml", "manager.agents.maxPropertyValue=1025")


def test_member_roles_become_flags_and_the_bind_policy_can_be_left_out() -> None:
    args = _manager_args(
        "manager.memberRoles.prod={view,edit}",
        "manager.memberRoles.batch={kueue-worker}",
        "manager.defaultMemberRole=",
    )
    assert "--member-roles=prod=view,edit" in args
    assert "--member-roles=batch=kueue-worker" in args
    assert "--default-member-role=" in args
    assert of_kind(objects("manager.yaml"), "ValidatingAdmissionPolicy")
    assert not [a for a in _manager_args() if "member-role" in a]
    off = objects("manager.yaml", "manager.clusterSetBinding.enabled=false")
    for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
        assert not of_kind(off, kind)
    assert not [r for r in of_kind(off, "ClusterRole") if "clusterset" in r["metadata"]["name"]]
    with pytest.raises(HelmError, match="values don't meet the specifications"):
        render_chart(set_values=["manager.memberRoles.prod={a/b}"])


def test_scoped_secrets_grant_secrets_only_in_the_listed_namespaces() -> None:
    objs = objects("scoped-secrets.yaml")
    manager = "cluster-inventory-manager"
    cluster_role = next(o for o in of_kind(objs, "ClusterRole") if o["metadata"]["name"] == manager)
    assert not {r for _, r, _, _ in expand(cluster_role["rules"])} & {"secrets"}
    secret_roles = {
        o["metadata"]["namespace"]: {v for _, r, v, _ in expand(o["rules"]) if r == "secrets"}
        for o in of_kind(objs, "Role")
        if any("secrets" in rule["resources"] for rule in o["rules"])
    }
    assert secret_roles == {
        NAMESPACE: {"get", "list", "watch"},  # registrations are only read
        "team-a": {"get", "list", "watch", *WRITE_VERBS} - {"deletecollection"},
        "team-b": {"get", "list", "watch", *WRITE_VERBS} - {"deletecollection"},
    }
    bound = {
        (b["metadata"]["namespace"], b["roleRef"]["name"])
        for b in of_kind(objs, "RoleBinding")
        if b["subjects"] == [{"kind": "ServiceAccount", "name": manager, "namespace": NAMESPACE}]
    }
    assert {(ns, f"{manager}-tokens") for ns in ("team-a", "team-b")} <= bound
    (deployment,) = of_kind(objs, "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--inventory-namespaces-only" in args
    assert "--inventory-namespace=team-b=prod,staging" in args


def test_monitoring_objects_carry_the_checked_rules_and_dashboard() -> None:
    objs = objects(
        "all.yaml",
        "monitoring.prometheusRule.enabled=true",
        "monitoring.prometheusRule.labels.release=prometheus",
    )
    (rule,) = of_kind(objs, "PrometheusRule")
    files = [yaml.safe_load((CHART_DIR / "files" / f).read_text()) for f in RULE_FILES]
    assert rule["spec"] == {"groups": [g for f in files for g in f["groups"]]}
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    (dashboard,) = [o for o in of_kind(objs, "ConfigMap") if "dashboard" in o["metadata"]["name"]]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["cluster-inventory.json"]) == json.loads(
        (CHART_DIR / "files" / "dashboard.json").read_text()
    )
    assert not of_kind(objects("manager.yaml"), "PrometheusRule")


# -- on the hub -------------------------------------------------------------------------------


async def _ensure_namespaces(hub: ControlPlane, *names: str) -> None:
    async with await hub.client() as client:
        for name in names:
            try:
                await kube.create(client, kube.NAMESPACES, {"metadata": {"name": name}})
            except kube.AlreadyExistsError:
                pass


@pytest.mark.parametrize("example", EXAMPLES)
async def test_server_side_dry_run_of_every_example(
    hub: ControlPlane, example: str, tmp_path: Path
) -> None:
    await _ensure_namespaces(hub, *NAMESPACES)
    manifest = tmp_path / "rendered.yaml"
    manifest.write_text(render_chart([CHART_DIR / "examples" / example]))
    result = await asyncio.to_thread(
        kubectl,
        "apply",
        "--server-side",
        "--dry-run=server",
        "--validate=strict",
        "--warnings-as-errors",
        "-f",
        str(manifest),
        "--kubeconfig",
        str(hub.kubeconfig_path),
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    applied = [line for line in result.stdout.splitlines() if line.endswith("(server dry run)")]
    assert len(applied) == len(objects(example)), result.stdout


def _token_kubeconfig(path: Path, hub: ControlPlane, user: str, token: str) -> Path:
    ca = base64.b64encode(hub.ca_pem).decode()
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "hub", "cluster": {"server": hub.server, "certificate-authority-data": ca}}
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": user}}],
        "current-context": "hub",
    }
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)
    return path


def _local_args(
    container: dict[str, Any], objs: list[dict[str, Any]], tmp_path: Path, health: int, metrics: int
) -> list[str]:
    """The container's arguments with addresses on loopback and mounted files made local."""
    out = []
    for arg in container["args"]:
        if arg.startswith("--metrics-bind-address="):
            arg = f"--metrics-bind-address=127.0.0.1:{metrics}"
        elif arg.startswith("--health-probe-bind-address="):
            arg = f"--health-probe-bind-address=127.0.0.1:{health}"
        elif arg.startswith("--provider-file="):
            (config,) = [
                o for o in of_kind(objs, "ConfigMap") if "providers" in o["metadata"]["name"]
            ]
            local = tmp_path / "providers.json"
            local.write_text(config["data"]["providers.json"])
            arg = f"--provider-file={local}"
        out.append(arg)
    return out


#: The Deployments without a Lease, run by their own tests: a read-only page, the member
#: agent (it runs on a member: test_chart_agent.py), and the cluster proxy (every replica
#: serves: test_chart_proxy.py).
DASHBOARD = "cluster-inventory-dashboard"
AGENT = "cluster-inventory-agent"
PROXY = "cluster-inventory-proxy"


def _deployments() -> list[tuple[str, str]]:
    return [
        (example, d["metadata"]["name"])
        for example in EXAMPLES
        for d in of_kind(objects(example), "Deployment")
        if d["metadata"]["name"] not in (DASHBOARD, AGENT, PROXY)
    ]


@pytest.fixture(scope="module")
def upstream_crds_installed(hub: ControlPlane) -> None:
    async def install() -> None:
        crds = [upstream_crd("clusters.cluster.x-k8s.io"), *kueue_crds()]
        async with await hub.client() as client:
            await kube.ensure_crds(client, crds)

    asyncio.run(install())


async def _scoped_manager_keeps_a_member(fleet: Fleet) -> None:
    """With Secrets only in its inventories, the manager still writes profiles and tokens."""
    member = next(iter(fleet.members.values()))
    secret = registration_secret("scoped", NAMESPACE, yaml.safe_dump(member.kubeconfig()), ["prod"])
    async with await fleet.hub.client() as admin:

        async def tokens(present: bool) -> bool:
            found = []
            for ns in ("team-a", "team-b"):
                try:
                    await kube.get(admin, kube.SECRETS, "scoped", namespace=ns)
                    await kube.get(admin, kube.CLUSTER_PROFILES, "scoped", namespace=ns)
                    found.append(True)
                except kube.NotFoundError:
                    found.append(False)
            return all(found) if present else not any(found)

        await kube.apply(admin, kube.SECRETS, secret, field_manager="test")
        try:
            await eventually(lambda: tokens(True), timeout=60, what="profiles and tokens")
        finally:
            await kube.delete(admin, kube.SECRETS, "scoped", namespace=NAMESPACE)
        await eventually(lambda: tokens(False), timeout=60, what="profiles and tokens removed")


@pytest.mark.parametrize(("example", "name"), _deployments())
async def test_each_deployment_runs_with_its_service_account_token(
    fleet: Fleet, upstream_crds_installed: None, example: str, name: str, tmp_path: Path
) -> None:
    hub = fleet.hub
    objs = objects(example)
    (deployment,) = [d for d in of_kind(objs, "Deployment") if d["metadata"]["name"] == name]
    namespace = deployment["metadata"]["namespace"]
    await _ensure_namespaces(hub, *NAMESPACES)
    identity = tmp_path / "identity.yaml"
    identity.write_text(yaml.safe_dump_all([o for o in objs if o["kind"] in IDENTITY_KINDS]))
    applied = await asyncio.to_thread(
        kubectl,
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        str(identity),
        "--kubeconfig",
        str(hub.kubeconfig_path),
    )
    assert applied.returncode == 0, applied.stderr
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    async with await hub.client() as admin:
        token = await kube.request_service_account_token(
            admin, namespace, pod["serviceAccountName"]
        )
    kubeconfig = _token_kubeconfig(tmp_path / "sa.kubeconfig", hub, name, token.token)
    if "--inventory-namespaces-only" in container["args"]:
        await _secrets_outside_the_inventories_are_refused(kubeconfig)
    health, metrics = free_port(), free_port()
    assert container["command"][0] == "cluster-inventory"
    command = [
        sys.executable,
        "-m",
        "cluster_inventory.cli",
        *container["command"][1:],
        *_local_args(container, objs, tmp_path, health, metrics),
        "--kubeconfig",
        str(kubeconfig),
    ]
    env = {e["name"]: f"{name}-test" for e in container["env"] if e["name"] == "POD_NAME"}
    proc = subprocess.Popen(  # noqa: ASYNC220 - a child process that outlives this call
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env, "POD_NAMESPACE": namespace},
    )
    # A manager named other than cluster-inventory, and a sync instance named after its
    # config, elect on a Lease of their own: the one their Role must name.
    lease = name
    for arg in container["args"]:
        key, _, value = arg.partition("=")
        if key == "--config-name" or (key == "--name" and value != "cluster-inventory"):
            lease = f"{name}-{value}"
    try:
        async with aiohttp.ClientSession() as http:

            async def leading_and_ready() -> bool:
                assert proc.poll() is None, "the process exited"
                try:
                    async with http.get(f"http://127.0.0.1:{metrics}/metrics") as resp:
                        text = await resp.text()
                    # A sharded manager elects no leader: it has joined its shard group.
                    working = (
                        'cluster_inventory_shard_replicas{group="cluster-inventory"} 1.0'
                        if "--sharding" in container["args"]
                        else f'leader_election_master_status{{name="{lease}"}} 1.0'
                    )
                    if working not in text:
                        return False
                    async with http.get(f"http://127.0.0.1:{health}/readyz") as resp:
                        return resp.status == 200
                except aiohttp.ClientConnectionError:
                    return False  # not listening yet

            try:
                await eventually(leading_and_ready, timeout=60, what=f"{name} leading and ready")
            except AssertionError as exc:
                proc.kill()
                _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)
                raise AssertionError(f"{exc}\nstderr:\n{stderr[-3000:]}") from None
            async with http.get(f"http://127.0.0.1:{health}/healthz") as resp:
                assert resp.status == 200
        if example == "scoped-secrets.yaml":
            await _scoped_manager_keeps_a_member(fleet)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)
    assert proc.returncode == 0, stderr[-3000:]
    assert "forbidden" not in stderr.lower(), stderr[-3000:]
    assert token.token not in stderr


async def _secrets_outside_the_inventories_are_refused(kubeconfig: Path) -> None:
    """The manager's own token reads no Secret in kube-system and lists none cluster-wide."""
    connection = kube.connection_from_kubeconfig(kubeconfig)
    async with await kube.new_client(connection) as client:

        async def refused() -> bool:
            try:
                await kube.list_objects(client, kube.SECRETS, "kube-system")
            except kube.ForbiddenError:
                pass
            else:
                return False
            try:
                await kube.list_objects(client, kube.SECRETS, None)
            except kube.ForbiddenError:
                return True
            return False

        # RBAC changes reach the authorizer through its informers: wait for the applied roles.
        await eventually(refused, what="Secrets outside the inventories refused")
        await eventually(
            lambda: kube.list_objects(client, kube.SECRETS, "team-a"), what="team-a's Secrets"
        )


async def test_the_dashboard_reads_with_its_service_account_token_and_writes_nothing(
    fleet: Fleet, upstream_crds_installed: None, test_namespace: str, tmp_path: Path
) -> None:
    """The dashboard's Deployment, with its own token: the page shows the hub's profiles and
    Argo CD's Secrets (as metadata), and the token may write nothing and read no other
    Secret."""
    hub = fleet.hub
    objs = objects("dashboard.yaml")
    (deployment,) = of_kind(objs, "Deployment")
    assert deployment["metadata"]["name"] == DASHBOARD
    namespace = deployment["metadata"]["namespace"]
    for role in of_kind(objs, "ClusterRole") + of_kind(objs, "Role"):
        for rule in role["rules"]:
            assert set(rule["verbs"]) <= {"get", "list", "watch"}, rule
            if "secrets" in rule["resources"]:
                assert role["kind"] == "Role" and role["metadata"]["namespace"] == "argocd"
    await _ensure_namespaces(hub, *NAMESPACES)
    identity = tmp_path / "identity.yaml"
    identity.write_text(yaml.safe_dump_all([o for o in objs if o["kind"] in IDENTITY_KINDS]))
    applied = await asyncio.to_thread(
        kubectl,
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        str(identity),
        "--kubeconfig",
        str(hub.kubeconfig_path),
    )
    assert applied.returncode == 0, applied.stderr
    profile = {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {"name": "shown", "namespace": test_namespace},
        "spec": {"clusterManager": {"name": "test"}},
    }
    async with await hub.client() as admin:
        await kube.apply(admin, kube.CLUSTER_PROFILES, profile, field_manager="test")
        token = await kube.request_service_account_token(admin, namespace, DASHBOARD)
    kubeconfig = _token_kubeconfig(tmp_path / "sa.kubeconfig", hub, DASHBOARD, token.token)
    async with await kube.new_client(kube.connection_from_kubeconfig(kubeconfig)) as reader:

        async def refused() -> bool:
            for attempt in (
                lambda: kube.list_objects(reader, kube.SECRETS, "kube-system"),
                lambda: kube.apply(
                    reader, kube.CLUSTER_PROFILES, profile, field_manager="dashboard"
                ),
            ):
                try:
                    await attempt()
                except kube.ForbiddenError:
                    continue
                return False
            return True

        await eventually(refused, what="no Secret outside argocd, no write")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    health, metrics, page = free_port(), free_port(), free_port()
    args = []
    for arg in _local_args(container, objs, tmp_path, health, metrics):
        if arg.startswith("--address="):
            arg = f"--address=127.0.0.1:{page}"
        args.append(arg)
    proc = subprocess.Popen(  # noqa: ASYNC220 - a child process that outlives this call
        [
            sys.executable,
            "-m",
            "cluster_inventory.cli",
            *container["command"][1:],
            *args,
            "--kubeconfig",
            str(kubeconfig),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        async with aiohttp.ClientSession() as http:

            async def shown() -> str:
                assert proc.poll() is None, "the process exited"
                try:
                    async with http.get(f"http://127.0.0.1:{health}/readyz") as resp:
                        if resp.status != 200:
                            return ""
                    async with http.get(f"http://127.0.0.1:{page}/") as resp:
                        text = await resp.text()
                except aiohttp.ClientConnectionError:
                    return ""  # not listening yet
                return text if f"{test_namespace}/shown" in text else ""

            try:
                text = await eventually(shown, timeout=60, what="the page shows the profile")
            except AssertionError as exc:
                proc.kill()
                _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)
                raise AssertionError(f"{exc}\nstderr:\n{stderr[-3000:]}") from None
            # Argo CD's Secrets were readable (as metadata), so not shown as unavailable.
            assert "Argo CD cluster Secrets (argocd)" in text
            assert "Argo CD cluster Secrets (argocd) (unavailable" not in text
            async with http.get(f"http://127.0.0.1:{metrics}/metrics") as resp:
                assert resp.status == 200
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)
    assert proc.returncode == 0, stderr[-3000:]
    assert "forbidden" not in stderr.lower(), stderr[-3000:]
    assert token.token not in stderr
